"""The indexer end to end on real git repositories: incremental runs, reuse, failures."""

from __future__ import annotations

import threading

import pytest

from docdex.index_format import metrics
from docdex.index_format.config import Config, SourceConfig
from docdex.index_format.layout import DataDir, IndexFormatError
from docdex.index_format.store import (
    current_version,
    list_versions,
    load_current,
    load_manifest,
    load_pages,
)
from docdex.indexer.run.context import IndexingError
from docdex.indexer.run.lock import writer_lock
from docdex.indexer.run.pipeline import index_sources

from fixtures import FAQ, INSTALL, pushed_workspace
from gitrepo import Workspace, git
from runs import (
    assert_consistent,
    assert_tiers_within,
    live_state,
    make_config,
    push_new_pages,
    run,
)


@pytest.fixture()
def ws(tmp_path) -> Workspace:
    return pushed_workspace(
        tmp_path,
        {"guide/install.md": INSTALL, "faq.md": FAQ, "notes.txt": "not markdown, never indexed"},
    )


def test_first_run_indexes_markdown_only(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    report = run(data, make_config(ws), embedder)
    assert report.published and report.version == 1
    source = report.sources[0]
    assert (source.status, source.added, source.chunks_reused) == ("indexed", 2, 0)
    assert source.chunks_embedded > 0
    pages = assert_consistent(data, ws)
    guide = pages["docs:guide/install.md"]
    assert guide.title == "Install guide" and guide.tags == ["setup", "install"]
    assert guide.created == guide.modified == "2023-11-14T23:13:20Z"


def test_incremental_add_modify_delete_rename(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    config = make_config(ws)
    run(data, config, embedder)
    first = {p.path: p for p in load_pages(data, load_current(data).sources["docs"].pages_file)}

    ws.write("faq.md", FAQ + "\n## Can I search offline?\n\nYes, nothing leaves the machine.\n")
    ws.write("new.md", "# New page\n\nA brand new page about replication lag in followers.\n")
    ws.commit_and_push("edit and add")
    report = run(data, config, embedder)
    source = report.sources[0]
    assert (source.added, source.modified, source.deleted, source.renamed) == (1, 1, 0, 0)
    # faq.md: its unchanged section is reused, only the new section and page are embedded
    assert source.chunks_reused >= 1
    assert source.chunks_embedded == 2
    assert_consistent(data, ws)

    ws.move("guide/install.md", "guide/setup.md")
    ws.remove("new.md")
    ws.commit_and_push("rename and delete")
    report = run(data, config, embedder)
    source = report.sources[0]
    assert (source.renamed, source.deleted, source.chunks_embedded) == (1, 1, 0)
    pages = assert_consistent(data, ws)
    moved = pages["docs:guide/setup.md"]
    assert moved.created == first["guide/install.md"].created  # carried across the rename
    assert moved.modified > first["guide/install.md"].modified


def test_nothing_changed_publishes_nothing(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    config = make_config(ws)
    run(data, config, embedder)
    report = run(data, config, embedder)
    assert not report.published and report.version == 1
    assert list_versions(data) == [1]


def test_every_run_leaves_its_metrics_for_health(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    config = make_config(ws)
    first = run(data, config, embedder)
    ingestion = metrics.read_last_ingestion(data)
    assert ingestion is not None and (ingestion.version, ingestion.published) == (1, True)
    assert ingestion.sources == ["docs"]
    assert ingestion.chunks_embedded == first.sources[0].chunks_embedded > 0
    run(data, config, embedder)
    again = metrics.read_last_ingestion(data)
    assert again is not None and (again.version, again.published, again.chunks_embedded) == (
        1,
        False,
        0,
    )
    assert metrics.read_last_failure(data) is None
    gone = Config(sources=[SourceConfig(name="docs", location=str(tmp_path / "missing"))])
    run(data, gone, embedder)
    failure = metrics.read_last_failure(data)
    assert failure is not None and failure.source == "docs" and "missing" in failure.error


def test_force_push_rewrites_history(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    config = make_config(ws)
    ws.write("doomed.md", "# Doomed\n\nThis page exists only on the old history line.\n")
    ws.commit_and_push("to be rewritten")
    run(data, config, embedder)
    git(ws.work, "reset", "-q", "--hard", "HEAD~1")
    ws.write("other.md", "# Other\n\nA page that only the rewritten history carries.\n")
    ws.commit()
    ws.push(force=True)
    report = run(data, config, embedder)
    assert report.published
    pages = assert_consistent(data, ws)
    assert "docs:doomed.md" not in pages and "docs:other.md" in pages


def test_full_rebuild_reuses_every_vector(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    config = make_config(ws)
    run(data, config, embedder)
    report = run(data, config, embedder, full=True)
    source = report.sources[0]
    assert report.published and source.chunks_embedded == 0 and source.chunks_reused > 0
    assert_consistent(data, ws)


def test_a_source_holding_what_another_holds_copies_its_vectors(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    mirror = tmp_path / "mirror.git"
    git(tmp_path, "clone", "-q", "--mirror", str(ws.bare), str(mirror))
    run(data, make_config(ws), embedder)
    both = Config(
        sources=[
            SourceConfig(name="docs", location=str(ws.bare)),
            SourceConfig(name="mirror", location=str(mirror)),
        ]
    )
    report = run(data, both, embedder)
    added = next(s for s in report.sources if s.name == "mirror")
    assert (added.status, added.added, added.chunks_embedded) == ("indexed", 2, 0)
    assert added.chunks_reused > 0 and report.windows_embedded == 0


def test_a_watched_checkout_of_an_indexed_repository_embeds_nothing(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    checkout = tmp_path / "checkout"
    git(tmp_path, "clone", "-q", str(ws.bare), str(checkout))
    run(data, make_config(ws), embedder)
    both = Config(
        sources=[
            SourceConfig(name="docs", location=str(ws.bare)),
            SourceConfig(name="local", location=str(checkout)),
        ]
    )
    report = run(data, both, embedder, worktree=True)
    local = next(s for s in report.sources if s.name == "local")
    assert (local.status, local.added, local.chunks_embedded) == ("indexed", 2, 0)
    assert local.commit.endswith("+worktree") and report.windows_embedded == 0


def test_a_file_named_like_a_chunk_id_is_a_problem_not_a_page(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    ws.write("faq.md#chunk0", "# Impostor\n\nA page whose id would name the FAQ's first chunk.\n")
    ws.commit_and_push("a file named like a chunk")
    config = Config(sources=[SourceConfig(name="docs", location=str(ws.bare), include=["**/*"])])
    report = run(data, config, embedder)
    problems = {p.path: p.problem for p in report.sources[0].problems}
    assert "ends like a chunk id" in problems["faq.md#chunk0"]
    pages = live_state(data)[1]
    assert "docs:faq.md" in pages and "docs:faq.md#chunk0" not in pages


def test_bad_files_are_recorded_and_skipped(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    outside = tmp_path / "secret.md"
    outside.write_text("# Secret\n\nThis must never be indexed through a symlink.\n")
    ws.write("binary.md", b"\x00\x01\x02PNG data")
    ws.write("latin1.md", "# Caf\xe9\n\nna\xefve text in latin-1\n".encode("latin-1"))
    ws.write("huge.md", "# Huge\n\n" + "word " * 5000)
    ws.write("crlf.md", "\ufeff# Windows page\r\n\r\nWritten on Windows with CRLF and a BOM.\r\n")
    (ws.work / "escape.md").symlink_to(outside)
    ws.commit_and_push("bad input")
    report = run(data, make_config(ws, max_file_bytes=10_000), embedder)
    problems = {p.path: p.problem for p in report.sources[0].problems}
    assert set(problems) == {"binary.md", "latin1.md", "huge.md", "escape.md"}
    assert "max_file_bytes" in problems["huge.md"]
    assert "UTF-8" in problems["latin1.md"]
    manifest, pages, _dense, _text = live_state(data)
    assert "docs:crlf.md" in pages and pages["docs:crlf.md"].title == "Windows page"
    assert {p.path for p in manifest.sources["docs"].problems} == set(problems)

    ws.write("latin1.md", "# Café\n\nNow valid UTF-8 text about naïve people.\n")
    ws.commit_and_push("fix encoding")
    run(data, make_config(ws, max_file_bytes=10_000), embedder)
    manifest, pages, _dense, _text = live_state(data)
    assert "docs:latin1.md" in pages
    assert {p.path for p in manifest.sources["docs"].problems} == set(problems) - {"latin1.md"}


def test_removed_source_and_deleted_branch_leave_the_index(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    other = Workspace(tmp_path / "other", branch="docs")
    other.write("a.md", "# Other source\n\nPages of a second repository on a docs branch.\n")
    other.commit_and_push()
    both = Config(
        sources=[
            SourceConfig(name="docs", location=str(ws.bare)),
            SourceConfig(name="more", location=str(other.bare)),
        ]
    )
    run(data, both, embedder)
    _m, pages, _d, _t = live_state(data)
    assert {p.source for p in pages.values()} == {"docs", "more"}

    git(other.bare, "update-ref", "-d", "refs/heads/docs")
    report = run(data, both, embedder)
    more = next(s for s in report.sources if s.name == "more")
    assert more.status == "branch-deleted" and "no longer exists" in more.error
    manifest, pages, dense, text = live_state(data)
    assert {p.source for p in pages.values()} == {"docs"}
    assert manifest.sources["more"].last_error

    report = run(data, make_config(ws), embedder)
    assert [s.status for s in report.sources if s.name == "more"] == ["removed"]
    manifest, pages, dense, text = live_state(data)
    assert set(manifest.sources) == {"docs"} and dense == text


def test_source_errors_are_clear(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    empty = tmp_path / "empty.git"
    git(tmp_path, "init", "-q", "--bare", str(empty))
    config = Config(
        sources=[
            SourceConfig(name="docs", location=str(ws.bare), branch="nope"),
            SourceConfig(name="empty", location=str(empty)),
            SourceConfig(name="gone", location=str(tmp_path / "missing")),
        ]
    )
    report = run(data, config, embedder)
    errors = {s.name: s.error for s in report.sources}
    assert "'nope' does not exist" in errors["docs"]
    assert "empty" in errors["empty"]
    assert "missing" in errors["gone"]
    with pytest.raises(IndexingError, match="unknown source 'zzz'.*docs"):
        run(data, config, embedder, names=["zzz"])


def test_foreign_data_directory_is_refused(tmp_path, ws, embedder):
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "precious.txt").write_text("not ours")
    with pytest.raises(IndexFormatError, match="not a docdex data directory"):
        run(DataDir(foreign), make_config(ws), embedder)
    assert (foreign / "precious.txt").read_text() == "not ours"


CRASH_STAGES = [
    "docdex.indexer.run.storage.stream.write_segment",
    "docdex.indexer.run.storage.text_index.TextIndexBuilder.publish",
    "docdex.indexer.run.publishing.write_manifest",
    "docdex.indexer.run.publishing.point_current",
]


@pytest.mark.parametrize("stage", CRASH_STAGES)
def test_crash_mid_run_keeps_the_previous_version(tmp_path, ws, embedder, monkeypatch, stage):
    data = DataDir(tmp_path / "data")
    config = make_config(ws)
    run(data, config, embedder)
    before = live_state(data)
    ws.write("faq.md", FAQ + "\n## Crash?\n\nA crash while publishing must lose nothing.\n")
    ws.commit_and_push()

    def crash(*args, **kwargs):
        raise OSError(f"injected crash in {stage}")

    monkeypatch.setattr(stage, crash)
    with pytest.raises(OSError, match="injected"):
        run(data, config, embedder)
    monkeypatch.undo()
    assert current_version(data) == 1
    assert live_state(data)[1:] == before[1:]  # the previous version still reads whole

    report = run(data, config, embedder)
    assert report.published and report.version >= 2
    assert_consistent(data, ws)
    debris = [p for folder in (data.segments, data.text) for p in folder.glob(".tmp-*")]
    assert debris == []


def test_compaction_merges_segments_without_embedding(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    config = make_config(ws, max_segments=2)
    run(data, config, embedder)
    reports = push_new_pages(data, config, ws, embedder)
    assert all(r.sources[0].chunks_embedded == 1 for r in reports)
    assert sum(r.compacted for r in reports) >= 1
    assert_tiers_within(data, 2)
    assert_consistent(data, ws)


def test_second_writer_waits_for_the_first(tmp_path, ws, embedder):
    """No sleeps: the holder says when it holds the lock, and lets go only once the second
    writer has reported (on_wait) that it found the lock taken and is blocking on it."""
    data = DataDir(tmp_path / "data")
    data.ensure()
    held = threading.Event()  # the holder has the lock
    waited = threading.Event()  # the second writer found it taken (on_wait)
    let_go = threading.Event()  # the holder may release it
    released = threading.Event()  # the holder is releasing it

    def hold():
        with writer_lock(data):
            held.set()
            let_go.wait(60)  # bounded: a writer that never waits fails the test, not hangs it
            released.set()

    def on_wait(pid: str) -> None:
        waited.set()
        let_go.set()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(60), "the holder never took the writer lock"
        report = index_sources(data, make_config(ws), embedder=embedder, on_wait=on_wait)
    finally:
        let_go.set()  # whatever happened, the holder lets go
        holder.join(60)
    assert waited.is_set() and released.is_set() and report.published


def test_gc_keeps_the_newest_versions(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    config = make_config(ws, keep_versions=2)
    run(data, config, embedder)
    for i in range(3):
        ws.write("faq.md", FAQ + f"\n## Round {i}\n\nEdit number {i} of the FAQ page.\n")
        ws.commit_and_push()
        report = run(data, config, embedder)
    assert list_versions(data) == [3, 4]
    assert report.gc.deleted_versions == [2]
    kept = [load_manifest(data, v) for v in (3, 4)]
    assert {p.name for p in data.segments.iterdir()} == {s.id for m in kept for s in m.segments}
    assert {p.name for p in data.text.iterdir()} == {m.text_index for m in kept}
    assert_consistent(data, ws)
