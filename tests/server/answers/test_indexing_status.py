"""What the answers say while a run indexes: a first index (nothing served yet), a second
source being read, and a version published keywords first whose vectors are still being
embedded. Real repositories and runs, paused inside the real model's first embedding."""

from __future__ import annotations

import threading
from concurrent.futures import Future

import pytest
from embedders import Paused

from docdex.errors import InvalidArgument
from docdex.index_format.config import Config, Settings, SourceConfig, save_config
from docdex.index_format.layout import DataDir
from docdex.indexer.run.pipeline import index_sources
from docdex.server.boot import Boot, open_docs
from docdex.server.versions import NoVersion

from fixtures import INSTALL, pushed_workspace
from gitrepo import Workspace


def configure(data: DataDir, *sources: tuple[str, Workspace], **settings) -> Config:
    config = Config(
        settings=Settings(**settings),
        sources=[SourceConfig(name=name, location=str(ws.bare)) for name, ws in sources],
    )
    data.ensure()
    save_config(data, config)
    return config


def opened(data: DataDir, embedder):
    model: Future = Future()
    model.set_result(embedder)
    return open_docs(data, Boot(), model)


@pytest.fixture()
def docs_ws(tmp_path) -> Workspace:
    pages = {
        f"guide/{n}.md": f"# Guide {n}\n\nThe wombat note {n} (marker{n}).\n" for n in range(4)
    }
    return pushed_workspace(tmp_path / "docs", {**pages, "install.md": INSTALL})


def test_a_first_index_is_indexing_not_an_error(tmp_path, docs_ws, embedder):
    data = DataDir(tmp_path / "data")
    config = configure(data, ("docs", docs_ws), keywords_first=0)
    paused = Paused(embedder)
    run = threading.Thread(target=index_sources, args=(data, config), kwargs={"embedder": paused})
    run.start()
    try:
        assert paused.reached.wait(60)
        docs = opened(data, embedder)
        code, body = docs.health()
        assert (code, body["status"]) == (503, "indexing")
        assert "source docs is being indexed: 5 of 5 pages read, since " in body["status_detail"]
        assert body["indexing"]["pages_total"] == 5
        [listed] = docs.list_sources().sources
        assert not listed.indexed and "source docs is being indexed" in listed.note
        with pytest.raises(NoVersion, match="nothing is served yet: source docs is being indexed"):
            docs.search("wombat")
    finally:
        paused.go.set()
        run.join()
    docs.holder.refresh()
    assert docs.health()[1]["status"] == "ok" and docs.health()[1]["indexing"] is None
    docs.holder.stop()


def test_a_second_source_being_read_is_no_unknown_source(tmp_path, docs_ws, embedder):
    data = DataDir(tmp_path / "data")
    index_sources(data, configure(data, ("docs", docs_ws)), embedder=embedder)
    more = pushed_workspace(tmp_path / "more", {"more.md": "# More\n\nA numbat page.\n"})
    config = configure(data, ("docs", docs_ws), ("more", more), keywords_first=0)
    docs = opened(data, embedder)
    paused = Paused(embedder)
    run = threading.Thread(target=index_sources, args=(data, config), kwargs={"embedder": paused})
    run.start()
    try:
        assert paused.reached.wait(60)
        with pytest.raises(InvalidArgument, match=r"source more is being indexed: 1 of 1 pages"):
            docs.search("numbat", source="more")
        listed = {s.name: s for s in docs.list_sources().sources}
        assert listed["docs"].indexed and "being indexed" in listed["more"].note
        assert docs.health()[1]["status"] == "indexing"
    finally:
        paused.go.set()
        run.join()
    docs.holder.stop()


def test_a_keywords_version_says_how_far_its_vectors_are(tmp_path, docs_ws, embedder):
    data = DataDir(tmp_path / "data")
    config = configure(data, ("docs", docs_ws), keywords_first=2)
    index_sources(data, config, embedder=embedder, embed_while=None)
    docs = opened(data, embedder)
    code, body = docs.health()
    assert (code, body["status"]) == (200, "indexing")
    assert body["embedding"]["chunks_waiting"] == body["total_chunks"] > 0
    assert "wait for vectors" in body["status_detail"]
    [listed] = docs.list_sources().sources
    assert listed.indexed and listed.note.startswith(
        f"{listed.chunks:,} of {listed.chunks:,} chunks"
    )
    hits = docs.search("marker2").results
    assert hits[0].path == "guide/2.md" and hits[0].match == "keywords"

    index_sources(data, config, embedder=embedder)  # the backlog, to the end
    docs.holder.refresh()
    assert docs.health()[1]["embedding"] is None
    assert docs.health()[1]["status"] == "ok"
    assert docs.search("marker2").results[0].match != "keywords"
    docs.holder.stop()


class HeldAtFirstVersion:
    """A run's clock: one second a read, until the run has published a version; then held
    until `go` is set (the run waits in the middle of its reading)."""

    def __init__(self, data: DataDir) -> None:
        self.data = data
        self.ticks = 0
        self.reached, self.go = threading.Event(), threading.Event()

    def __call__(self) -> float:
        if self.data.current.is_file() and not self.go.is_set():
            self.reached.set()
            assert self.go.wait(60)
        self.ticks += 1
        return float(self.ticks)


def test_a_source_published_while_read_says_what_its_hits_cover(tmp_path, embedder):
    pages = {
        f"pages/{n:02d}.md": f"# Page {n}\n\nThe quokka note {n} (marker{n}).\n" for n in range(40)
    }
    data = DataDir(tmp_path / "data")
    config = configure(
        data, ("docs", pushed_workspace(tmp_path / "docs", pages)), partial_every_s=20
    )
    clock = HeldAtFirstVersion(data)
    run = threading.Thread(
        target=index_sources, args=(data, config), kwargs={"embedder": embedder, "clock": clock}
    )
    run.start()
    try:
        assert clock.reached.wait(60)
        docs = opened(data, embedder)
        covered = "source docs is being indexed: 10 of 40 pages read; results cover those"
        found = docs.search("marker3")
        assert found.results[0].path == "pages/03.md" and found.note == covered
        [listed] = docs.list_sources().sources
        assert listed.indexed and listed.files == 10 and listed.note.startswith(covered)
        code, body = docs.health()
        assert (code, body["status"]) == (200, "indexing") and covered in body["status_detail"]
    finally:
        clock.go.set()
        run.join()
    docs.holder.refresh()
    assert docs.search("marker3").note == ""
    assert docs.list_sources().sources[0].files == 40
    docs.holder.stop()
