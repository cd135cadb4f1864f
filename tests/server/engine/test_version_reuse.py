"""A version opened beside the one before shares what did not change (adr/0028): unchanged
segments, the graph of a segment that only gained tombstones, the records of unchanged
pages; and it answers exactly as the same version opened cold."""

from __future__ import annotations

import pytest

from docdex.index_format.layout import DataDir
from docdex.server.boot import engine_loader
from docdex.server.engine import Engine, EngineSettings, Fusion

from fixtures import index_workspace
from gitrepo import Workspace

TOPICS = ("otters", "glaciers", "lighthouses", "sourdough", "comets", "tram lines")
QUERIES = ("how do otters hold hands", "sourdough starter", "a comet's tail", "glacier melt")
GRAPHS = EngineSettings(exact_dense_max_rows=0)  # HNSW for every segment
DENSE_ONLY = EngineSettings(exact_dense_max_rows=0, fusion=Fusion.DENSE, reranker="none")


def page(topic: str, edit: str = "") -> str:
    return (
        f"# About {topic}\n\nNotes on {topic}: what they are and where to find {topic}.{edit}\n\n"
        f"## History of {topic}\n\nHow {topic} came to be written about.\n"
    )


@pytest.fixture(scope="module")
def two_versions(tmp_path_factory, embedder):
    """Version 1: six pages; version 2: one of them edited (a new segment holds its chunks,
    the first segment gains tombstones)."""
    root = tmp_path_factory.mktemp("reuse")
    ws, data = Workspace(root), DataDir(root / "data")
    for n, topic in enumerate(TOPICS):
        ws.write(f"page{n}.md", page(topic))
    ws.commit_and_push("six pages")
    first = index_workspace(data, ws, embedder)
    ws.write("page3.md", page("sourdough", " Rye flour makes it sour faster."))
    ws.commit_and_push("edit page3")
    second = index_workspace(data, ws, embedder)
    return data, first, second


def answers(engine: Engine) -> list:
    dense = engine.with_settings(DENSE_ONLY)
    return [
        [
            [(h.chunk_id, h.score) for h in e.search(q, 10 if e is dense else 5).results]
            for q in QUERIES
        ]
        for e in (dense, engine)
    ]


def by_id(engine: Engine) -> dict:
    return {s.id: s for s in engine.index.segments()}


def test_a_swap_shares_what_did_not_change_and_answers_as_a_cold_open(two_versions, embedder):
    data, first, second = two_versions
    load = engine_loader(data, embedder, GRAPHS)
    old, new = load(first), load(second)
    [kept] = old.index.segments()
    shared = by_id(new)[kept.id]
    assert shared.opened_by == first  # its files were read once, by the older version
    assert shared.live_chunks < kept.live_chunks  # more tombstones
    assert shared.graph_version == first and shared.stale_rows > 0  # the old graph, shared
    assert shared.stale_rows == kept.live_windows - shared.live_windows
    edited = "docs:page3.md"
    assert new.index.pages[edited] is not old.index.pages[edited]
    assert all(new.index.pages[d] is old.index.pages[d] for d in old.index.pages if d != edited)

    cold = engine_loader(data, embedder, GRAPHS)(second)
    assert by_id(cold)[kept.id].graph_version == second and by_id(cold)[kept.id].stale_rows == 0
    assert answers(new) == answers(cold)
    old.close()  # the old version goes; what the new one shares stays
    assert answers(new) == answers(cold)
    new.close()
    cold.close()


def test_the_same_version_opened_again_is_the_same_segments(two_versions, embedder):
    data, _first, second = two_versions
    before = Engine.open(data, embedder, second)
    again = Engine.open(data, embedder, second, before=before)
    assert [s.opened_by for s in again.index.segments()] == [second, second]
    assert again.index.pages == before.index.pages
    assert all(again.index.pages[d] is before.index.pages[d] for d in before.index.pages)
    before.close()
    again.close()


def test_an_older_version_does_not_take_a_graph_with_more_rows_marked(two_versions, embedder):
    """Falling back to an older version: its live rows are marked deleted in the newer
    version's graph, so it loads its own."""
    data, first, second = two_versions
    load = engine_loader(data, embedder, GRAPHS)
    new = load(second)
    older = load(first)
    [segment] = older.index.segments()
    assert segment.graph_version == first and segment.stale_rows == 0
    cold = Engine.open(data, embedder, first, GRAPHS)
    assert answers(older) == answers(cold)
    for engine in (new, older, cold):
        engine.close()


def test_a_graph_shared_past_the_stale_limit_is_loaded_anew(two_versions, embedder):
    data, first, second = two_versions
    strict = EngineSettings(exact_dense_max_rows=0, max_stale_rows=0)
    load = engine_loader(data, embedder, strict)
    old, new = load(first), load(second)
    [kept] = old.index.segments()
    shared = by_id(new)[kept.id]
    assert shared.opened_by == first
    assert shared.graph_version == second and shared.stale_rows == 0
    old.close()
    new.close()
