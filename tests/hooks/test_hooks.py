"""The post-receive hook end to end: real bare repositories, real `git push`, the installed
hook, the worker it starts (or the one beside `docdex serve`), the real indexer."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path

import pytest

from docdex.hooks.installer import CHAINED, HookError, install_hook, uninstall_hook
from docdex.index_format import metrics
from docdex.index_format.config import Config, ConfigError, SourceConfig, load_config, save_config
from docdex.index_format.layout import DataDir
from docdex.index_format.queue import pending_requests, remove_requests
from docdex.index_format.records import Manifest
from docdex.index_format.store import load_current, load_pages
from docdex.indexer.triggers.worker import worker_pid
from docdex.serverproc import ServeProcess

from fixtures import http, wait_for
from gitrepo import Workspace, git
from pushes import push, remote_lines

ZERO = "0" * 40
IDLE_EXIT_S = 5  # hook-spawned workers in tests leave soon after the work is done


# --- helpers ---------------------------------------------------------------------------------


def head(ws: Workspace, branch: str = "main") -> str:
    return git(ws.bare, "rev-parse", f"refs/heads/{branch}")


def source_state(data: DataDir, name: str = "docs"):
    manifest = load_current(data)
    return manifest.sources.get(name) if manifest else None


def wait_indexed(data: DataDir, commit: str, timeout: float = 90) -> Manifest:
    """Until the current version has `commit` for docs and the queue is empty."""

    def done():
        state = source_state(data)
        return state and state.commit == commit and not pending_requests(data)

    wait_for(done, timeout, f"docs indexed at {commit[:12]}")
    return load_current(data)


def page_paths(data: DataDir, name: str = "docs") -> set[str]:
    state = source_state(data, name)
    return {p.path for p in load_pages(data, state.pages_file)} if state else set()


def stop_workers(data: DataDir) -> None:
    """Tests leave no worker behind (hook-spawned ones are not our children)."""
    pid = worker_pid(data)
    if pid is None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
        time.sleep(0.1)


@pytest.fixture
def repo(tmp_path):
    """A bare repo with one pushed page, a data dir, the hook installed; workers reaped."""
    ws = Workspace(tmp_path / "repo")
    ws.write("start.md", "# Start\n\nThe first page talks about the aardvark migration plan.\n")
    ws.commit()
    data = DataDir(tmp_path / "data")
    install_hook(data, ws.bare, "docs", idle_exit_s=IDLE_EXIT_S)
    yield ws, data
    stop_workers(data)


@pytest.fixture
def served(repo, tmp_path):
    """The same, with `docdex serve` and its worker running."""
    ws, data = repo
    server = ServeProcess(data.root, tmp_path / "server.log", worker=True)
    server.wait_ready()
    yield ws, data, server
    server.stop(group=False)  # the server alone: it must stop its worker itself
    wait_for(lambda: worker_pid(data) is None, 20, "the worker gone with the server")


def search_texts(server: ServeProcess, query: str) -> list[tuple[str, str]]:
    reply = http(f"{server.url}/api/search?" + urllib.parse.urlencode({"q": query, "n": 20}))
    assert reply.status in (200, 503), reply.body
    return [(h["path"], h["text"]) for h in reply.json().get("results", [])]


def found(server: ServeProcess, token: str) -> set[str]:
    return {path for path, text in search_texts(server, token) if token in text}


# --- through the server ----------------------------------------------------------------------


def test_a_push_becomes_searchable_over_mcp(served):
    ws, data, server = served
    result = push(ws.work)
    assert result.returncode == 0, result.stderr
    assert remote_lines(result) == [f"remote: docdex: queued for indexing: docs@{head(ws)[:12]}"]
    wait_indexed(data, head(ws))

    ws.write("guide/rotate.md", "# Rotating keys\n\nRun `docdex-rotate --quokka7` monthly.\n")
    ws.commit("rotate")
    assert push(ws.work).returncode == 0

    def hit():
        result = server.call_tool("search_docs", {"query": "quokka7 rotate"})
        hits = result.structured_content["results"] if not result.is_error else []
        return [h for h in hits if "--quokka7" in h["text"]]

    [first, *_] = wait_for(hit, 90, "the pushed text in search_docs")
    assert first["path"] == "guide/rotate.md" and first["commit"] == head(ws)
    health = http(f"{server.url}/health").json()
    assert health["last_ingestion"]["published"] and health["last_ingestion"]["sources"] == ["docs"]
    assert health["last_ingestion"]["chunks_embedded"] >= 1
    assert health["last_ingestion"]["rss_at_end_mb"] > 0

    before = metrics.read_last_ingestion(data).completed_at
    filed = server.call_tool("reindex", {"source": "docs"}).structured_content
    wait_for(lambda: not pending_requests(data), 60, "the reindex request taken")
    assert filed["request_id"]
    assert metrics.read_last_ingestion(data).completed_at >= before
    assert not metrics.read_last_ingestion(data).published  # nothing changed since


def _pusher(root: Path, bare: Path, n: int, commits: int, errors: list[str]) -> None:
    clone = root / f"clone{n}"
    try:
        git(root, "clone", "-q", str(bare), str(clone))
        for c in range(commits):
            (clone / f"team{n}.md").write_text(f"# Team {n}\n\nStatus token zq{n}x{c}y here.\n")
            git(clone, "add", "-A")
            git(clone, "commit", "-q", "-m", f"team {n} commit {c}")
            for _attempt in range(20):
                if push(clone, "HEAD:refs/heads/main").returncode == 0:
                    break
                git(clone, "pull", "-q", "--rebase", "origin", "main")
            else:
                errors.append(f"clone {n}: push {c} never went through")
    except AssertionError as exc:
        errors.append(f"clone {n}: {exc}")


def test_four_clones_pushing_at_once_end_with_the_final_tree(served, tmp_path):
    ws, data, server = served
    assert push(ws.work).returncode == 0
    commits, errors = 3, []
    threads = [
        threading.Thread(target=_pusher, args=(tmp_path, ws.bare, n, commits, errors))
        for n in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    final = head(ws)
    wait_indexed(data, final, timeout=120)

    tree = set(git(ws.bare, "ls-tree", "-r", "--name-only", "main").splitlines())
    assert page_paths(data) == tree == {"start.md", *(f"team{n}.md" for n in range(4))}
    served_version = load_current(data).version
    wait_for(
        lambda: http(f"{server.url}/health").json()["index_version"] == served_version,
        30,
        "the final version served",
    )
    for n in range(4):
        latest = f"zq{n}x{commits - 1}y"
        assert found(server, latest) == {f"team{n}.md"}, latest
        assert not found(server, f"zq{n}x0y")  # the old text is gone from the index


# --- through hook-spawned workers ------------------------------------------------------------


def _cycle_child(worker: int) -> int | None:
    try:
        children = Path(f"/proc/{worker}/task/{worker}/children").read_text().split()
    except OSError:
        return None
    return int(children[0]) if children else None


def _writer_pid(data: DataDir) -> int | None:
    try:
        return int((data.state / "writer.lock").read_text().strip() or 0) or None
    except (OSError, ValueError):
        return None


def test_kill_9_of_the_worker_mid_cycle_loses_nothing(repo):
    ws, data = repo
    for i in range(20):
        ws.write(f"bulk/page{i}.md", f"# Page {i}\n\n" + f"Sentence {i} about indexing. " * 40)
    ws.commit("bulk")
    assert push(ws.work).returncode == 0

    worker = wait_for(lambda: worker_pid(data), 30, "a hook-spawned worker")
    child = wait_for(lambda: _cycle_child(worker), 30, "its cycle process")
    wait_for(lambda: _writer_pid(data) == child, 60, "the cycle holding the writer lock")
    os.killpg(worker, signal.SIGKILL)  # the worker is a session leader: its cycle goes too
    wait_for(lambda: not Path(f"/proc/{child}").exists(), 10, "the cycle gone")

    assert source_state(data) is None  # nothing was published mid-cycle...
    assert [r.commit for r in pending_requests(data)] == [head(ws)]  # ...nor forgotten

    ws.write("late.md", "# Late\n\nA page pushed after the crash, about the ocelot.\n")
    ws.commit("late")
    assert push(ws.work).returncode == 0
    manifest = wait_indexed(data, head(ws), timeout=120)
    assert manifest.sources["docs"].files == 22
    assert page_paths(data) == {"start.md", "late.md", *(f"bulk/page{i}.md" for i in range(20))}


def test_branch_deletion_removes_the_pages(repo):
    ws, data = repo
    git(ws.bare, "config", "receive.denyDeleteCurrent", "ignore")  # HEAD's branch goes
    git(ws.work, "branch", "keep")
    assert push(ws.work).returncode == 0
    assert push(ws.work, "keep:refs/heads/keep").returncode == 0  # untracked: files nothing
    wait_indexed(data, head(ws))
    assert page_paths(data) == {"start.md"}

    result = push(ws.work, ":refs/heads/main")
    assert result.returncode == 0, result.stderr
    assert remote_lines(result) == [
        "remote: docdex: queued for indexing: docs(branch main deleted)"
    ]

    def deleted():
        state = source_state(data)
        return state and state.commit == "" and state.files == 0 and not pending_requests(data)

    wait_for(deleted, 90, "the pages of the deleted branch removed")
    assert "no longer exists" in source_state(data).last_error
    assert page_paths(data) == set()


# --- the hook itself -------------------------------------------------------------------------


def test_a_push_no_source_indexes_says_so_and_files_nothing(tmp_path):
    ws = Workspace(tmp_path / "repo")
    ws.write("a.md", "# A\n\nText about the tapir survey.\n")
    ws.commit()
    data = DataDir(tmp_path / "data")
    install_hook(data, ws.bare, "docs", python="/nonexistent/python")  # no Python is needed
    assert push(ws.work).returncode == 0 and filed(data) == [("docs", "refs/heads/main")]

    result = push(ws.work, "HEAD:refs/heads/feature", "HEAD:refs/tags/v1")
    assert result.returncode == 0, result.stderr
    assert remote_lines(result) == [
        "remote: docdex: branch feature, tag v1 are not indexed here: docs indexes main "
        "(HEAD's branch); run `docdex source set docs --branch feature` to index it instead"
    ]
    assert pending_requests(data) == [] and worker_pid(data) is None
    [line] = remote_lines(push(ws.work, "HEAD:refs/tags/v2"))
    assert "tag v2 is not indexed here" in line and "--ref PATTERN" in line
    [line] = remote_lines(push(ws.work, ":refs/heads/feature"))
    assert line == "remote: docdex: branch feature (deleted) is not indexed here: docs indexes " \
        "main (HEAD's branch)"  # fmt: skip
    assert git(ws.bare, "symbolic-ref", "HEAD") == "refs/heads/main"  # only a first push moves it


def test_a_tracked_branch_other_than_head(tmp_path):
    ws = Workspace(tmp_path / "repo")
    ws.write("a.md", "# A\n\nSome text about the pangolin registry.\n")
    ws.commit()
    data = DataDir(tmp_path / "data")
    data.ensure()
    subprocess.run(
        [sys.executable, "-m", "docdex.cli", "--data", str(data.root), "source", "add", "docs",
         str(ws.bare), "--branch", "release"],
        check=True,
        capture_output=True,
    )  # fmt: skip
    install_hook(data, ws.bare, "docs", python="/nonexistent/python")  # no worker: see the queue
    [line] = remote_lines(push(ws.work))  # a first push, but docdex cannot change the source
    assert line.startswith("remote: docdex: branch main is not indexed here: docs indexes release")
    assert "could not switch docs to main: /nonexistent/python is gone" in line
    assert pending_requests(data) == []
    result = push(ws.work, "HEAD:refs/heads/release")
    assert [(r.source, r.ref, r.origin) for r in pending_requests(data)] == [
        ("docs", "refs/heads/release", "hook")
    ]
    assert "docs@" in remote_lines(result)[0]


# --- a repository's first push -----------------------------------------------------------------


@pytest.fixture
def fresh(tmp_path):
    """make(**settings): a bare repository as `git init --bare` makes one where
    init.defaultBranch is unset (HEAD names master, which nobody pushed), a clone on main
    with one page, the hook installed for the source "docs" with `settings`."""
    made: list[DataDir] = []

    def make(**settings) -> tuple[Workspace, DataDir]:
        ws = Workspace(tmp_path / "repo")
        shutil.rmtree(ws.bare)
        git(ws.bare.parent, "-c", "init.defaultBranch=master", "init", "-q", "--bare", str(ws.bare))
        ws.write("start.md", "# Start\n\nThe first page talks about the aardvark migration plan.\n")
        ws.commit()
        data = DataDir(tmp_path / "data")
        install_hook(data, ws.bare, "docs", idle_exit_s=IDLE_EXIT_S, settings=settings)
        made.append(data)
        return ws, data

    yield make
    for data in made:
        stop_workers(data)


def test_the_first_push_to_a_fresh_repository_points_head_at_it(fresh):
    ws, data = fresh()
    assert git(ws.bare, "symbolic-ref", "HEAD") == "refs/heads/master"
    result = push(ws.work)
    assert result.returncode == 0, result.stderr
    assert remote_lines(result) == [
        f"remote: docdex: queued for indexing: docs@{head(ws)[:12]}; HEAD named master, a "
        "branch nobody pushed: it names main now"
    ]
    assert git(ws.bare, "symbolic-ref", "HEAD") == "refs/heads/main"
    wait_indexed(data, head(ws))
    found = cli(data, "search", "aardvark migration plan", "--json").stdout
    [first, *_] = json.loads(found)["results"]
    assert first["path"] == "start.md" and "aardvark" in first["text"]

    result = push(ws.work, "HEAD:refs/heads/feature")  # no first push any more
    assert remote_lines(result) == [
        "remote: docdex: branch feature is not indexed here: docs indexes main (HEAD's "
        "branch); run `docdex source set docs --branch feature` to index it instead"
    ]
    assert git(ws.bare, "symbolic-ref", "HEAD") == "refs/heads/main"
    assert pending_requests(data) == []


def test_a_source_whose_branch_a_fresh_repository_lacks_takes_the_first_pushed(fresh):
    ws, data = fresh(branch="release")
    result = push(ws.work)
    assert result.returncode == 0, result.stderr
    assert remote_lines(result) == [
        f"remote: docdex: queued for indexing: docs@{head(ws)[:12]}; docs indexed release, a "
        "branch this repository lacks: it indexes main now (docdex.toml changed)"
    ]
    assert load_config(data).source("docs").branch == "main"
    assert "docs=refs/heads/main" in (ws.bare / "hooks" / "post-receive").read_text()
    assert git(ws.bare, "symbolic-ref", "HEAD") == "refs/heads/master"  # no source follows it
    wait_indexed(data, head(ws))
    assert page_paths(data) == {"start.md"}


def test_a_repository_already_a_source_keeps_its_name(tmp_path):
    ws = Workspace(tmp_path / "repo")
    data = DataDir(tmp_path / "data")
    data.ensure()
    save_config(data, Config(sources=[SourceConfig(name="handbook", location=str(ws.bare))]))
    done = install_hook(data, ws.bare, python="/nonexistent/python")
    assert (done.source, done.registered) == ("handbook", False)
    assert [s.name for s in load_config(data).sources] == ["handbook"]
    assert [s.name for s in done.tracked] == ["handbook"]
    with pytest.raises(HookError, match="already the source 'handbook'"):
        install_hook(data, ws.bare, "docs", python="/nonexistent/python")
    assert [s.name for s in load_config(data).sources] == ["handbook"]


def test_an_existing_hook_is_chained_and_restored_byte_for_byte(repo, tmp_path):
    ws, data = repo
    hook = ws.bare / "hooks" / "post-receive"
    uninstall_hook(ws.bare)
    marker = tmp_path / "marker"
    original = f'#!/bin/sh\n# the team\'s own hook\ncat >> "{marker}"\nexit 3\n'.encode()
    hook.write_bytes(original)
    os.chmod(hook, 0o750)

    install_hook(data, ws.bare, idle_exit_s=IDLE_EXIT_S)
    first = hook.read_bytes()
    install_hook(data, ws.bare, idle_exit_s=IDLE_EXIT_S)  # twice: same result
    assert hook.read_bytes() == first and b"docdex post-receive hook" in first
    chained = hook.with_name(CHAINED)
    assert chained.read_bytes() == original
    assert [s.name for s in load_config(data).sources] == ["docs"]

    result = push(ws.work)
    assert result.returncode == 0, result.stderr  # post-receive cannot fail a push
    assert marker.read_text() == f"{ZERO} {head(ws)} refs/heads/main\n"  # same stdin
    assert len(pending_requests(data)) <= 1 and remote_lines(result)

    ws.write("b.md", "# B\n\nMore.\n")
    ws.commit()
    status = subprocess.run(
        [str(hook)],
        cwd=ws.bare,
        input=f"{head(ws)} {ZERO} refs/heads/other\n",
        capture_output=True,
        text=True,
        check=False,
    )
    assert status.returncode == 3  # the chained hook's exit status is ours

    assert uninstall_hook(ws.bare).restored
    assert hook.read_bytes() == original
    assert stat.S_IMODE(hook.stat().st_mode) == 0o750
    assert not chained.exists()
    assert not uninstall_hook(ws.bare).removed  # again: nothing to do


def test_a_hook_that_cannot_reach_docdex_says_so_and_the_push_succeeds(tmp_path):
    ws = Workspace(tmp_path / "repo")
    ws.write("a.md", "# A\n\nText about the narwhal.\n")
    sha = ws.commit()
    data = DataDir(tmp_path / "data")
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").symlink_to(sys.executable)
    install_hook(data, ws.bare, python=str(venv / "python"))
    (venv / "python").unlink()  # the venv moved away

    result = push(ws.work)
    assert result.returncode == 0 and head(ws) == sha
    [line] = remote_lines(result)
    assert "cannot start the indexer" in line and str(venv / "python") in line
    assert len(pending_requests(data)) == 1  # filed all the same: the next worker takes it

    data.marker.unlink()  # now the data directory is gone too
    ws.write("b.md", "# B\n\nMore.\n")
    sha = ws.commit()
    result = push(ws.work)
    assert result.returncode == 0 and head(ws) == sha
    [line] = remote_lines(result)
    assert f"data directory {data.root} is missing" in line


def test_install_checks_its_arguments(tmp_path):
    ws = Workspace(tmp_path / "repo")
    data = DataDir(tmp_path / "data")
    with pytest.raises(HookError, match="not a bare repository"):
        install_hook(data, ws.work)
    with pytest.raises(ConfigError, match="invalid source name"):
        install_hook(data, ws.bare, "bad name")
    done = install_hook(data, ws.bare)
    assert done.source == "docs" and done.registered  # docs.git -> docs
    assert not install_hook(data, ws.bare).registered
    other = Workspace(tmp_path / "other")
    with pytest.raises(HookError, match="already exists for"):
        install_hook(data, other.bare, "docs")
    cli = subprocess.run(
        [sys.executable, "-m", "docdex.cli", "--data", str(data.root), "hook", "install",
         str(other.bare), "--source", "other"],
        capture_output=True,
        text=True,
        check=True,
    )  # fmt: skip
    assert "installed" in cli.stdout and "other (HEAD branch)" in cli.stdout


def test_hook_install_takes_source_adds_options_and_says_the_same(tmp_path):
    ws = Workspace(tmp_path / "repo")
    data = tmp_path / "data"
    command = [sys.executable, "-m", "docdex.cli", "--data", str(data)]
    hooked = subprocess.run(
        [*command, "hook", "install", str(ws.bare), "--description", "the team's guide",
         "--include", "guide/**/*.md", "--exclude", "guide/drafts/**", "--branch", "main"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    [source] = load_config(DataDir(data)).sources
    assert (source.description, source.branch) == ("the team's guide", "main")
    assert source.include == ["guide/**/*.md"]
    assert source.exclude[-1:] == ["guide/drafts/**"]  # after the default excludes, if any
    other = Workspace(tmp_path / "other")
    added = subprocess.run(
        [*command, "source", "add", "other", str(other.bare)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    said = hooked.stdout.splitlines()[0]
    assert said == f"added source docs (bare: {ws.bare.resolve()})"
    assert added.stdout.startswith(f"added source other (bare: {other.bare.resolve()})")


# --- `docdex source set` keeps an installed hook current ---------------------------------------


def cli(data: DataDir, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "docdex.cli", "--data", str(data.root), *args],
        capture_output=True,
        text=True,
        check=True,
    )


def filed(data: DataDir) -> list[tuple[str, str]]:
    """The requests the hook filed since last asked (taken off the queue)."""
    requests = pending_requests(data)
    remove_requests(data, requests)
    return sorted((r.source, r.ref) for r in requests)


def test_source_set_rewrites_the_hook_so_a_new_branch_is_indexed(tmp_path):
    ws = Workspace(tmp_path / "repo")
    ws.write("a.md", "# A\n\nText about the capybara ledger.\n")
    ws.commit()
    hook = ws.bare / "hooks" / "post-receive"
    marker = tmp_path / "marker"
    own = f'#!/bin/sh\ncat >> "{marker}"\n'.encode()
    hook.write_bytes(own)
    os.chmod(hook, 0o755)
    data = DataDir(tmp_path / "data")
    install_hook(data, ws.bare, "docs", python="/nonexistent/python", idle_exit_s=7)  # no worker
    assert push(ws.work).returncode == 0 and filed(data) == [("docs", "refs/heads/main")]

    changed = cli(data, "source", "set", "docs", "--branch", "release", "--ref", "v*").stdout
    assert f"rewrote the hook {hook}: pushes index docs (release + refs v*)" in changed
    script = hook.read_text()
    assert "DOCDEX_PYTHON=/nonexistent/python" in script and "DOCDEX_IDLE_EXIT=7" in script
    assert hook.with_name(CHAINED).read_bytes() == own  # the earlier hook, as it was

    ws.write("b.md", "# B\n\nMore about the capybara ledger.\n")
    ws.commit()
    assert push(ws.work).returncode == 0 and filed(data) == []  # main is no longer tracked
    git(ws.work, "tag", "v1")
    result = push(ws.work, "HEAD:refs/heads/release", "refs/tags/v1")
    assert result.returncode == 0, result.stderr
    assert filed(data) == [("docs", "refs/heads/release"), ("docs", "refs/tags/v1")]
    assert len(marker.read_text().splitlines()) == 4  # every pushed ref reached the earlier hook

    described = cli(data, "source", "set", "docs", "--description", "the ledger").stdout
    assert "hook" not in described and hook.read_text() == script  # nothing it matches changed


def test_source_set_moving_a_source_rewrites_both_hooks(tmp_path):
    old, new = Workspace(tmp_path / "old"), Workspace(tmp_path / "new")
    for ws in (old, new):
        ws.write("a.md", "# A\n\nText about the wombat archive.\n")
        ws.commit()
    data = DataDir(tmp_path / "data")
    install_hook(data, old.bare, "docs", python="/nonexistent/python")
    install_hook(data, new.bare, "handbook", python="/nonexistent/python")

    moved = cli(data, "source", "set", "docs", "--location", str(new.bare)).stdout
    assert f"rewrote the hook {old.bare / 'hooks' / 'post-receive'}: pushes index nothing" in moved
    assert f"`docdex hook uninstall {old.bare}`" in moved
    tracked = "pushes index docs (HEAD branch), handbook (HEAD branch)"
    assert f"rewrote the hook {new.bare / 'hooks' / 'post-receive'}: {tracked}" in moved
    assert push(old.work).returncode == 0 and filed(data) == []
    assert push(new.work).returncode == 0
    assert filed(data) == [("docs", "refs/heads/main"), ("handbook", "refs/heads/main")]


def test_source_set_leaves_the_hook_of_another_data_directory_alone(tmp_path):
    ws = Workspace(tmp_path / "repo")
    theirs, ours = DataDir(tmp_path / "theirs"), DataDir(tmp_path / "ours")
    install_hook(theirs, ws.bare, "docs", python="/nonexistent/python")
    hook = (ws.bare / "hooks" / "post-receive").read_bytes()
    cli(ours, "source", "add", "docs", str(ws.bare))
    changed = cli(ours, "source", "set", "docs", "--branch", "release").stdout
    assert "hook" not in changed
    assert (ws.bare / "hooks" / "post-receive").read_bytes() == hook


def test_source_add_and_remove_keep_an_installed_hook_current(tmp_path):
    ws = Workspace(tmp_path / "repo")
    ws.write("a.md", "# A\n\nText about the numbat registry.\n")
    ws.commit()
    hook = ws.bare / "hooks" / "post-receive"
    data = DataDir(tmp_path / "data")
    install_hook(data, ws.bare, "docs", python="/nonexistent/python")  # no worker
    added = cli(data, "source", "add", "mirror", str(ws.bare)).stdout
    both = "pushes index docs (HEAD branch), mirror (HEAD branch)"
    assert f"rewrote the hook {hook}: {both}" in added
    assert push(ws.work).returncode == 0
    assert filed(data) == [("docs", "refs/heads/main"), ("mirror", "refs/heads/main")]
    removed = cli(data, "source", "remove", "docs").stdout
    assert f"rewrote the hook {hook}: pushes index mirror (HEAD branch)" in removed
    ws.write("b.md", "# B\n\nMore about the numbat registry.\n")
    ws.commit()
    assert push(ws.work).returncode == 0 and filed(data) == [("mirror", "refs/heads/main")]
    gone = cli(data, "source", "remove", "mirror").stdout
    assert "pushes index nothing" in gone and f"`docdex hook uninstall {ws.bare}`" in gone
