"""Watch mode on real checkouts: the working tree (uncommitted edits included) reaches the
index through a real inotify watcher, the real pipeline and the real search."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from concurrent.futures import Future

import pytest
import watchfiles

from docdex.errors import InvalidArgument
from docdex.index_format.config import Config, SourceConfig, load_config, save_config
from docdex.index_format.layout import DataDir
from docdex.index_format.store import load_current, load_pages
from docdex.indexer.run.lock import watch_lock
from docdex.indexer.run.pipeline import index_sources
from docdex.indexer.sources.worktree import WORKTREE_SUFFIX
from docdex.indexer.triggers import watch
from docdex.indexer.triggers.watch import (
    EventFilter,
    Watched,
    WatchError,
    WatchLoop,
    watched_sources,
)
from docdex.server.boot import Boot, open_docs

from fixtures import search_index, wait_for
from gitrepo import Workspace, git

GUIDE = "# Install\n\nRun the installer with `--prefix /opt/docdex` to pick a directory.\n"
FAQ = "# FAQ\n\n## Why is my index stale?\n\nThe worker publishes a new version quickly.\n"
WAIT_S = 60  # generous: the machine is shared; no test asserts how fast anything is


@pytest.fixture()
def ws(tmp_path) -> Workspace:
    ws = Workspace(tmp_path / "repo")
    ws.write("guide/install.md", GUIDE)
    ws.write("faq.md", FAQ)
    ws.commit("initial")
    return ws


def configure(data: DataDir, ws: Workspace, name: str = "docs") -> Config:
    data.ensure()
    config = Config(sources=[SourceConfig(name=name, location=str(ws.work))])
    save_config(data, config)
    return config


@contextlib.contextmanager
def watching(data: DataDir, embedder, names: list[str] | None = None):
    """The watch loop in a thread; yields the list of its cycle reports."""
    reports: list = []
    loop = WatchLoop(data, names, embedder=embedder, on_cycle=reports.append)
    stop = threading.Event()
    failure: list[BaseException] = []

    def run() -> None:
        try:
            loop.run(stop)
        except BaseException as exc:  # surfaces in the test, not as a silent thread death
            failure.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        wait_until(lambda: reports or failure, "the initial index")
        yield reports
    finally:
        stop.set()
        thread.join(WAIT_S)
    assert not failure, failure
    assert not thread.is_alive()


def wait_until(predicate, what: str):
    return wait_for(predicate, WAIT_S, what, poll=0.05)


def pages(data: DataDir, source: str = "docs") -> dict:
    manifest = load_current(data)
    if manifest is None or source not in manifest.sources:
        return {}
    return {p.path: p for p in load_pages(data, manifest.sources[source].pages_file)}


def page_paths(data: DataDir) -> set[str]:
    return set(pages(data))


def found(data: DataDir, embedder, query: str) -> set[str]:
    """Paths of the hits for `query` in the current version, through the real search."""
    result = search_index(data, embedder, query, 5)
    return {hit.path for hit in result.results if query.lower() in hit.text.lower()}


def head(ws: Workspace) -> str:
    return git(ws.work, "rev-parse", "HEAD")


# --- the working tree in the pipeline ---------------------------------------------------------


def test_worktree_run_indexes_uncommitted_files(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    config = configure(data, ws)
    ws.write("faq.md", FAQ + "\n## Uncommitted\n\nThe word quokkaberry is only on disk.\n")
    ws.write("new.md", "# New\n\nAn untracked page about the zephyrlight lantern.\n")
    ws.write(".gitignore", "build/\n")
    ws.write("build/out.md", "# Generated\n\nIgnored output must stay out of the index.\n")
    nested = tmp_path / "repo" / "work" / "vendor"
    git(tmp_path, "init", "-q", str(nested))
    (nested / "x.md").write_text("# Nested\n\nA nested repository is not part of this tree.\n")
    outside = tmp_path / "secret.md"
    outside.write_text("# Secret\n\nNever indexed through a symlink.\n")
    (ws.work / "escape.md").symlink_to(outside)
    (ws.work / "inside.md").symlink_to("guide/install.md")

    report = index_sources(data, config, embedder=embedder, worktree=True)
    assert report.published
    state = load_current(data).sources["docs"]
    assert state.commit == head(ws) + WORKTREE_SUFFIX
    assert page_paths(data) == {"faq.md", "guide/install.md", "new.md", "inside.md"}
    assert [p.path for p in state.problems] == ["escape.md"]
    assert "outside the repository" in state.problems[0].problem
    assert found(data, embedder, "quokkaberry") == {"faq.md"}
    assert found(data, embedder, "zephyrlight") == {"new.md"}

    by_path = pages(data)
    committed, edited = by_path["guide/install.md"], by_path["faq.md"]
    assert committed.commit == head(ws) and committed.modified == "2023-11-14T23:13:20Z"
    assert edited.commit == "" and edited.created == "2023-11-14T23:13:20Z"
    assert edited.modified > committed.modified  # the file's mtime, not a commit date

    again = index_sources(data, config, embedder=embedder, worktree=True)
    assert not again.published  # nothing changed: nothing published


def test_a_cursor_from_one_uncommitted_edit_is_refused_after_the_next(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    config = configure(data, ws)
    long = "# Long\n\n" + "".join(f"Line {n} of the first edit.\n\n" for n in range(200))
    ws.write("long.md", long)
    index_sources(data, config, embedder=embedder, worktree=True)
    model: Future = Future()
    model.set_result(embedder)
    docs = open_docs(data, Boot(), model)
    try:
        first = docs.get_document("docs:long.md", max_chars=1_000)
        assert first.commit == "" and first.next_cursor  # an edit no commit names
        ws.write("long.md", long.replace("first", "other"))  # the same length, other words
        assert index_sources(data, config, embedder=embedder, worktree=True).published
        docs.holder.refresh()
        with pytest.raises(InvalidArgument, match="changed since this cursor was made"):
            docs.get_document("docs:long.md", cursor=first.next_cursor, max_chars=1_000)
    finally:
        docs.holder.stop()


def test_branch_index_after_worktree_index_goes_back_to_the_commit(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    config = configure(data, ws)
    ws.write("faq.md", FAQ + "\nOnly in the working tree: glimmerwort.\n")
    index_sources(data, config, embedder=embedder, worktree=True)
    assert found(data, embedder, "glimmerwort") == {"faq.md"}

    report = index_sources(data, config, embedder=embedder)  # `docdex index`: the branch head
    assert report.published and report.sources[0].modified == 1
    assert load_current(data).sources["docs"].commit == head(ws)
    assert found(data, embedder, "glimmerwort") == set()
    assert pages(data)["faq.md"].commit == head(ws)


# --- the watch loop ---------------------------------------------------------------------------


def test_watch_follows_create_edit_delete_rename(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    configure(data, ws)
    with watching(data, embedder):
        assert page_paths(data) == {"faq.md", "guide/install.md"}

        ws.write("notes.md", "# Notes\n\nA fresh page about the marmalade protocol.\n")
        wait_until(lambda: found(data, embedder, "marmalade"), "a created file")

        ws.write("faq.md", FAQ + "\n## Saved\n\nAn uncommitted answer about flumbusters.\n")
        wait_until(lambda: found(data, embedder, "flumbusters") == {"faq.md"}, "an edit")
        assert pages(data)["faq.md"].commit == ""  # not committed: dated by the file

        os.rename(ws.work / "notes.md", ws.work / "ideas.md")
        wait_until(lambda: "ideas.md" in page_paths(data), "a rename")
        assert "notes.md" not in page_paths(data)

        os.rename(ws.work / "guide", ws.work / "manual")
        wait_until(lambda: "manual/install.md" in page_paths(data), "a directory rename")

        os.unlink(ws.work / "ideas.md")
        wait_until(lambda: page_paths(data) == {"faq.md", "manual/install.md"}, "a delete")
        assert found(data, embedder, "marmalade") == set()

        ws.write(".gitignore", "manual/\n")  # new ignore rules: the whole tree is compared
        wait_until(lambda: page_paths(data) == {"faq.md"}, "an ignored directory to leave")
        os.unlink(ws.work / ".gitignore")
        wait_until(lambda: "manual/install.md" in page_paths(data), "it to come back")

        ws.commit("commit the edits")  # a ref moves: pages are dated by the new commit
        wait_until(
            lambda: load_current(data).sources["docs"].commit == head(ws) + WORKTREE_SUFFIX,
            "the new HEAD",
        )
        assert pages(data)["faq.md"].commit == head(ws)


def test_watch_rereads_links_when_their_target_is_saved_or_deleted(tmp_path, ws, embedder):
    (ws.work / "link.md").symlink_to("guide/install.md")
    ws.commit("a link")
    data = DataDir(tmp_path / "data")
    configure(data, ws)
    with watching(data, embedder):
        ws.write("guide/install.md", GUIDE + "\nSaved, and read through the link: brambleowl.\n")
        both = {"guide/install.md", "link.md"}
        wait_until(lambda: found(data, embedder, "brambleowl") == both, "the link to follow")

        os.unlink(ws.work / "guide/install.md")
        wait_until(lambda: page_paths(data) == {"faq.md"}, "the link's page to go")
        problems = load_current(data).sources["docs"].problems
        assert [p.path for p in problems] == ["link.md"]
        assert "does not exist" in problems[0].problem


def test_watch_on_a_crlf_checkout_reads_real_edits_only(tmp_path, ws, embedder):
    ws.push()
    work = tmp_path / "windows"
    git(tmp_path, "clone", "-q", "-c", "core.autocrlf=true", str(ws.bare), str(work))
    data = DataDir(tmp_path / "data")
    data.ensure()
    config = Config(sources=[SourceConfig(name="docs", location=str(work))])
    save_config(data, config)
    index_sources(data, config, embedder=embedder)  # `docdex index`: the committed blobs
    with watching(data, embedder) as reports:
        first = reports[0].sources[0]
        assert (first.modified, first.chunks_embedded) == (0, 0)  # CRLF copies are unchanged
        edited = FAQ + "\nSaved with CRLF line endings: the mistleglow.\n"
        (work / "faq.md").write_bytes(edited.replace("\n", "\r\n").encode())
        wait_until(lambda: found(data, embedder, "mistleglow") == {"faq.md"}, "the edit")
        wait_until(lambda: len(reports) > 1, "the cycle's report")
    assert sum(r.sources[0].modified for r in reports[1:]) == 1


def test_editor_temp_files_and_the_data_directory_are_ignored(tmp_path, ws, embedder, monkeypatch):
    data = DataDir(ws.work / ".docdex")  # the data directory inside the checkout
    configure(data, ws)
    looked_at: list[str] = []

    def recording(*args, dirty=None, **kwargs):
        looked_at.extend(p for paths in (dirty or {}).values() for p in paths)
        return index_sources(*args, dirty=dirty, **kwargs)

    monkeypatch.setattr(watch, "index_sources", recording)
    with watching(data, embedder):
        (ws.work / ".#faq.md").symlink_to("someone@host.1234:1700000000")  # emacs lock
        ws.write("faq.md~", FAQ)
        ws.write(".faq.md.swp", b"\x00vim swap")
        ws.write("4913", "")
        ws.write(".faq.md.tmp", FAQ)
        ws.write("guide/draft.md.tmp", "# Draft\n\nnot yet saved\n")
        ws.write("faq.md", FAQ + "\nThe sentinel word is kumquatrix.\n")
        wait_until(lambda: found(data, embedder, "kumquatrix"), "the real edit")
        ws.write("guide/install.md", GUIDE + "\nA second sentinel: plumtangle.\n")
        wait_until(lambda: found(data, embedder, "plumtangle"), "the second edit")
    assert page_paths(data) == {"faq.md", "guide/install.md"}
    assert load_current(data).sources["docs"].problems == []
    assert set(looked_at) <= {"faq.md", "guide", "guide/install.md"}, looked_at


def test_another_writer_indexing_the_branch_is_undone(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    config = configure(data, ws)
    ws.write("faq.md", FAQ + "\nDraft text about the snorkelwhistle.\n")
    with watching(data, embedder):
        wait_until(lambda: found(data, embedder, "snorkelwhistle"), "the working tree")
        index_sources(data, config, embedder=embedder)  # e.g. the worker after a reindex
        assert found(data, embedder, "snorkelwhistle") == set()
        wait_until(lambda: found(data, embedder, "snorkelwhistle"), "the working tree again")


def test_event_filter_keeps_edits_and_ref_moves_only(tmp_path):
    root = tmp_path / "repo"
    data = root / ".docdex"
    accept = EventFilter([Watched("docs", root)], data)
    added = watchfiles.Change.added
    assert accept(added, str(root / "faq.md"))
    assert accept(added, str(root / "guide"))  # a directory: renames arrive as such
    assert accept(added, str(root / ".git" / "refs" / "heads" / "main"))
    assert accept(added, str(root / ".git" / "HEAD"))
    for ignored in [
        ".git/objects/ab/cdef",
        ".git/index",
        ".git/refs/heads/main.lock",
        ".docdex/versions/00000001.json",
        ".#faq.md",
        "faq.md~",
        ".faq.md.swp",
        "4913",
        ".faq.md.tmp",
        "sub/.x.md.swx",
    ]:
        assert not accept(added, str(root / ignored)), ignored
    assert not accept(added, str(tmp_path / "elsewhere.md"))


def test_only_checkouts_can_be_watched(tmp_path, ws):
    data = DataDir(tmp_path / "data")
    ws.push()
    config = Config(
        sources=[
            SourceConfig(name="work", location=str(ws.work)),
            SourceConfig(name="bare", location=str(ws.bare)),
        ]
    )
    assert [w.name for w in watched_sources(config, None)] == ["work"]
    with pytest.raises(WatchError, match="'bare' is a bare repository, not a checkout"):
        watched_sources(config, ["bare"])
    with pytest.raises(WatchError, match="no checkout source"):
        watched_sources(Config(sources=[config.sources[1]]), None)
    save_config(data, config)
    result = subprocess.run(
        [sys.executable, "-m", "docdex.cli", "--data", str(data.root), "watch", "bare"],
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert result.returncode == 1 and "not a checkout" in result.stderr


def test_watch_command_runs_until_terminated(tmp_path, ws, embedder):
    """The real `docdex watch` process, JSON logs on, stopped by SIGTERM."""
    data = DataDir(tmp_path / "data")
    configure(data, ws)
    assert load_config(data).sources[0].name == "docs"
    log = tmp_path / "watch.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "docdex.cli", "--data", str(data.root)]
            + ["--log-format", "json", "watch", "docs"],
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    try:
        wait_until(lambda: page_paths(data), "the initial index")
        ws.write("faq.md", FAQ + "\nSaved while watching: the wobblefinch.\n")
        wait_until(lambda: found(data, embedder, "wobblefinch"), "the edit")
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(WAIT_S)
    assert code == 0
    events = [json.loads(line) for line in log.read_text().splitlines()]
    indexed = [e for e in events if e["event"] == "indexed"]
    assert {"watching", "indexed", "stopped"} <= {e["event"] for e in events}
    assert all(e["source"] == "docs" and isinstance(e["version"], int) for e in indexed)


def test_one_watcher_per_data_directory(tmp_path, ws):
    data = DataDir(tmp_path / "data")
    configure(data, ws)
    data.ensure()
    with watch_lock(data) as holder:
        assert holder is None  # this test process watches
        result = subprocess.run(
            [sys.executable, "-m", "docdex.cli", "--data", str(data.root), "watch"],
            capture_output=True,
            text=True,
            timeout=WAIT_S,
        )
    assert result.returncode == 1
    assert f"another docdex process (pid {os.getpid()}) already watches" in result.stderr
    assert load_current(data) is None  # it indexed nothing
