"""The post-receive hook's cost to a push, and how long a push takes to become searchable.

Both run on the markdown that ships with docdex (README, docs/, FORMAT.md), so they need no
shared corpus: the push overhead does not depend on the repository's size, only on what
the hook does, and push-to-searchable is dominated by one indexing cycle's fixed costs.
The data directory starts with the index the last run's first push made (kept in the bench
cache), so that push (not measured) copies vectors instead of embedding every page again.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from docdex.demo import shipped_docs
from docdex.hooks.installer import install_hook
from docdex.index_format import metrics
from docdex.index_format.layout import DataDir
from docdex.index_format.queue import pending_requests
from docdex.indexer.triggers.worker import worker_pid
from docdex.serverproc import ServeProcess

from bench.common import (
    CACHE,
    SEEDS,
    Figure,
    bench_git,
    first_parent_commits,
    fresh_bare,
    keep_seed,
    median,
    percentile,
    say,
    seed_index,
    source_repo,
    work_repo,
    write_results,
)

OVERHEAD_PUSHES = 20
SEARCHABLE_PUSHES = 10
TARGET_OVERHEAD_MS = 100
RUSTC_PUSHES = 50
RUSTC_WAIT_S = 120
SEED = SEEDS / "hooks-docs"  # the index of the shipped docs the last run's first push made


def bench_push_overhead() -> list[Figure]:
    with tempfile.TemporaryDirectory(
        prefix="docdex-bench-hooks-", ignore_cleanup_errors=True
    ) as tmp:
        root = Path(tmp)
        data = DataDir(root / "data")
        try:
            overhead, overhead_details = _push_overhead(root, data)
            searchable, searchable_details = _push_to_searchable(root, data)
        finally:
            _stop_worker(data)
    figures = overhead + searchable
    write_results("hooks", figures, {**overhead_details, **searchable_details})
    return figures


# --- push with vs without the hook ---------------------------------------------------------


def _push_overhead(root: Path, data: DataDir) -> tuple[list[Figure], dict]:
    plain = work_repo(root / "plain", shipped_docs())
    hooked = work_repo(root / "hooked", shipped_docs())
    seeded = seed_index(data.root, SEED)
    install_hook(data, hooked.parent / "origin.git", "docs")
    vectors = "the last run's vectors" if seeded else "all embedded"
    say(f"[hooks] first push and index of the hooked repository ({vectors}) ...")
    _push(hooked)
    _wait_idle(data)
    keep_seed(data.root, SEED)
    timings: dict[str, list[float]] = {"plain": [], "hooked": []}
    say(f"[hooks] {OVERHEAD_PUSHES} pushes each, with and without the hook, interleaved ...")
    for n in range(OVERHEAD_PUSHES):
        order = [("plain", plain), ("hooked", hooked)]
        for name, work in order if n % 2 == 0 else reversed(order):
            _commit(work, "README.md", f"\nPush {n}.\n")
            timings[name].append(_push(work))
    _wait_idle(data)
    diff_ms = (median(timings["hooked"]) - median(timings["plain"])) * 1000
    name = "post-receive hook"
    figures = [
        Figure(name, "push without hook (median)", _ms(median(timings["plain"])), "ms"),
        Figure(name, "push with hook (median)", _ms(median(timings["hooked"])), "ms"),
        Figure(
            name,
            f"push overhead (median, n={OVERHEAD_PUSHES})",
            round(diff_ms, 1),
            "ms",
            f"<= {TARGET_OVERHEAD_MS}",
            diff_ms <= TARGET_OVERHEAD_MS,
        ),
        Figure(name, "push without hook (p95)", _ms(percentile(timings["plain"], 0.95)), "ms"),
        Figure(name, "push with hook (p95)", _ms(percentile(timings["hooked"], 0.95)), "ms"),
    ]
    details = {"push_seconds": timings, "files": len(shipped_docs()), "seeded": seeded}
    return figures, details


# --- push to searchable --------------------------------------------------------------------


def _push_to_searchable(root: Path, data: DataDir) -> tuple[list[Figure], dict]:
    work = root / "hooked" / "work"
    say(f"[hooks] push-to-searchable over {SEARCHABLE_PUSHES} pushes through `docdex serve` ...")
    seconds, cycles = [], []
    with ServeProcess(data.root, root / "serve.log", worker=True) as server:
        server.wait_ready(180)
        for n in range(SEARCHABLE_PUSHES):
            token = f"zqbench{n}x{os.getpid()}"
            _commit(work, f"bench/page{n}.md", f"# Bench page {n}\n\nThe token {token} here.\n")
            started = time.perf_counter()
            _push(work)
            _wait(lambda t=token: _found(server, t), 300, f"token {token}")
            seconds.append(time.perf_counter() - started)
            _wait_idle(data)
            ingestion = metrics.read_last_ingestion(data)
            cycles.append(ingestion.duration_s if ingestion else float("nan"))
    name = "push to searchable"
    figures = [
        Figure(name, f"median (n={SEARCHABLE_PUSHES})", round(median(seconds), 2), "s"),
        Figure(name, "p95", round(percentile(seconds, 0.95), 2), "s"),
        Figure(name, "indexing cycle (median)", round(median(cycles), 2), "s"),
    ]
    return figures, {"searchable_seconds": seconds, "cycle_seconds": cycles}


# --- push to searchable on rustc-dev-guide -------------------------------------------------


def bench_rustc_push_to_searchable() -> list[Figure]:
    """Replay the last RUSTC_PUSHES first-parent commits of rustc-dev-guide through the hook
    into a `docdex serve` with its worker; time each push until /health reports its commit."""
    load_start = os.getloadavg()
    commits = first_parent_commits("rustc")
    base, replay = commits[-RUSTC_PUSHES - 1], commits[-RUSTC_PUSHES:]
    src = source_repo("rustc")
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(
        prefix="hooks-rustc-", dir=CACHE, ignore_cleanup_errors=True
    ) as tmp:
        root = Path(tmp)
        data = DataDir(root / "data")
        bare = fresh_bare("rustc", base, root)
        try:
            _cli(data, "source", "add", "rustc", str(bare), "--branch", "main")
            say(f"[hooks-rustc] initial index of rustc-dev-guide at {base[:10]} (not measured) ...")
            started = time.perf_counter()
            _cli(data, "index")
            initial_s = time.perf_counter() - started
            install_hook(data, bare, "rustc")
            seconds, timeouts = _replay(root, data, src, bare, replay)
        finally:
            _stop_worker(data)
    load_end = os.getloadavg()
    name = "push to searchable (rustc-dev-guide)"
    figures = [
        Figure(name, f"median (n={len(seconds)})", round(median(seconds), 2), "s"),
        Figure(name, "p95", round(percentile(seconds, 0.95), 2), "s"),
        Figure(name, f"timeouts (> {RUSTC_WAIT_S} s)", len(timeouts), ""),
    ]
    details = {
        "corpus": "rustc",
        "base_commit": base,
        "pushes": len(replay),
        "searchable_seconds": seconds,
        "timed_out_commits": timeouts,
        "initial_index_seconds": round(initial_s, 1),
        "poll_interval_s": 0.05,
        "loadavg_start": load_start,
        "loadavg_end": load_end,
        "cpus": os.cpu_count(),
    }
    write_results("hooks-rustc", figures, details)
    return figures


def _replay(
    root: Path, data: DataDir, src: Path, bare: Path, replay: list[str]
) -> tuple[list[float], list[str]]:
    seconds: list[float] = []
    timeouts: list[str] = []
    with ServeProcess(data.root, root / "serve.log", worker=True) as server:
        server.wait_serving(180)
        for n, sha in enumerate(replay):
            started = time.perf_counter()
            bench_git(src, "push", "-q", "--force", str(bare), f"{sha}:refs/heads/main")
            deadline = time.monotonic() + RUSTC_WAIT_S
            while _served_commit(server, "rustc") != sha:
                if time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            else:
                seconds.append(time.perf_counter() - started)
                say(f"[hooks-rustc] {n + 1}/{len(replay)} {sha[:10]} {seconds[-1]:.2f} s")
                continue
            timeouts.append(sha)
            say(f"[hooks-rustc] {n + 1}/{len(replay)} {sha[:10]} timed out")
    return seconds, timeouts


def _served_commit(server: ServeProcess, source: str) -> str | None:
    health = server.health() or {}
    return (health.get("sources") or {}).get(source, {}).get("commit")


def _cli(data: DataDir, *args: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "docdex.cli", "--data", str(data.root), *args],
        check=True,
        capture_output=True,
    )


# --- helpers -------------------------------------------------------------------------------


def _commit(work: Path, path: str, text: str) -> None:
    target = work / path
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "a", encoding="utf-8") as f:
        f.write(text)
    bench_git(work, "add", "-A")
    bench_git(work, "commit", "-q", "-m", "change")


def _push(work: Path) -> float:
    started = time.perf_counter()
    bench_git(work, "push", "-q", "origin", "main")
    return time.perf_counter() - started


def _wait_idle(data: DataDir, timeout: float = 600) -> None:
    _wait(lambda: not pending_requests(data), timeout, "an empty queue")


def _wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


def _found(server: ServeProcess, token: str) -> bool:
    answer = server.get("/api/search", {"q": token, "n": 3})[1] or {}
    return any(token in hit["text"] for hit in answer.get("results", []))


def _stop_worker(data: DataDir) -> None:
    pid = worker_pid(data) if data.state.is_dir() else None
    if pid is not None:
        os.kill(pid, signal.SIGTERM)
        _wait(lambda: not Path(f"/proc/{pid}").exists(), 30, f"worker {pid} to stop")


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


if __name__ == "__main__":
    from .__main__ import print_table

    print_table(bench_push_overhead())
