"""Soak: 30 minutes (quick: 60 s) of steady query load on a `docdex serve` (with its worker)
while a push through the hook arrives every 10 s; the server's memory, open descriptors and
threads at the start (after a warm-up) and at the end, p99 latency per minute, failures.

The bounds judged by: RSS at the end at most 10 % (and 30 MB) above RSS after the warm-up;
open descriptors at most 2 per segment more than at the start (a version keeps a descriptor
per segment file it reads with pread, and pushes add segments until compaction merges
them) plus 10; threads at most 4 more.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from docdex.index_format.layout import DataDir
from docdex.index_format.store import load_current
from docdex.serverproc import ServeProcess

from .harness import QueryLoad, docdex_cli, hook_installed, pushed_docs
from .rows import Row
from bench.common import bench_git, git, percentile, say

RATE = 20.0  # requests per second
PUSH_EVERY_S = 10.0
RSS_GROWTH = 0.10
RSS_SLACK_MB = 30.0


@dataclass
class Usage:
    rss_mb: float
    fds: int
    threads: int
    segments: int


def usage(pid: int, data: DataDir) -> Usage:
    status = Path(f"/proc/{pid}/status").read_text()
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    manifest = load_current(data)
    return Usage(
        rss_mb=round(int(fields["VmRSS"].split()[0]) / 1024, 1),
        fds=len(os.listdir(f"/proc/{pid}/fd")),
        threads=int(fields["Threads"]),
        segments=len(manifest.segments) if manifest else 0,
    )


def run(quick: bool, work: Path) -> list[Row]:
    duration = 60.0 if quick else 1800.0
    warm_up = 15.0 if quick else 120.0
    clone, bare = pushed_docs(work / "repo", 30_000)
    data = DataDir(work / "data")
    hook_installed(data, bare)
    say("[faults soak] first index ...")
    docdex_cli(data, "index")
    pushes = 0
    with ServeProcess(data.root, work / "serve.log", worker=True) as server:
        server.wait_serving(180)
        say(f"[faults soak] {duration:.0f} s at {RATE:.0f} requests/s, a push every 10 s ...")
        with QueryLoad(server, rate=RATE, max_s=duration + 60) as load:
            started = time.monotonic()
            start = end = None
            next_push = started + PUSH_EVERY_S
            while (now := time.monotonic()) < started + duration:
                if start is None and now >= started + warm_up:
                    start = usage(server.proc.pid, data)
                if now >= next_push:
                    pushes += 1
                    _push(clone, pushes)
                    next_push += PUSH_EVERY_S
                time.sleep(0.2)
            end = usage(server.proc.pid, data)
            load.stop()
        head = git("rev-parse", "main", cwd=bare)
        indexed = _wait_indexed(data, head)
        server.check_alive()
    return [_row(quick, load, start, end, pushes, indexed)]


def _push(clone: Path, n: int) -> None:
    page = clone / "soak" / f"page-{n % 20}.md"  # 20 pages, each edited again and again
    page.parent.mkdir(exist_ok=True)
    with open(page, "a", encoding="utf-8") as out:
        out.write(f"\n## Soak push {n}\n\nThe token zqsoak{n} arrived with push {n}.\n")
    bench_git(clone, "add", "-A")
    bench_git(clone, "commit", "-q", "-m", f"soak push {n}")
    bench_git(clone, "push", "-q", "origin", "main")


def _wait_indexed(data: DataDir, head: str, timeout: float = 300) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        manifest = load_current(data)
        if manifest and manifest.sources["docs"].commit == head:
            return True
        time.sleep(0.5)
    return False


def p99_per_minute(samples: list[tuple[float, float]]) -> list[float]:
    minutes: dict[int, list[float]] = {}
    for t, latency in samples:
        minutes.setdefault(int(t // 60), []).append(latency)
    return [round(percentile(minutes[m], 0.99) * 1000, 1) for m in sorted(minutes)]


def _row(quick, load: QueryLoad, start: Usage, end: Usage, pushes: int, indexed: bool) -> Row:
    rss_bound = max(start.rss_mb * (1 + RSS_GROWTH), start.rss_mb + RSS_SLACK_MB)
    fd_bound = start.fds + 2 * max(0, end.segments - start.segments) + 10
    broken = []
    if end.rss_mb > rss_bound:
        broken.append(f"RSS {start.rss_mb} -> {end.rss_mb} MB (bound {rss_bound:.0f})")
    if end.fds > fd_bound:
        broken.append(f"fds {start.fds} -> {end.fds} (bound {fd_bound})")
    if end.threads > start.threads + 4:
        broken.append(f"threads {start.threads} -> {end.threads}")
    if not indexed:
        broken.append("the last push was not indexed")
    minutes = p99_per_minute(load.samples)
    return Row(
        "soak",
        f"{'60 s' if quick else '30 min'} of queries at {RATE:.0f}/s, a push every 10 s",
        load.requests,
        len(load.failures) + len(broken),
        figures={
            "failed requests": len(load.failures),
            "pushes": pushes,
            "RSS MB start": start.rss_mb,
            "RSS MB end": end.rss_mb,
            "fds start": start.fds,
            "fds end": end.fds,
            "threads start": start.threads,
            "threads end": end.threads,
            "p99 ms worst minute": max(minutes, default=0.0),
        },
        notes="; ".join(broken) + ("; " if broken else "") + f"p99 ms per minute: {minutes}",
    )
