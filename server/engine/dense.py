"""Dense retrieval: the chunks whose best window is nearest the query vector, under the
query's scope.

A segment of at most `exact_dense_max_rows` windows is searched with one exact product over
its float32 copy (its graph is never loaded); a larger one with its HNSW graph, tombstoned
rows marked deleted in C++ and the scope's filter passed as hnswlib's `filter`, so filters
apply inside the search. Each segment's search runs beside the others (parallel.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

import numpy as np

from . import parallel
from .loaded import LoadedSegment, LoadedVersion
from .scope import Scope
from .settings import EngineSettings

Scored = tuple[tuple[int, int], float]  # ((segment position, chunk index), cosine)
Windows = tuple[np.ndarray, np.ndarray]  # (rows, cosines) of one segment's nearest windows


def dense_top(
    version: LoadedVersion, qvec: np.ndarray, scope: Scope, settings: EngineSettings
) -> list[Scored]:
    """Top chunks by their best window's cosine, over every segment, under the filters."""
    searches = segment_searches(version, qvec, scope, 2 * settings.retrieve_k)
    windows = parallel.run_shared(searches, settings.helpers)
    return dense_ranking(version, windows, settings.retrieve_k)


def best_cosine(
    version: LoadedVersion, qvec: np.ndarray, scope: Scope, settings: EngineSettings
) -> float:
    """The best cosine of any chunk in the scope."""
    top = dense_top(version, qvec, scope, settings)
    return top[0][1] if top else 0.0


def segment_searches(
    version: LoadedVersion, qvec: np.ndarray, scope: Scope, k: int
) -> list[Callable[[], Windows]]:
    """Per segment, its search for the `k` nearest allowed windows."""
    allowed = chunk_filters(version, scope)
    return [
        partial(_segment_knn, seg, qvec, allowed[s] if allowed else None, k)
        for s, seg in enumerate(version.segments)
    ]


def dense_ranking(version: LoadedVersion, windows: Sequence[Windows], k: int) -> list[Scored]:
    """Chunks ranked by their best window's cosine, from each segment's nearest windows."""
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # segment, chunk, cosine
    for s, (seg, (rows, sims)) in enumerate(zip(version.segments, windows, strict=True)):
        order = np.argsort(-sims, kind="stable")
        owners, sims = seg.segment.owners[rows[order]], sims[order]
        chunks, first = np.unique(owners, return_index=True)  # first = the chunk's best window
        parts.append((np.full(len(chunks), s), chunks, sims[first]))
    if not parts:
        return []
    segments, chunks, sims = (np.concatenate(column) for column in zip(*parts, strict=True))
    top = np.argsort(-sims, kind="stable")[:k]
    keys = zip(segments[top].tolist(), chunks[top].tolist(), strict=True)
    return list(zip(keys, sims[top].tolist(), strict=True))


def chunk_filters(version: LoadedVersion, scope: Scope) -> list[np.ndarray] | None:
    """Per segment, (chunks,) bool of the chunks passing the filters; None: no filter. Built
    from the page tables, so no chunk record is decoded."""
    if scope.everything:
        return None
    picked: list[list[int]] = [[] for _ in version.segments]
    for page in version.pages.values():
        if scope.admits(page):
            for ref in page.chunks:
                picked[version.positions[ref.segment]].append(ref.index)
    masks = [np.zeros(len(seg.chunks), dtype=bool) for seg in version.segments]
    for mask, indexes in zip(masks, picked, strict=True):
        mask[indexes] = True
    return masks


def _segment_knn(
    seg: LoadedSegment, qvec: np.ndarray, allowed_chunks: np.ndarray | None, k: int
) -> Windows:
    """(rows, cosines) of the nearest allowed live windows of one segment: exact for small
    segments, HNSW (dead rows marked deleted, filters as hnswlib's `filter`) otherwise."""
    allowed = seg.live_rows
    if allowed_chunks is not None:
        allowed = allowed & allowed_chunks[seg.segment.owners]
    count = seg.live_row_count if allowed_chunks is None else int(allowed.sum())
    if count == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    k = min(count, k)
    if seg.exact:
        sims = seg.vectors32() @ qvec
        sims[~allowed] = -2.0
        top = np.argpartition(-sims, k - 1)[:k] if k < len(sims) else np.arange(len(sims))
        top = top[np.argsort(-sims[top])]
        return top, sims[top]
    graph = seg.graph()
    assert graph is not None  # the segment has windows
    # A graph shared with an older version also returns the rows that died since: ask for
    # as many more and drop them (a filter, built from the live rows, drops them itself).
    stale = 0 if allowed_chunks is not None else seg.stale_rows
    keep = None if allowed_chunks is None else allowed.__getitem__
    labels, distances = graph.index.knn_query(qvec[None, :], k=k + stale, filter=keep)
    rows, cosines = labels[0].astype(np.int64), (1.0 - distances[0]).astype(np.float32)
    if stale:
        live = seg.live_rows[rows]
        rows, cosines = rows[live][:k], cosines[live][:k]
    return rows, cosines


def chunk_cosines(seg: LoadedSegment, indexes: list[int], qvec: np.ndarray) -> np.ndarray:
    """Each chunk's best window cosine (0.0 for a chunk without windows), in one product."""
    chunks = np.asarray(indexes, dtype=np.int64)
    vectors, counts = seg.window_vectors_of(chunks)
    best = np.zeros(len(indexes), dtype=np.float32)
    has = counts > 0
    if has.any():
        sims = vectors @ qvec
        firsts = (np.cumsum(counts) - counts)[has]
        best[has] = np.maximum.reduceat(sims, firsts)
    return best
