"""A query's candidates: BM25 and dense top-k under its scope, merged into one list in which
every candidate has both scores.

BM25 runs on a helper thread while the query is embedded, and the segments' graph searches
beside each other and beside BM25 (parallel.py, adr/0029). A configured embedder that
cannot embed the query (an endpoint that is down, adr/0039) leaves BM25's list alone.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import partial

import numpy as np

from docdex.model.late_interaction import QueryEncoding, encode_query
from docdex.model.protocol import EmbedderUnavailable

from . import parallel
from .candidates import Candidate
from .dense import chunk_cosines, dense_top
from .lexical import bm25_top
from .query import QueryContext


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
