"""Hubness of an index's chunks: how near each chunk is to its nearest neighbours.

    python -m bench.ranking.hubs --index material=DIR ... --out DIR [--k 10] [--copies COSINE]

In an embedding space some points (hubs) are near many others and come back for many
unrelated queries. CSLS-style local scaling corrects for them: a chunk's dense score
becomes cos(q, x) - alpha * r(x), where r(x) is the mean cosine of x to its `k` nearest
other chunks of the index. A chunk's vector here is the mean of its windows' vectors,
normalised (the dense list scores a chunk by its best window, but which window is best
depends on the query). r(x) is computed once per index by blockwise exact products over
every live chunk, and written as OUT/CORPUS.npz: per segment id, (chunks,) float32 r(x),
NaN for a chunk that is dead or has no windows (`python -m bench.ranking.loco --hubs OUT`
ranks with it). `--copies`: others at least that near are copies of the chunk (the same
page in another version), not neighbours. Prints, per index, the chunks, the seconds and
the size of one product block.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from docdex.index_format.layout import DataDir
from docdex.index_format.store import current_version, load_manifest, load_segment
from docdex.server.engine import Retrieval

from .report import parse_index

NEIGHBOURS = 10
BLOCK_ROWS = 1024  # chunks per product block: BLOCK_ROWS x chunks float32 at a time

Hubness = dict[str, np.ndarray]  # segment id -> (chunks,) r(x), NaN where none


@dataclass(frozen=True)
class SegmentChunks:
    """A segment's live chunks that have windows, each as one vector."""

    id: str
    chunks: int  # every chunk of the segment, live or not
    indexes: np.ndarray  # (n,) the live chunks with windows
    vectors: np.ndarray  # (n, dim) float32: each the normalised mean of its windows' vectors


def segment_chunks(data: DataDir) -> list[SegmentChunks]:
    """Every segment of the version CURRENT names, read from its files."""
    version = current_version(data)
    if version is None:
        raise SystemExit(f"{data.root} has no published version")
    manifest = load_manifest(data, version)
    out = []
    for ref in manifest.segments:
        live = np.ones(ref.chunks, dtype=bool)
        live[[i for i in ref.tombstones if 0 <= i < ref.chunks]] = False
        if not ref.windows:  # published keywords first: no vectors yet
            dim = manifest.embedder.dim
            out.append(SegmentChunks(ref.id, ref.chunks, np.zeros(0, np.int64), np.zeros((0, dim))))
            continue
        segment = load_segment(data, ref.id, manifest.embedder.dim, decode_all=False)
        counts = np.bincount(segment.owners, minlength=ref.chunks)
        has = counts > 0
        starts = (np.cumsum(counts) - counts)[has]  # rows are in chunk order
        means = np.add.reduceat(np.asarray(segment.vectors, np.float32), starts, axis=0)
        means /= np.maximum(np.linalg.norm(means, axis=1, keepdims=True), 1e-12)
        indexes = np.flatnonzero(has & live)
        out.append(SegmentChunks(ref.id, ref.chunks, indexes, means[live[has]]))
    return out


def neighbour_means(
    vectors: np.ndarray, k: int = NEIGHBOURS, copies: float | None = None
) -> np.ndarray:
    """(n,) each vector's mean cosine to its `k` nearest others (exact, by blocks); `copies`:
    others at least this near are copies of it (the same text in another version or
    folder), not neighbours (0.0 for a vector with no neighbour left)."""
    n = len(vectors)
    k = min(k, n - 1)
    out = np.zeros(n, dtype=np.float32)
    if k <= 0:
        return out
    for start in range(0, n, BLOCK_ROWS):
        block = vectors[start : start + BLOCK_ROWS] @ vectors.T
        rows = np.arange(len(block))
        block[rows, start + rows] = -np.inf  # not its own neighbour
        if copies is not None:
            block[block >= copies] = -np.inf
        nearest = np.partition(block, n - k, axis=1)[:, n - k :]
        counted = np.isfinite(nearest)
        sums = np.where(counted, nearest, 0.0).sum(axis=1)
        out[start : start + len(block)] = sums / np.maximum(counted.sum(axis=1), 1)
    return out


def hubness(data: DataDir, k: int = NEIGHBOURS, copies: float | None = None) -> Hubness:
    """r(x) of every live chunk with windows, among all of the version's such chunks."""
    parts = segment_chunks(data)
    r = neighbour_means(np.concatenate([part.vectors for part in parts]), k, copies)
    out: Hubness = {}
    offset = 0
    for part in parts:
        values = np.full(part.chunks, np.nan, dtype=np.float32)
        values[part.indexes] = r[offset : offset + len(part.indexes)]
        out[part.id] = values
        offset += len(part.indexes)
    return out


def load_hubness(path: Path) -> Hubness:
    with np.load(path) as stored:
        return {name: stored[name] for name in stored.files}


@dataclass(frozen=True)
class HubScaling:
    """The dense side ranked by cos - alpha * r(x). `raw_trust`: the cosines are shifted so
    that the best of them stays the raw best cosine, which the adaptive fusion's dense trust
    reads (else the trust reads the scaled best, below its start on every query)."""

    alpha: float
    raw_trust: bool = True


def scaled(retrieval: Retrieval, hubs: Hubness, scaling: HubScaling) -> Retrieval:
    """The retrieval with its dense side scaled: the dense list's ranks (RRF's and the
    prose fusion's) re-ordered by cos - alpha * r(x), and every candidate's cosine (the
    adaptive fusion ranks the union by it) set to that (shifted: `HubScaling.raw_trust`)."""
    candidates = [dataclasses.replace(c) for c in retrieval.candidates]
    if not candidates:
        return retrieval
    adjusted = [
        c.dense - scaling.alpha * hubness_of(hubs, c.segment.id, c.index) for c in candidates
    ]
    shift = max(c.dense for c in candidates) - max(adjusted) if scaling.raw_trust else 0.0
    listed = sorted(
        (i for i, c in enumerate(candidates) if c.dense_rank), key=lambda i: -adjusted[i]
    )
    for rank, i in enumerate(listed, 1):
        candidates[i].dense_rank = rank
    for c, value in zip(candidates, adjusted, strict=True):
        c.dense = value + shift
    return dataclasses.replace(retrieval, candidates=candidates)


def hubness_of(hubs: Hubness, segment: str, index: int) -> float:
    value = float(hubs[segment][index])
    return 0.0 if np.isnan(value) else value  # a chunk without windows has no cosine either


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ranking.hubs")
    parser.add_argument("--index", action="append", default=[], metavar="CORPUS=DIR")
    parser.add_argument("--out", required=True, type=Path, help="where CORPUS.npz go")
    parser.add_argument("--k", type=int, default=NEIGHBOURS)
    parser.add_argument(
        "--copies", type=float, metavar="COSINE", help="neighbours this near are copies: skip"
    )
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for corpus, (data, _) in parse_index(args.index).items():
        began = time.perf_counter()
        found = hubness(DataDir(data), args.k, args.copies)
        seconds = time.perf_counter() - began
        arrays: dict[str, Any] = dict(found)  # numpy's stubs type **kwds as its own options
        np.savez(args.out / f"{corpus}.npz", **arrays)
        values = np.concatenate(list(found.values()))
        values = values[~np.isnan(values)]
        chunks = len(values)
        block_mb = min(BLOCK_ROWS, chunks) * chunks * 4 / 2**20
        print(
            f"{corpus}: {chunks} chunks, {seconds:.1f} s, product block {block_mb:.0f} MB, "
            f"r(x) median {np.median(values):.3f} p90 {np.quantile(values, 0.9):.3f} "
            f"max {values.max():.3f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
