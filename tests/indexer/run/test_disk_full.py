"""A full disk while indexing: on a tmpfs shrunk to leave less room than a run needs, every
run fails with one clear sentence, CURRENT stays where it was, the run leaves no file
behind, the worker keeps the request (and runs on), and once there is room again the next
run publishes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from docdex.index_format.config import load_config
from docdex.index_format.layout import DataDir
from docdex.index_format.queue import file_request, pending_requests
from docdex.index_format.store import current_version, list_versions
from docdex.indexer.run.pipeline import index_sources
from docdex.indexer.run.storage.full_disk import NoSpace

from fixtures import build_workspace, index_workspace

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("mount") is None,
    reason="mounting a size-limited tmpfs needs root (CI runs as root)",
)
ROOM = 16 << 20
STEP = 8 << 10


@pytest.fixture
def mnt(tmp_path: Path):
    where = tmp_path / "mnt"
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={ROOM}", "tmpfs", str(where)], check=True)
    yield where
    subprocess.run(["umount", "-l", str(where)], check=False)


def resize(mnt: Path, free: int) -> None:
    """Leave `free` bytes (rounded up to pages) beyond what is in use."""
    stat = os.statvfs(mnt)
    used = (stat.f_blocks - stat.f_bfree) * stat.f_frsize
    size = -(-(used + free) // 4096) * 4096
    subprocess.run(["mount", "-o", f"remount,size={max(size, 4096)}", str(mnt)], check=True)


def docdex(data: DataDir, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "docdex.cli", "--data", str(data.root), *args]
    return subprocess.run(command, capture_output=True, text=True, check=False)


def leftovers(data: DataDir) -> list[str]:
    tmp = [
        p.name
        for folder in (data.root, data.versions, data.segments, data.text, data.pages)
        for p in folder.glob(".tmp-*")
    ]
    current = current_version(data) or 0
    return tmp + [f"version {v}" for v in list_versions(data) if v > current]


def test_every_stage_of_a_run_fails_cleanly_on_a_full_disk(tmp_path, mnt, embedder):
    ws = build_workspace(tmp_path / "repo")
    data = DataDir(mnt / "data")
    assert index_workspace(data, ws, embedder) == 1
    ws.move("guide", "handbook")  # a new segment (vectors copied), text index, page table
    ws.write("faq.md", (ws.work / "faq.md").read_text() + "\n## Disk full\n\nNo space left.\n")
    ws.commit_and_push("move the guide, add a question")
    config = load_config(data)

    failures: list[str] = []
    free = 0
    while True:  # from no room at all up to enough: each size stops the run elsewhere
        resize(mnt, free)
        try:
            report = index_sources(data, config, embedder=embedder)
        except NoSpace as exc:
            failures.append(str(exc))
            assert "\n" not in str(exc) and "no space left" in str(exc)
            assert "version 1 keeps serving" in str(exc)
            assert current_version(data) == 1
            assert leftovers(data) == [], f"with {free} bytes free"
        else:
            assert report.published and report.version == 2
            break
        free += STEP
        assert free < ROOM // 2, "the run never got enough room"
    assert len(failures) >= 4, failures  # the segment, the text index, ..., the manifest

    resize(mnt, ROOM // 2)
    assert current_version(data) == 2
    assert leftovers(data) == []


def indexed_then_moved(tmp_path: Path, mnt: Path, embedder, old: str, new: str) -> DataDir:
    """Version 1 published on the tmpfs, then a push (not yet indexed) moving `old` to `new`."""
    ws = build_workspace(tmp_path / "repo")
    data = DataDir(mnt / "data")
    index_workspace(data, ws, embedder)
    ws.move(old, new)
    ws.commit_and_push(f"move {old}")
    return data


def test_docdex_index_says_so_in_one_line(tmp_path, mnt, embedder):
    data = indexed_then_moved(tmp_path, mnt, embedder, "reference", "api")
    resize(mnt, 0)
    done = docdex(data, "index")
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1, done.stderr  # one line, no traceback
    assert done.stderr.startswith("docdex: error: no space left on the device of ")
    assert current_version(data) == 1
    assert leftovers(data) == []

    resize(mnt, ROOM // 2)
    again = docdex(data, "index")
    assert again.returncode == 0, again.stderr
    assert current_version(data) == 2


def test_the_worker_keeps_the_request_until_there_is_room(tmp_path, mnt, embedder):
    data = indexed_then_moved(tmp_path, mnt, embedder, "faq.md", "help/faq.md")
    file_request(data, "docs", origin="hook")
    resize(mnt, 0)  # not even room for the lock's pid or the failure record
    done = docdex(data, "worker", "--once")
    assert "Traceback" not in done.stderr, done.stderr
    assert "no space left on the device" in done.stderr
    assert len(pending_requests(data)) == 1  # kept for the next try
    assert current_version(data) == 1
    assert leftovers(data) == []

    resize(mnt, ROOM // 2)
    again = docdex(data, "worker", "--once")
    assert again.returncode == 0, again.stderr
    assert current_version(data) == 2
    assert pending_requests(data) == []
