"""`docdex worker`: the queue's single writer, run for real (`--once`) on real repositories."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from concurrent.futures import Future
from pathlib import Path

import pytest

from docdex.index_format import metrics
from docdex.index_format.config import (
    Config,
    ConfigError,
    Settings,
    SourceConfig,
    load_config,
    save_config,
)
from docdex.index_format.layout import DataDir
from docdex.index_format.queue import file_request, pending_requests
from docdex.index_format.store import list_versions, load_current
from docdex.indexer.run.lock import writer_lock
from docdex.indexer.run.pipeline import index_sources
from docdex.indexer.triggers.worker import try_lock, worker_pid
from docdex.server.boot import Boot, open_docs
from docdex.serverproc import ServeProcess

from fixtures import wait_for
from gitrepo import Workspace, git


def run_worker(data: DataDir, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "docdex.cli", "--data", str(data.root), "worker", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def setup(tmp_path):
    ws = Workspace(tmp_path / "repo")
    ws.write("guide.md", "# Guide\n\nHow the worker merges requests for the wombat index.\n")
    ws.commit_and_push()
    data = DataDir(tmp_path / "data")
    data.ensure()
    configure(data, ws.bare)
    return ws, data


def configure(data: DataDir, bare: Path, **settings) -> None:
    source = SourceConfig(name="docs", location=str(bare))
    save_config(data, Config(settings=Settings(**settings), sources=[source]))


def test_once_merges_every_request_into_one_cycle_and_records_metrics(setup):
    ws, data = setup
    filed = [file_request(data, "docs", "hook"), file_request(data, "docs", "hook")]
    filed.append(file_request(data, "", "reindex"))
    done = run_worker(data, "--once")
    assert done.returncode == 0, done.stderr
    assert "indexing every source (3 request(s))" in done.stderr
    assert "published version 1" in done.stderr
    assert pending_requests(data) == [] and list_versions(data) == [1]
    manifest = load_current(data)
    assert manifest.sources["docs"].commit == git(ws.bare, "rev-parse", "main")
    ingestion = metrics.read_last_ingestion(data)
    assert ingestion.published and ingestion.version == 1 and ingestion.sources == ["docs"]
    assert ingestion.chunks_embedded == 1 and ingestion.rss_at_end_mb > 0
    assert ingestion.duration_s > 0
    assert metrics.read_last_failure(data) is None

    file_request(data, "docs", "reindex")  # nothing changed: recorded, not published
    assert run_worker(data, "--once").returncode == 0
    assert not metrics.read_last_ingestion(data).published and list_versions(data) == [1]


def test_a_failing_source_is_recorded_and_its_request_taken(setup, tmp_path):
    _ws, data = setup
    configure(data, tmp_path / "gone.git")
    file_request(data, "docs", "hook")
    done = run_worker(data, "--once")
    assert done.returncode == 0, done.stderr
    failure = metrics.read_last_failure(data)
    assert failure.source == "docs" and "gone.git" in failure.error
    assert pending_requests(data) == []  # a new push files a new request
    assert load_current(data).sources["docs"].last_error


def test_a_cycle_past_its_time_limit_is_killed_and_its_request_kept(setup):
    ws, data = setup
    configure(data, ws.bare, cycle_timeout_s=1)
    request = file_request(data, "docs", "hook")
    # The cycle waits for the writer lock this test holds, so it outlives its deadline
    # however fast or slow the machine is; nothing can be published while it waits.
    with writer_lock(data):
        done = run_worker(data, "--once")
    assert done.returncode == 1
    failure = metrics.read_last_failure(data)
    assert "cycle_timeout_s" in failure.error and failure.source == ""
    assert metrics.read_last_ingestion(data) is None  # no metrics for a killed cycle
    assert pending_requests(data) == [request] and load_current(data) is None


def test_a_crashing_cycle_is_reported_and_its_request_kept(setup):
    _ws, data = setup
    request = file_request(data, "docs", "hook")
    data.segments.rmdir()
    data.segments.write_text("not a directory")  # the cycle cannot write a segment
    done = run_worker(data, "--once")
    assert done.returncode == 1
    failure = metrics.read_last_failure(data)
    assert "the indexing cycle exited with status 1" in failure.error
    assert pending_requests(data) == [request]


def test_requests_for_unknown_sources_are_dropped(setup):
    _ws, data = setup
    file_request(data, "removed-source", "hook")
    done = run_worker(data, "--once")
    assert done.returncode == 0
    assert "unknown source(s) removed-source" in done.stderr
    assert pending_requests(data) == [] and load_current(data) is None


def test_one_worker_at_a_time(setup):
    _ws, data = setup
    request = file_request(data, "docs", "hook")
    fd = try_lock(data)
    assert fd is not None and worker_pid(data) == os.getpid()
    try:
        done = run_worker(data, "--once")
        assert done.returncode == 0 and "another worker" in done.stderr
        assert pending_requests(data) == [request]
    finally:
        os.close(fd)
    assert run_worker(data, "--once").returncode == 0
    assert pending_requests(data) == []


def test_a_directory_that_is_not_docdex_is_left_alone(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    done = run_worker(DataDir(empty), "--once")
    assert done.returncode == 0 and list(empty.iterdir()) == []


def start_ticks(pid: int) -> int:
    """When process `pid` started, in clock ticks since boot."""
    return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[19])


def listening_tick(server_pid: int, listening_ms: int) -> int:
    """The clock tick since boot in which the server's `[boot +N ms] listening:` mark was
    taken (N = listening_ms), or an earlier one; never a later one. Exact, no tolerance:

    the boot clock's origin t0 (server/boot.py) is at or after start_ticks(server) / HZ:
    /proc truncates the start to a tick and /proc/uptime to 10 ms, and both only move t0
    later (so does its fallback, the time Boot() ran). N = round((listened - t0) * 1000), so
    listened >= start / HZ + (N - 0.5) / 1000, whose tick is start + floor((2N - 1) HZ / 2000).
    """
    hz = os.sysconf("SC_CLK_TCK")
    return start_ticks(server_pid) + (2 * listening_ms - 1) * hz // 2000


def test_serve_runs_the_worker_and_stops_it(setup, tmp_path):
    ws, data = setup
    server = ServeProcess(data.root, tmp_path / "serve.log", worker=True)
    server.wait_ready()
    try:
        pid = wait_for(lambda: worker_pid(data), 30, "the worker beside serve")
        assert Path(f"/proc/{pid}/stat").read_text().split()[3] == str(server.proc.pid)
        listening_ms = int(re.search(r"\[boot \+(\d+) ms\] listening:", server.output()).group(1))
        # Started once serve listened: serve takes the mark, then forks the worker, so the
        # worker's start tick (its fork time, truncated to a tick) is at or after the mark's
        # tick. Both sides are whole ticks bounded exactly, so no load can make this flake.
        assert start_ticks(pid) >= listening_tick(server.proc.pid, listening_ms)
        file_request(data, "docs", "reindex")
        wait_for(lambda: load_current(data), 90, "a version from serve's worker")
        assert load_current(data).sources["docs"].files == 1
    finally:
        server.stop(group=False)  # the server alone: it must stop its worker itself
    wait_for(lambda: worker_pid(data) is None, 20, "the worker stopped with serve")


def test_a_cycle_time_limit_under_a_second_is_refused(setup):
    _ws, data = setup
    text = data.config.read_text().replace("cycle_timeout_s = 3600", "cycle_timeout_s = 0")
    data.config.write_text(text)
    with pytest.raises(ConfigError, match="cycle_timeout_s"):
        load_config(data)


def test_health_names_a_failing_source_and_the_others_still_publish(tmp_path, embedder):
    """Through the real worker: a partial clone indexes with per-file problems (/health
    "ok"); then its repository goes away, and the next cycle fails that source alone:
    /health says "failing", names it and why, its last pages keep serving, and the other
    source's new commit is published."""
    src = Workspace(tmp_path / "src")
    src.write("guide.md", "# Guide\n\nHow to feed the axolotl.\n")
    src.write("big.md", "# Big\n\n" + "A long page about the narwhal.\n" * 200)  # over 3 KB
    src.commit_and_push()
    partial = tmp_path / "partial.git"
    git(
        tmp_path,
        "clone",
        "-q",
        "--bare",
        "--filter=blob:limit=3k",
        f"file://{src.bare}",
        str(partial),
        "--upload-pack=git -c uploadpack.allowFilter=true upload-pack",
    )
    git(partial, "remote", "remove", "origin")
    more = Workspace(tmp_path / "more")
    more.write("manual.md", "# Manual\n\nThe other docs, about the okapi.\n")
    more.commit_and_push()
    data = DataDir(tmp_path / "data")
    data.ensure()
    sources = [
        SourceConfig(name="docs", location=str(partial)),
        SourceConfig(name="more", location=str(more.bare)),
    ]
    save_config(data, Config(sources=sources))
    file_request(data, "", "reindex")
    assert run_worker(data, "--once").returncode == 0
    model: Future = Future()
    model.set_result(embedder)
    docs = open_docs(data, Boot(), model)
    try:
        status, health = docs.health()
        assert (status, health["status"], health["failed_sources"]) == (200, "ok", {})
        assert health["sources"]["docs"]["files"] == 1  # big.md is a per-file problem

        partial.rename(tmp_path / "moved.git")
        more.move("manual.md", "handbook.md")  # a rename: nothing to embed
        tip = more.commit_and_push()
        file_request(data, "", "reindex")
        done = run_worker(data, "--once")
        assert done.returncode == 0 and "Traceback" not in done.stderr
        docs.holder.refresh()  # what the server's watcher does when CURRENT moves

        status, health = docs.health()
        assert status == 200 and health["status"] == "failing" and health["index_version"] == 2
        failed = health["failed_sources"]["docs"]
        assert "partial.git" in failed["error"] and failed["since"] and failed["serving_commit"]
        assert health["status_detail"].startswith("source docs failed: ")
        assert health["sources"]["more"]["commit"] == tip
        failure = metrics.read_last_failure(data)
        assert failure.source == "docs" and failure.error.startswith("source docs: ")
        entry = {s.name: s for s in docs.list_sources().sources}["docs"]
        assert entry.failed and entry.indexed and entry.failed_since == failed["since"]
        assert docs.search("axolotl", 1).results[0].path == "guide.md"  # still served
    finally:
        docs.holder.stop()


def test_the_worker_embeds_what_a_keywords_version_left_waiting(setup, embedder):
    ws, data = setup
    for n in range(4):
        ws.write(f"page{n}.md", f"# Page {n}\n\nThe wombat note number {n} (marker{n}).\n")
    ws.commit_and_push()
    configure(data, ws.bare, keywords_first=2)
    index_sources(data, load_config(data), embedder=embedder, embed_while=None)
    waiting = [s for s in load_current(data).segments if s.keywords_only]
    assert waiting  # published for keywords, nothing embedded yet, nothing queued

    done = run_worker(data, "--once")
    assert done.returncode == 0, done.stderr
    assert "published for keywords first" in done.stderr
    manifest = load_current(data)
    assert not any(s.keywords_only for s in manifest.segments)
    assert manifest.windows >= manifest.chunks > 0
