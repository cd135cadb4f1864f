"""Watch mode: from saving a file in a checkout to finding it with search_docs over MCP.

Real processes only: `docdex watch` on an apm-docs checkout and `docdex serve` beside it;
each edit appends a sentence with a word nobody else uses to a page, saves it, then asks
the server (one MCP session) until a hit carries the word. The data directory starts with
the index `index-apm` left, when there is one: the daemon's first run (not measured) then
copies the vectors of the unchanged chunks instead of embedding the whole checkout again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mcp import Client

from docdex.serverproc import ServeProcess, mcp_client

from .indexing import corpus_index
from bench.common import (
    Figure,
    git,
    median,
    percentile,
    say,
    seed_index,
    source_repo,
    write_results,
)

EDITS = 15
TARGET_MEDIAN_S = 2.0
TIMEOUT_S = 60.0
POLL_S = 0.02
JSON_LOGS = {"DOCDEX_LOG_FORMAT": "json"}


def bench_watch_latency(corpus: str = "apm", edits: int = EDITS) -> list[Figure]:
    with tempfile.TemporaryDirectory(prefix="docdex-watch-") as tmp:
        work = Path(tmp)
        checkout = work / "checkout"
        git("clone", "-q", "-b", "main", str(source_repo(corpus)), str(checkout))
        data = work / "data"
        seeded = seed_index(data, corpus_index(corpus))
        _cli(data, "source", "add", corpus, str(checkout))
        pages = sorted(checkout.rglob("*.md"))[:5]
        with _process(data, work / "watch.log", "watch", corpus) as watcher:
            _wait_for_worktree_index(data, corpus, watcher)
            with ServeProcess(data, work / "serve.log", env=JSON_LOGS) as server:
                server.wait_serving(120)
                latencies = asyncio.run(_measure(server.mcp_url, pages, edits))
        cycles = _cycle_times(work / "watch.log")[1:]  # the first is the initial index
    figures = _figures(corpus, latencies, cycles)
    details = {
        "corpus": corpus,
        "seeded": seeded,
        "edits": edits,
        "latencies_s": [round(x, 3) for x in latencies],
        "cycles_s": cycles,
    }
    write_results("watch", figures, details)
    return figures


def _cycle_times(log: Path) -> list[float]:
    """took_s of the watch daemon's indexing runs that published something."""
    times = []
    for line in log.read_text().splitlines():
        with contextlib.suppress(ValueError):
            event = json.loads(line)
            if event.get("event") == "indexed" and event.get("published"):
                times.append(event["took_s"])
    return times


def _figures(corpus: str, latencies: list[float], cycles: list[float]) -> list[Figure]:
    name = f"watch {corpus}"
    mid = median(latencies)
    return [
        Figure(name, "indexing run of one save (median)", round(median(cycles), 3), "s"),
        Figure(
            name,
            "save to searchable (median)",
            round(mid, 3),
            "s",
            f"<= {TARGET_MEDIAN_S}",
            mid <= TARGET_MEDIAN_S,
        ),
        Figure(name, "save to searchable (p95)", round(percentile(latencies, 0.95), 3), "s"),
        Figure(name, "save to searchable (max)", round(max(latencies), 3), "s"),
    ]


async def _measure(mcp_url: str, pages: list[Path], edits: int) -> list[float]:
    latencies = []
    async with mcp_client(mcp_url) as client:
        for n in range(edits):
            word = f"zq{secrets.token_hex(4)}x{n}"
            page = pages[n % len(pages)]
            text = page.read_text(encoding="utf-8")
            started = time.perf_counter()
            page.write_text(text + f"\n\nThe watch benchmark wrote {word} here.\n", "utf-8")
            await _until_found(client, word)
            latencies.append(time.perf_counter() - started)
            say(f"[watch] edit {n + 1}/{edits}: {latencies[-1]:.3f} s")
    return latencies


async def _until_found(client: Client, word: str) -> None:
    deadline = time.perf_counter() + TIMEOUT_S
    while time.perf_counter() < deadline:
        result = await client.call_tool("search_docs", {"query": word, "num_results": 3})
        hits = (result.structured_content or {}).get("results", [])
        if any(word in hit["text"] for hit in hits):
            return
        await asyncio.sleep(POLL_S)
    raise RuntimeError(f"{word} not searchable after {TIMEOUT_S:.0f} s")


# --- processes ---------------------------------------------------------------------------------


def _cli(data: Path, *args: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "docdex.cli", "--data", str(data), *args],
        check=True,
        capture_output=True,
    )


@contextlib.contextmanager
def _process(data: Path, log: Path, *args: str):
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "docdex.cli", "--data", str(data), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, **JSON_LOGS},
        )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _wait_for_worktree_index(data: Path, source: str, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"docdex watch exited with status {proc.returncode}")
        with contextlib.suppress(OSError, ValueError, KeyError):
            version = (data / "CURRENT").read_text().strip()
            manifest = json.loads((data / "versions" / f"{version}.json").read_text())
            if manifest["sources"][source]["commit"].endswith("+worktree"):
                return
        time.sleep(0.2)
    raise RuntimeError("the initial working-tree index did not appear")


if __name__ == "__main__":
    from .__main__ import print_table

    print_table(bench_watch_latency())
