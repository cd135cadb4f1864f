"""Disk full: `docdex index` on a tmpfs sized so that ENOSPC hits while it writes
segments, the text index, page tables, the manifest or CURRENT, with a `docdex serve`
reading that data directory and a query client throughout.

Each attempt pushes a change (a folder of pages renamed back and forth: a new segment of
copied vectors, the text index re-adding those pages, a page table, a manifest), runs it
once on a scratch copy of the data directory (on a tmpfs of its own, so the accounting is
the same) with bench/faults/stopper.py tracing the bytes in use before each publish, then
shrinks the real filesystem to what is in use plus a point inside the aimed stage. The run
must fail with one line on stderr saying the disk is full, CURRENT must not move and must
verify, the server must answer from the previous version, nothing of the run may be left,
and once the filesystem is grown again the next run must publish.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from docdex.index_format.layout import DataDir
from docdex.index_format.queue import file_request, pending_requests
from docdex.index_format.store import current_version, list_versions
from docdex.serverproc import ServeProcess

from .harness import QueryLoad, docdex_cli, pushed_docs, verify_problems, write_config
from .rows import Row
from .stopper import TRACE
from bench.common import bench_git, say

ROOM = 64 << 20  # the filesystem's size when space "returns"
STAGES = {  # stage -> the publish that ends it (stopper.REPLACE_POINTS's folder)
    "segments": "segments",
    "text index": "text",
    "page tables": "pages",
    "manifest": "versions",
    "CURRENT": "CURRENT",
}
PAGE = 4096
WHAT = {
    "CURRENT": "ENOSPC while writing CURRENT",
    "worker": "ENOSPC with no room at all, under `docdex worker` (hook request)",
}


@dataclass
class Attempt:
    stage: str  # aimed at
    free: int  # bytes left free when the run started
    hit: str = ""  # the stage it failed in: the one whose publish it did not reach
    failed_cleanly: bool = False
    error: str = ""
    problems: str = ""


def run(quick: bool, work: Path) -> list[Row]:
    if os.geteuid() != 0:
        return [Row("disk-full", "ENOSPC while indexing", 0, 0, notes="needs root (tmpfs)")]
    rounds = 1 if quick else 3
    with tmpfs(work / "mnt") as mnt, tmpfs(work / "trace") as scratch:
        scenario = DiskFull(work, mnt, scratch)
        with ServeProcess(scenario.data.root, work / "serve.log") as server:
            server.wait_serving(180)
            with QueryLoad(server, rate=10) as load:
                stages = [s for s in STAGES if not quick or s != "CURRENT"]
                attempts = [scenario.attempt(s) for _ in range(rounds) for s in stages]
                attempts += [scenario.worker_attempt() for _ in range(rounds)]
                load.stop()
    return _rows(attempts, load)


class DiskFull:
    def __init__(self, work: Path, mnt: Path, scratch: Path) -> None:
        self.clone, bare = pushed_docs(work / "repo", 30_000)
        self.mnt, self.scratch = mnt, scratch
        self.data = DataDir(mnt / "data")
        write_config(self.data, {"docs": bare})
        say("[faults disk-full] first index ...")
        _check(docdex_cli(self.data, "index"))
        self.moves = 0

    def push(self) -> None:
        """Rename the docs/ folder (and back, the next time)."""
        old, new = ("docs", "archive") if self.moves % 2 == 0 else ("archive", "docs")
        self.moves += 1
        bench_git(self.clone, "mv", old, new)
        bench_git(self.clone, "commit", "-q", "-m", f"move {old} to {new}")
        bench_git(self.clone, "push", "-q", "origin", "main")

    def stage_bounds(self) -> tuple[dict[str, tuple[int, int]], list[str]]:
        """Per stage, the bytes the run has written when the stage starts and ends, from a
        traced run of the same push on a copy of the data directory; and the stage of each
        publish in order."""
        copy = DataDir(self.scratch / "data")
        shutil.rmtree(copy.root, ignore_errors=True)
        shutil.copytree(self.data.root, copy.root)
        start = _used(self.scratch)
        done = traced_index(copy)
        _check(done)
        bounds, begin, order = {}, 0, []
        for where, used in _trace(done.stderr):
            stage = next(s for s, folder in STAGES.items() if folder == where)
            order.append(stage)
            first = bounds.get(stage, (begin, 0))[0]  # another segment: the stage goes on
            bounds[stage] = (first, used - start)
            begin = used - start
        return bounds, order

    def attempt(self, stage: str) -> Attempt:
        self.push()
        bounds, order = self.stage_bounds()
        low, high = bounds[stage]
        free = _pages(low + max(PAGE, (high - low) // 2)) if stage != "CURRENT" else _pages(low)
        before = current_version(self.data)
        attempt = Attempt(stage, free)
        resize(self.mnt, _used(self.mnt) + free)
        try:
            done = traced_index(self.data)
        finally:
            resize(self.mnt, ROOM)
        attempt.error = _error_lines(done.stderr)
        published_before_failure = len(_trace(done.stderr))
        attempt.hit = (
            order[published_before_failure] if published_before_failure < len(order) else "none"
        )
        published = current_version(self.data)
        problems = []
        if done.returncode != 1 or not _one_line_full(attempt.error):
            problems.append(f"exit {done.returncode}, stderr {attempt.error[:200]!r}")
        if published != before:
            problems.append(f"CURRENT moved from {before} to {published}")
        problems += verify_problems(self.data, published) or []
        problems += _debris(self.data)
        again = docdex_cli(self.data, "index")
        if again.returncode != 0 or current_version(self.data) == before:
            problems.append(f"the run after space returned did not publish: {again.stderr[-200:]}")
        attempt.failed_cleanly = not problems
        attempt.problems = "; ".join(problems)
        if problems:
            say(f"[faults disk-full] {stage}: {attempt.problems}")
        return attempt

    def worker_attempt(self) -> Attempt:
        """No room at all, under the worker: it must keep the request and run the next try."""
        self.push()
        file_request(self.data, "docs", origin="hook")
        before = current_version(self.data)
        attempt = Attempt("worker", 0, hit="worker")
        resize(self.mnt, _used(self.mnt))
        try:
            done = docdex_cli(self.data, "worker", "--once")
        finally:
            resize(self.mnt, ROOM)
        attempt.error = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
        problems = []
        if "Traceback" in done.stderr or "no space left" not in done.stderr:
            problems.append(f"worker stderr: {done.stderr[-200:]!r}")
        if len(pending_requests(self.data)) != 1:
            problems.append("the request left the queue")
        if current_version(self.data) != before:
            problems.append("CURRENT moved")
        problems += _debris(self.data)
        again = docdex_cli(self.data, "worker", "--once")
        if again.returncode != 0 or current_version(self.data) == before:
            problems.append(f"the next try did not publish: {again.stderr[-200:]}")
        if pending_requests(self.data):
            problems.append("a request stayed queued after the next try")
        attempt.failed_cleanly = not problems
        attempt.problems = "; ".join(problems)
        return attempt


def traced_index(data: DataDir) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "bench.faults.stopper", "trace", "0", "--", "cli"]
    command += ["--data", str(data.root), "index"]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)


@contextlib.contextmanager
def tmpfs(where: Path) -> Iterator[Path]:
    where.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={ROOM}", "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def resize(mnt: Path, size: int) -> None:
    size = max(_pages(size), PAGE)
    subprocess.run(["mount", "-o", f"remount,size={size}", str(mnt)], check=True)


def _used(mnt: Path) -> int:
    stat = os.statvfs(mnt)
    return (stat.f_blocks - stat.f_bfree) * stat.f_frsize


def _pages(n: int) -> int:
    return -(-n // PAGE) * PAGE


def _check(done: subprocess.CompletedProcess) -> None:
    if done.returncode != 0:
        raise RuntimeError(f"docdex index failed: {done.stderr.strip()[-300:]}")


def _trace(stderr: str) -> list[tuple[str, int]]:
    """(folder, bytes in use) of each publish a traced run reached."""
    lines = [line.split() for line in stderr.splitlines() if line.startswith(TRACE)]
    return [(where, int(used)) for _tag, where, used in lines]


def _error_lines(stderr: str) -> str:
    return "\n".join(line for line in stderr.splitlines() if not line.startswith(TRACE)).strip()


def _one_line_full(error: str) -> bool:
    return "\n" not in error and error.startswith("docdex: error: no space left")


def _debris(data: DataDir) -> list[str]:
    """What a failed run may not leave: temporary files, versions newer than CURRENT."""
    current = current_version(data) or 0
    left = [v for v in list_versions(data) if v > current]
    tmp = [
        p.relative_to(data.root).as_posix()
        for folder in (data.segments, data.text, data.pages, data.versions, data.root)
        for p in folder.glob(".tmp-*")
    ]
    return [f"left behind: {', '.join(tmp[:3])}"] * bool(tmp) + [
        f"unpublished versions left: {left}"
    ] * bool(left)


def _rows(attempts: list[Attempt], load: QueryLoad) -> list[Row]:
    rows = []
    for stage in [*STAGES, "worker"]:
        mine = [a for a in attempts if a.hit == stage]
        if not mine:
            continue
        aimed = [a.stage for a in mine if a.stage != stage]
        rows.append(
            Row(
                "disk-full",
                WHAT.get(stage, f"ENOSPC while writing the {stage}"),
                len(mine),
                sum(not a.failed_cleanly for a in mine),
                figures={
                    "free KB at start (median)": sorted(a.free for a in mine)[len(mine) // 2] / 1024
                },
                notes="; ".join(a.problems for a in mine if a.problems)[:300]
                or f"stderr: {mine[0].error[:160]}"
                + (f" (aimed at {', '.join(aimed)})" if aimed else ""),
            )
        )
    rows.append(load.row("disk-full"))
    return rows
