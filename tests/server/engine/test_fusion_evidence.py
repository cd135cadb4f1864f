"""The fusion's selectable uses of the lists' own evidence (docs/retrieval.md, "Fusion"):
a request in prose fused by the weighted sum of both lists' scores rescaled min to max
(CombSUM), and the BM25 ranks weighed by BM25's evidence on the query (how far its first
score stands above its tenth; the share of the query its first hit, or each chunk, holds).
None is the default: measured leaving one corpus out, none met more floors."""

from __future__ import annotations

import msgspec
import pytest

from docdex.server.engine import DEFAULT_SETTINGS, Engine, Fusion, LexicalTrust
from docdex.server.engine.fusion import fuse, lexical_weigher
from docdex.server.engine.query import QueryContext, profile_query
from docdex.server.engine.retrieval import Candidate

from fixtures import indexed_engine

PROSE = "why does the nightly backup job stop halfway through on a busy server"


def _fused(candidates: list[Candidate], **settings) -> list[float]:
    chosen = msgspec.structs.replace(DEFAULT_SETTINGS, reranker="none", **settings)
    fuse(QueryContext(None, chosen, None, profile_query(PROSE), None), candidates)  # type: ignore[arg-type]
    return [c.score for c in candidates]


def _scores_apart() -> list[Candidate]:
    """BM25's first by far, fifth by cosine; the dense list's first, last in BM25's list; a
    chunk BM25 alone found, with the union's lowest cosine."""
    lexical = Candidate(None, 0, 0, bm25=100.0, bm25_rank=1, dense=0.50, dense_rank=5)
    semantic = Candidate(None, 0, 1, bm25=40.0, bm25_rank=3, dense=0.60, dense_rank=1)
    bm25_only = Candidate(None, 0, 2, bm25=60.0, bm25_rank=2, dense=0.10)
    return [lexical, semantic, bm25_only]


def test_prose_by_min_max_scores_keeps_the_score_gaps_that_ranks_lose():
    lexical, semantic, bm25_only = _fused(_scores_apart())  # the default: RRF k = 10
    assert semantic > lexical
    scores = _fused(_scores_apart(), prose_fusion=Fusion.WEIGHTED, prose_min_max=True)
    # BM25 from its list's last (0) to its first (1) at 0.5, the cosine from the union's
    # lowest (0) to its best (1) at 1.0
    assert scores == pytest.approx([0.5 * 1.0 + 0.8, 0.5 * 0.0 + 1.0, 0.5 * (20 / 60) + 0.0])
    plain = _fused(_scores_apart(), prose_fusion=Fusion.WEIGHTED)  # BM25 over its best, cosines
    assert plain == pytest.approx([0.5 + 0.50, 0.5 * 0.4 + 0.60, 0.5 * 0.6 + 0.10])


def _bm25_list(scores: list[float]) -> tuple[Candidate, Candidate, list[Candidate]]:
    """BM25's list with these scores, its first 11th by cosine; the dense list's first,
    absent from BM25's."""
    listed = [
        Candidate(None, 0, i, bm25=s, bm25_rank=i + 1, dense=0.45, dense_rank=i + 1)
        for i, s in enumerate(scores)
    ]
    listed[0].dense, listed[0].dense_rank = 0.3, 11
    semantic = Candidate(None, 0, len(scores), dense=0.6, dense_rank=1)
    return listed[0], semantic, [*listed, semantic]


def test_a_flat_bm25_list_weighs_less_when_its_spread_is_trusted():
    steep = [100.0, 60.0, 50.0, 45.0, 40.0, 38.0, 36.0, 34.0, 32.0, 30.0]
    flat = [10.0, 9.9, 9.8, 9.7, 9.6, 9.5, 9.4, 9.3, 9.2, 9.1]  # its tenth 9 % below
    adaptive = {"prose_words": 0, "adaptive_heading_weight": 0.0}  # every query alike
    for scores, bm25_first_wins in ((steep, True), (flat, False)):
        first, semantic, candidates = _bm25_list(scores)
        _fused(candidates, lexical_trust=LexicalTrust(spread=0.5), **adaptive)
        assert (first.score > semantic.score) is bm25_first_wins
        _fused(candidates, **adaptive)  # the default: the BM25 list weighs 1
        assert first.score > semantic.score


PAGES = {
    "backups.md": (
        "# Backups\n\n## Nightly backup job\n\nThe nightly backup job copies every volume to"
        " the archive. On a busy server it stops halfway when the archive disk fills.\n"
    ),
    "servers.md": (
        "# Servers\n\n## Busy servers\n\nA busy server answers slowly; a busy server queues"
        " requests; a busy server is a busy server.\n"
    ),
}


@pytest.fixture(scope="module")
def engine(tmp_path_factory, embedder):
    with indexed_engine(tmp_path_factory.mktemp("evidence"), PAGES, embedder) as opened:
        yield opened


def _weights(engine: Engine, query: str, trust: LexicalTrust) -> tuple[str, dict[str, float]]:
    """BM25's first hit's page, and each listed page's BM25 weight under `trust`."""
    retrieval = engine.retrieve(query, engine.scope("docs"))
    ctx = retrieval.ctx
    settings = msgspec.structs.replace(ctx.settings, lexical_trust=trust)
    chosen = QueryContext(ctx.version, settings, ctx.embedder, ctx.profile, ctx.scope)
    weigh = lexical_weigher(chosen, retrieval.candidates)
    listed = sorted((c for c in retrieval.candidates if c.bm25_rank), key=lambda c: c.bm25_rank)
    return listed[0].chunk.path, {c.chunk.path: weigh(c) for c in listed}


WHOLE = "nightly backup job stops on a busy server"  # every word in backups.md
PARTS = "busy server drops requests under nightly load"  # no page holds "drops" or "load"


def test_the_bm25_ranks_weigh_the_share_of_the_query_a_chunk_holds(engine):
    _, each = _weights(engine, WHOLE, LexicalTrust(coverage=1.0, each_chunk=True))
    assert each["backups.md"] == pytest.approx(1.0)
    assert 0.0 < each["servers.md"] < 0.5  # "busy server" alone, the common words
    _, at_a_fifth = _weights(engine, WHOLE, LexicalTrust(coverage=0.2, each_chunk=True))
    assert at_a_fifth["servers.md"] == pytest.approx(min(1.0, each["servers.md"] / 0.2))
    assert set(_weights(engine, WHOLE, LexicalTrust())[1].values()) == {1.0}  # the default


def test_the_bm25_list_weighs_the_share_of_the_query_its_first_hit_holds(engine):
    first, each = _weights(engine, PARTS, LexicalTrust(coverage=1.0, each_chunk=True))
    _, listed = _weights(engine, PARTS, LexicalTrust(coverage=1.0))
    assert 0.0 < each[first] < 1.0
    assert len(listed) == 2 and list(listed.values()) == pytest.approx([each[first]] * 2)
