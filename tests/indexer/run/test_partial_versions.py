"""An entry the index does not hold yet is published as it is read, every `partial_every_s`
seconds of the run's clock, its state saying how far (docs/adr/0042-keywords-first.md);
the last version is the one a run that published nothing on the way makes, and a run
killed mid-read leaves its last partial version serving, which the next run completes.
Real repositories, the real model, a clock that moves one second each time it is read."""

from __future__ import annotations

import itertools

import tantivy

from docdex.index_format.layout import DataDir
from docdex.index_format.records import Manifest
from docdex.index_format.store import list_versions, load_current, load_manifest
from docdex.index_format.verify import verify_data
from docdex.indexer.run.pipeline import index_sources
from docdex.server.engine import Engine, Hit, Scope

from fixtures import pushed_workspace, search_index
from gitrepo import Workspace, git
from runs import assert_consistent, make_config
from stopped_runs import configure, killed_while_reading, pages

# Words one page holds: BM25 ranks no two chunks level (Tantivy orders chunks of equal score
# by its segments, which a run that commits as it reads has more of: the same scores, in
# another order among equals)
QUERIES = ["widget3", "gizmo17", "widget38", "widget25 gizmo25", "widget0"]


class TickingClock:
    """One second each time it is read. A run reads it twice a page (its progress file, then
    whether a partial version is due), so partial_every_s = 20 is a version every 10 pages."""

    def __init__(self) -> None:
        self._ticks = itertools.count()

    def __call__(self) -> float:
        return float(next(self._ticks))


def text_documents(data: DataDir, manifest: Manifest) -> list[str]:
    """The chunk ids of every live document of the version's text index (duplicates kept)."""
    index = tantivy.Index.open(str(data.text_index(manifest.text_index)))
    searcher = index.searcher()
    hits = searcher.search(tantivy.Query.all_query(), limit=100_000).hits
    return sorted(searcher.doc(address)["chunk_id"][0] for _score, address in hits)


def version_hits(data: DataDir, embedder, version: int, query: str) -> list[Hit]:
    engine = Engine.open(data, embedder, version=version)
    try:
        return engine.search(query, 10, Scope()).results
    finally:
        engine.close()


def searched_paths(data: DataDir, embedder, version: int, query: str) -> list[str]:
    return [hit.path for hit in version_hits(data, embedder, version, query)]


def head(ws: Workspace) -> str:
    return git(ws.work, "rev-parse", "HEAD")


def ranked(data: DataDir, embedder, query: str) -> list[tuple[str, float, str]]:
    return [(h.chunk_id, h.score, h.match) for h in search_index(data, embedder, query).results]


def test_a_first_index_is_published_every_ten_pages_then_whole(tmp_path, embedder):
    ws = pushed_workspace(tmp_path / "repo", pages(40))
    data, once = DataDir(tmp_path / "data"), DataDir(tmp_path / "once")
    config = make_config(ws, partial_every_s=20, keep_versions=50)
    report = index_sources(data, config, embedder=embedder, clock=TickingClock())

    partial = [load_manifest(data, v) for v in report.partial_versions]
    assert [m.sources["docs"].files for m in partial] == [10, 20, 30]
    for manifest in partial:
        state = manifest.sources["docs"]
        assert state.reading is not None and state.commit == ""
        assert (state.reading.commit, state.reading.total) == (head(ws), 40)
        assert state.reading.done == state.files
        assert len(text_documents(data, manifest)) == manifest.chunks == state.chunks
    first = partial[0]
    assert verify_data(data.root).ok
    final = load_current(data)
    assert final.version > partial[-1].version
    assert final.sources["docs"].reading is None and final.sources["docs"].commit == head(ws)
    assert_consistent(data, ws)

    # the first partial version serves the pages read before it, by keywords
    assert searched_paths(data, embedder, first.version, "widget3")[0] == "pages/page-03.md"
    assert searched_paths(data, embedder, first.version, "widget38") == []
    assert {h.match for h in version_hits(data, embedder, first.version, "widget3")} == {"keywords"}

    index_sources(once, make_config(ws, partial_every_s=0), embedder=embedder)
    assert load_current(once).sources["docs"].reading is None
    for query in QUERIES:
        assert ranked(data, embedder, query) == ranked(once, embedder, query), query


class CountingVersions(TickingClock):
    """A ticking clock that notes, at each read, how many manifests are on disk."""

    def __init__(self, data: DataDir) -> None:
        super().__init__()
        self.data = data
        self.most = 0

    def __call__(self) -> float:
        if self.data.versions.is_dir():
            self.most = max(self.most, len(list_versions(self.data)))
        return super().__call__()


def test_partial_versions_are_collected_as_any_other(tmp_path, embedder):
    ws = pushed_workspace(tmp_path / "repo", pages(60))
    data = DataDir(tmp_path / "data")
    config = make_config(ws, partial_every_s=20, keep_versions=2)
    clock = CountingVersions(data)
    report = index_sources(data, config, embedder=embedder, clock=clock)
    assert len(report.partial_versions) == 5
    assert clock.most == 3  # two partial versions and the last, before its collection
    final = load_current(data).version
    assert list_versions(data) == [final - 1, final]
    kept = [load_manifest(data, v) for v in list_versions(data)]
    assert {p.name for p in data.text.iterdir()} == {m.text_index for m in kept}
    assert verify_data(data.root).ok  # nothing a kept version names was removed


def test_partial_publishing_off_publishes_once(tmp_path, embedder):
    ws = pushed_workspace(tmp_path / "repo", pages(40))
    data = DataDir(tmp_path / "data")
    config = make_config(ws, partial_every_s=0)
    report = index_sources(data, config, embedder=embedder, clock=TickingClock())
    assert report.partial_versions == [] and report.version == 1


def test_a_push_to_an_indexed_source_is_not_published_in_parts(tmp_path, embedder):
    ws = pushed_workspace(tmp_path / "repo", pages(4))
    data = DataDir(tmp_path / "data")
    config = make_config(ws, partial_every_s=20)
    index_sources(data, config, embedder=embedder)
    for n, text in pages(40).items():
        ws.write(n, text + "\nMore.\n")
    ws.commit_and_push()
    report = index_sources(data, config, embedder=embedder, clock=TickingClock())
    assert report.partial_versions == []
    assert_consistent(data, ws)


def test_a_run_killed_mid_read_leaves_a_partial_version_the_next_run_completes(tmp_path, embedder):
    ws = pushed_workspace(tmp_path / "repo", pages(40))
    data = DataDir(tmp_path / "data")
    config = configure(data, ws, partial_every_s=20, keywords_first=2)
    version = killed_while_reading(data, tmp_path / "killed.log")

    served = load_current(data)
    state = served.sources["docs"]
    assert served.version == version and state.reading is not None
    assert (state.files, state.reading.done, state.reading.total) == (10, 10, 40)
    assert verify_data(data.root).ok
    assert search_index(data, embedder, "widget3").results[0].path == "pages/page-03.md"
    assert not search_index(data, embedder, "widget38").results  # not read yet

    report = index_sources(data, config, embedder=embedder)
    final = load_current(data)
    assert report.published and final.sources["docs"].reading is None
    assert final.sources["docs"].commit == head(ws) and final.sources["docs"].files == 40
    chunk_ids = text_documents(data, final)
    assert len(chunk_ids) == len(set(chunk_ids)) == final.chunks  # none of the partial twice
    assert_consistent(data, ws)
    assert verify_data(data.root).ok
    assert search_index(data, embedder, "widget38").results[0].path == "pages/page-38.md"
