"""Remote sources over real transports: a local `git daemon` (git://) and file:// URLs,
fetched into mirrors, indexed, polled; an unreachable remote keeps its last good pages."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from docdex.cli import main
from docdex.index_format.config import Config, SourceConfig, save_config
from docdex.index_format.layout import DataDir
from docdex.index_format.queue import pending_requests
from docdex.index_format.store import list_versions, load_current
from docdex.indexer.run.pipeline import index_sources
from docdex.indexer.sources.remote import fetch_mirror
from docdex.indexer.triggers.poller import due_sources, poll_once, read_stamps
from docdex.model import embedder as embedder_module
from docdex.server.answers.docs import Docs
from docdex.server.boot import engine_loader
from docdex.server.versions import VersionHolder
from docdex.serverproc import free_port

from fixtures import search_index
from gitrepo import Workspace, git

PAGE = "# Remote docs\n\nThe mirror keeps a copy of the lighthouse manual.\n"


class GitDaemon:
    """`git daemon` serving every repository under `base` on 127.0.0.1."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["git", "daemon", "--export-all", "--reuseaddr", f"--base-path={self.base}"]
            + [f"--port={self.port}", "--listen=127.0.0.1", str(self.base)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.skip(f"git daemon exited at once (status {self.proc.returncode})")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise AssertionError("git daemon did not start listening")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)

    def url(self, repo: Path) -> str:
        return f"git://127.0.0.1:{self.port}/{repo.relative_to(self.base)}"


def _has_git_daemon() -> bool:
    exec_path = subprocess.run(["git", "--exec-path"], capture_output=True, text=True).stdout
    return (Path(exec_path.strip()) / "git-daemon").exists()


@pytest.fixture()
def upstream(tmp_path) -> Workspace:
    ws = Workspace(tmp_path / "up")
    ws.write("manual.md", PAGE)
    ws.commit_and_push("initial")
    return ws


@pytest.fixture()
def daemon(tmp_path, upstream):
    if shutil.which("git") is None or not _has_git_daemon():
        pytest.skip("`git daemon` is not available on this machine")
    server = GitDaemon(upstream.bare.parent)
    server.start()
    yield server
    server.stop()


def hits(data: DataDir, embedder, query: str, source: str = "") -> set[str]:
    result = search_index(data, embedder, query, 5, source)
    return {f"{h.source}:{h.path}" for h in result.results if query in h.text.lower()}


def test_git_daemon_and_file_url_sources_are_fetched_and_indexed(
    tmp_path, upstream, daemon, embedder
):
    data = DataDir(tmp_path / "data")
    data.ensure()
    config = Config(
        sources=[
            SourceConfig(name="viagit", location=daemon.url(upstream.bare)),
            SourceConfig(name="viafile", location=upstream.bare.as_uri()),
        ]
    )
    save_config(data, config)
    report = index_sources(data, config, embedder=embedder)
    assert [s.status for s in report.sources] == ["indexed", "indexed"], report
    assert hits(data, embedder, "lighthouse") == {"viagit:manual.md", "viafile:manual.md"}
    first_head = git(upstream.bare, "rev-parse", "main")
    states = load_current(data).sources
    assert states["viagit"].kind == "remote" and states["viagit"].commit == first_head
    assert (data.state / "mirrors" / "viagit.git" / "HEAD").is_file()

    upstream.write("news.md", "# News\n\nThe upstream added a page on foghorn maintenance.\n")
    upstream.commit_and_push("news")
    assert main(["--data", str(data.root), "index", "viagit"]) == 0  # fetches first
    assert hits(data, embedder, "foghorn") == {"viagit:news.md"}
    states = load_current(data).sources
    assert states["viagit"].commit != first_head
    assert states["viafile"].commit == first_head  # not named: not fetched


def test_a_fetch_with_no_new_commit_publishes_nothing(tmp_path, upstream, daemon, monkeypatch):
    data = DataDir(tmp_path / "data")
    data.ensure()
    config = Config(sources=[SourceConfig(name="viagit", location=daemon.url(upstream.bare))])
    save_config(data, config)
    assert main(["--data", str(data.root), "index"]) == 0
    versions = list_versions(data)

    def no_model(*args, **kwargs):
        raise AssertionError("nothing changed upstream: the model must not even be loaded")

    monkeypatch.setattr(embedder_module.Embedder, "load", no_model)
    report = index_sources(data, config)
    assert report.sources[0].status == "unchanged" and not report.published
    assert list_versions(data) == versions


def test_unreachable_remote_is_reported_and_old_pages_keep_serving(
    tmp_path, upstream, daemon, embedder
):
    data = DataDir(tmp_path / "data")
    data.ensure()
    local = Workspace(tmp_path / "local")
    local.write("local.md", "# Local\n\nA local page about the tidal clock.\n")
    local.commit_and_push()
    config = Config(
        sources=[
            SourceConfig(name="viagit", location=daemon.url(upstream.bare)),
            SourceConfig(name="local", location=str(local.bare)),
        ]
    )
    save_config(data, config)
    index_sources(data, config, embedder=embedder)

    daemon.stop()
    report = index_sources(data, config, embedder=embedder)
    failed = {s.name: s for s in report.sources}["viagit"]
    assert failed.status == "failed" and "cannot fetch git://127.0.0.1" in failed.error
    assert {s.name: s.status for s in report.sources}["local"] == "unchanged"
    manifest = load_current(data)
    assert "cannot fetch" in manifest.sources["viagit"].last_error
    assert manifest.sources["local"].last_error == ""
    assert hits(data, embedder, "lighthouse") == {"viagit:manual.md"}  # still served

    holder = VersionHolder(data, engine_loader(data, embedder))
    holder.refresh()
    docs = Docs(data, embedder, holder)
    listed = {s.name: s for s in docs.list_sources().sources}
    assert "cannot fetch" in listed["viagit"].last_error and listed["viagit"].indexed
    status, health = docs.health()
    assert status == 200 and "cannot fetch" in health["sources"]["viagit"]["last_error"]
    holder.stop()

    again = index_sources(data, config, embedder=embedder)
    assert not again.published  # the same failure again changes nothing

    daemon.start()
    healed = index_sources(data, config, embedder=embedder)
    assert healed.published and load_current(data).sources["viagit"].last_error == ""


def test_fetch_errors_never_show_credentials(tmp_path):
    from docdex.index_format.config import SourceError

    url = f"http://reader:hunter2@127.0.0.1:{free_port()}/docs.git"
    with pytest.raises(SourceError) as caught:
        fetch_mirror(url, tmp_path / "mirror.git")
    assert "hunter2" not in str(caught.value) and "***@127.0.0.1" in str(caught.value)


# An ssh stand-in: it notes its arguments, then runs the remote command here, as an ssh to
# this machine would.
FAKE_SSH = """#!/bin/sh
printf '%s\\n' "$@" > "$0.args"
for command; do :; done
exec sh -c "$command"
"""


def fake_ssh(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / name
    script.write_text(FAKE_SSH)
    script.chmod(0o755)
    return script


def test_ssh_fetches_run_without_prompts_unless_git_ssh_command_says(
    tmp_path, upstream, monkeypatch
):
    url = f"ssh://docs.example.invalid{upstream.bare}"
    bin_dir = tmp_path / "bin"
    ssh = fake_ssh(bin_dir, "ssh")
    monkeypatch.delenv("GIT_SSH_COMMAND", raising=False)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    mirror = fetch_mirror(url, tmp_path / "default.git")
    assert git(mirror, "rev-parse", "main") == git(upstream.bare, "rev-parse", "main")
    args = Path(f"{ssh}.args").read_text().splitlines()
    assert args[:4] == ["-o", "BatchMode=yes", "-o", "ConnectTimeout=30"]
    assert "docs.example.invalid" in args

    own = fake_ssh(tmp_path / "own ssh", "connect")  # a command the shell must quote
    monkeypatch.setenv("GIT_SSH_COMMAND", f"'{own}' -o User=reader")
    mirror = fetch_mirror(url, tmp_path / "own.git")
    assert git(mirror, "rev-parse", "main") == git(upstream.bare, "rev-parse", "main")
    args = Path(f"{own}.args").read_text().splitlines()
    assert args[:2] == ["-o", "User=reader"] and "BatchMode=yes" not in args


def test_poller_files_requests_for_due_remote_sources(tmp_path, upstream):
    data = DataDir(tmp_path / "data")
    data.ensure()
    config = Config(
        sources=[
            SourceConfig(name="often", location=upstream.bare.as_uri(), poll_interval=60),
            SourceConfig(name="never", location=upstream.bare.as_uri(), poll_interval=0),
            SourceConfig(name="local", location=str(upstream.bare)),
        ]
    )
    save_config(data, config)
    assert due_sources(config, {}, now=1000.0) == ["often"]
    assert due_sources(config, {"often": 950.0}, now=1000.0) == []

    first = poll_once(data, now=1000.0)
    assert [(r.source, r.origin) for r in first] == [("often", "poll")]
    assert poll_once(data, now=1030.0) == []  # not due yet
    assert poll_once(data, now=1100.0) == []  # due, but the first request still waits
    assert len(pending_requests(data)) == 1 and read_stamps(data) == {"often": 1100.0}
