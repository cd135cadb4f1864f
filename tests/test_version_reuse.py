"""A version opened beside the one before shares what did not change (adr/0028): unchanged
segments, the graph of a segment that only gained tombstones, the records of unchanged
pages; and it answers exactly as the same version opened cold."""

from __future__ import annotations

import pytest

from docdex.index_format.layout import DataDir
from docdex.server.boot import load_snapshot
from docdex.server.engine import loaded as snapshot_mod
from docdex.server.engine import search as search_mod
from docdex.server.engine.loaded import Snapshot
from docdex.server.engine.scope import Scope
from docdex.server.engine.search import dense_top, search

from fixtures import index_workspace
from gitrepo import Workspace

TOPICS = ("otters", "glaciers", "lighthouses", "sourdough", "comets", "tram lines")
QUERIES = ("how do otters hold hands", "sourdough starter", "a comet's tail", "glacier melt")


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


@pytest.fixture(autouse=True)
def graphs_everywhere(monkeypatch):
    monkeypatch.setattr(search_mod, "EXACT_DENSE_MAX_ROWS", 0)  # HNSW for every segment


def answers(snapshot: Snapshot, embedder) -> list:
    dense = [dense_top(snapshot, embedder.embed_query(q), Scope()) for q in QUERIES]
    hits = [[h.chunk_id for h in search(snapshot, embedder, q, 5).results] for q in QUERIES]
    return [dense, hits]


def test_a_swap_shares_what_did_not_change_and_answers_as_a_cold_open(two_versions, embedder):
    data, first, second = two_versions
    load = load_snapshot(data, embedder)
    old, new = load(first), load(second)
    [kept] = old.segments
    shared = new.segments[new.segment_positions[kept.id]]
    assert shared is not kept and shared.segment is kept.segment  # more tombstones
    assert shared.graph is kept.graph and shared.stale_rows > 0
    assert shared.stale_rows == int((kept.live_rows & ~shared.live_rows).sum())
    edited = "docs:page3.md"
    assert new.pages[edited] is not old.pages[edited]
    assert all(new.pages[d] is old.pages[d] for d in old.pages if d != edited)

    cold = load_snapshot(data, embedder)(second)
    assert cold.segments[0].graph is not kept.graph and cold.segments[0].stale_rows == 0
    assert answers(new, embedder) == answers(cold, embedder)
    old.close()  # the old version goes; what the new one shares stays
    assert answers(new, embedder) == answers(cold, embedder)
    new.close()
    cold.close()


def test_the_same_version_opened_again_is_the_same_segments(two_versions, embedder):
    data, _first, second = two_versions
    before = Snapshot.load(data, second)
    again = Snapshot.load(data, second, before=before)
    assert [a is b for a, b in zip(again.segments, before.segments, strict=True)] == [True, True]
    assert again.page_tables == before.page_tables and again.pages == before.pages
    before.close()
    again.close()


def test_an_older_version_does_not_take_a_graph_with_more_rows_marked(two_versions, embedder):
    """Falling back to an older version: its live rows are marked deleted in the newer
    version's graph, so it loads its own."""
    data, first, second = two_versions
    load = load_snapshot(data, embedder)
    new = load(second)
    older = load(first)
    [segment] = older.segments
    assert segment.graph is not new.segments[0].graph and segment.stale_rows == 0
    cold = Snapshot.load(data, first)
    assert answers(older, embedder) == answers(cold, embedder)
    for snapshot in (new, older, cold):
        snapshot.close()


def test_a_graph_shared_past_the_stale_limit_is_loaded_anew(two_versions, embedder, monkeypatch):
    data, first, second = two_versions
    monkeypatch.setattr(snapshot_mod, "MAX_STALE_ROWS", 0)
    load = load_snapshot(data, embedder)
    old, new = load(first), load(second)
    shared = new.segments[new.segment_positions[old.segments[0].id]]
    assert shared.segment is old.segments[0].segment
    assert shared.graph is not old.segments[0].graph and shared.stale_rows == 0
    old.close()
    new.close()
