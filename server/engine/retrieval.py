"""A query's candidates: BM25 and dense top-k under its scope, merged into one list in which
every candidate has both scores. A `Candidate` is a chunk on its way through ranking: what
each stage (fusion.py, rerank.py, confidence.py, hits.py) knows of it.

BM25 runs on a helper thread while the query is embedded, and the segments' graph searches
beside each other and beside BM25 (parallel.py, adr/0029). A configured embedder that
cannot embed the query (an endpoint that is down, adr/0039) leaves BM25's list alone.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from docdex.index_format.records import ChunkRecord
from docdex.model.late_interaction import QueryEncoding, encode_query
from docdex.model.protocol import EmbedderUnavailable

from . import parallel
from .dense import chunk_cosines, dense_top
from .lexical import bm25_top
from .loaded import LoadedSegment
from .query import QueryContext


@dataclass
class Candidate:
    segment: LoadedSegment
    position: int  # the segment's position in its version
    index: int  # chunk index in that segment
    bm25: float = 0.0
    bm25_rank: int = 0  # 1-based; 0 = not in the BM25 list
    dense: float = 0.0  # best window cosine (computed for every candidate)
    dense_rank: int = 0
    score: float = 0.0
    _record: ChunkRecord | None = field(default=None, repr=False, compare=False)

    @property
    def key(self) -> tuple[int, int]:
        return self.position, self.index

    @property
    def embedded(self) -> bool:
        """Whether the chunk has its vectors (one published keywords first has none yet)."""
        return self.chunk.window_count > 0

    @property
    def match(self) -> str:
        """Which retriever found it: "bm25", "dense" or "both"; "keywords": BM25, and the
        chunk has no vectors yet, so dense could not have."""
        if not self.embedded:
            return "keywords"
        if self.bm25_rank and self.dense_rank:
            return "both"
        return "bm25" if self.bm25_rank else "dense"

    @property
    def chunk(self) -> ChunkRecord:
        """The chunk's record, read once per search: the fusion, the rerank, the confidence
        and the hits all read it, and each read is a `pread` and a decode."""
        if self._record is None:
            self._record = self.segment.chunks[self.index]
        return self._record


def by_score(candidates: list[Candidate]) -> list[Candidate]:
    """Highest score first; ties keep their order."""
    return sorted(candidates, key=lambda c: -c.score)


@dataclass(frozen=True)
class Retrieval:
    """One query's candidates before fusion, with what ranking them needs; fused again
    under other settings, they rank as a search with those settings would."""

    ctx: QueryContext
    candidates: list[Candidate]
    encoding: QueryEncoding


def retrieve(ctx: QueryContext, with_tokens: bool) -> Retrieval:
    """The query's candidates and its encoding (`with_tokens`: also its token vectors)."""
    with parallel.start([partial(bm25_top, ctx)], ctx.settings.helpers) as lexical:
        try:
            encoding = encode_query(ctx.embedder, ctx.profile.text, with_tokens)
        except EmbedderUnavailable as exc:  # an endpoint logs its failure once, not per query
            log.debug("the query was not embedded, BM25 answers alone: %s", exc)
            encoding = QueryEncoding(
                np.zeros(ctx.version.manifest.embedder.dim, np.float32), None, None
            )
        candidates = _merge(ctx, encoding.vector, lexical)
    return Retrieval(ctx, candidates, encoding)


log = logging.getLogger("docdex.server")


def _merge(ctx: QueryContext, qvec: np.ndarray, lexical: parallel.Batch) -> list[Candidate]:
    """BM25's list (`lexical`: its search, begun while the query was embedded), then the
    dense list's new chunks; candidates found by BM25 only get their exact cosine."""
    version = ctx.version
    dense = dense_top(version, qvec, ctx.scope, ctx.settings) if qvec.any() else []
    [bm25] = lexical.join()
    found: dict[tuple[int, int], Candidate] = {}

    def candidate(key: tuple[int, int]) -> Candidate:
        position, index = key
        return Candidate(version.segments[position], position, index)

    for rank, (key, score) in enumerate(bm25, 1):
        found[key] = cand = candidate(key)
        cand.bm25, cand.bm25_rank = score, rank
    for rank, (key, score) in enumerate(dense, 1):
        cand = found.get(key) or found.setdefault(key, candidate(key))
        cand.dense, cand.dense_rank = score, rank
    lexical_only: dict[int, list[Candidate]] = {}
    for cand in found.values():
        if not cand.dense_rank:
            lexical_only.setdefault(cand.position, []).append(cand)
    for cands in lexical_only.values():
        cosines = chunk_cosines(cands[0].segment, [c.index for c in cands], qvec)
        for cand, cosine in zip(cands, cosines.tolist(), strict=True):
            cand.dense = cosine
    return list(found.values())
