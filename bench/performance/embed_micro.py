"""Embedder micro-benchmark: windows/s and tokens/s per batch setting, and query latency.

    .venv/bin/python bench/performance/embed_micro.py [DIR_WITH_MARKDOWN] [--threads N] [--n N]

Without a directory it clones ../shared/corpora/apm-docs.bundle into a temporary directory.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from docdex.model.embedder import Embedder

BUNDLE = Path(__file__).resolve().parents[2] / "shared/corpora/apm-docs.bundle"
SETTINGS = [  # (token_budget, max_batch, max_padding); (1, 1, 0) runs one window at a time
    (1, 1, 0.0),
    (512, 64, 0.1),
    (1024, 64, 0.1),
    (1024, 64, 1.0),
    (4096, 64, 0.1),
    (16384, 256, 1.0),
]


def corpus_text(root: Path) -> list[str]:
    return [p.read_text(encoding="utf-8", errors="replace") for p in sorted(root.rglob("*.md"))]


def fixed_windows(emb: Embedder, docs: list[str], size: int, n: int) -> list[list[int]]:
    """`n` windows of exactly `size` content tokens cut from the corpus."""
    ids = [t for ids in emb.tokenize(docs) for t in ids]
    return [[101, *ids[i : i + size], 102] for i in range(0, size * n, size)]


def chunk_windows(emb: Embedder, docs: list[str], n: int) -> list[list[int]]:
    """Real-looking mixed-length windows: ~1,500-char pieces of the corpus, windowed."""
    pieces = [d[i : i + 1500] for d in docs for i in range(0, len(d), 1500)]
    windows, _ = emb.token_windows(pieces)
    return windows[:: max(1, len(windows) // n)][:n]


def timed(emb: Embedder, windows: list[list[int]]) -> tuple[float, float]:
    """(wall seconds, process CPU seconds) of one embed_windows call."""
    w0, c0 = time.perf_counter(), time.process_time()
    emb.embed_windows(windows)
    return time.perf_counter() - w0, time.process_time() - c0


def report(emb: Embedder, name: str, windows: list[list[int]], rounds: int) -> None:
    """Settings interleaved over `rounds` (the machine is shared); best times kept."""
    tokens = sum(len(w) for w in windows)
    lengths = sorted(len(w) for w in windows)
    print(
        f"\n{name}: {len(windows)} windows, mean {tokens / len(windows):.0f} tokens "
        f"(min {lengths[0]}, median {lengths[len(lengths) // 2]}, max {lengths[-1]})"
    )
    emb.embed_windows(windows[:8])  # warm-up
    best: dict[tuple[int, int, float], tuple[float, float]] = {}
    for _ in range(rounds):
        for setting in SETTINGS:
            emb.token_budget, emb.max_batch, emb.max_padding = setting
            wall, cpu = timed(emb, windows)
            old_wall, old_cpu = best.get(setting, (wall, cpu))
            best[setting] = (min(wall, old_wall), min(cpu, old_cpu))
    for (budget, max_batch, pad), (wall, cpu) in best.items():
        print(
            f"  budget {budget:>5} max_batch {max_batch:>3} max_padding {pad:.1f}: "
            f"{len(windows) / wall:6.1f} windows/s "
            f"{tokens / wall:7.0f} tokens/s (wall) | {len(windows) / cpu:6.1f} windows per "
            f"CPU-second, cpu/wall {cpu / wall:.2f}"
        )


def query_latency(emb: Embedder) -> None:
    queries = ["how do I reset my password", "enrollment status page timeout error 0x801C03F3"]
    for q in queries:
        emb.embed_query(q)
    times = []
    for _ in range(200):
        t0 = time.perf_counter()
        emb.embed_query(queries[len(times) % 2])
        times.append((time.perf_counter() - t0) * 1000)
    print(
        f"\nquery embed: median {statistics.median(times):.2f} ms, p95 "
        f"{float(np.percentile(times, 95)):.2f} ms"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("root", nargs="?", type=Path)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.root
        if root is None:
            root = Path(tmp) / "corpus"
            subprocess.run(["git", "clone", "-q", str(BUNDLE), str(root)], check=True)
        docs = corpus_text(root)
    emb = Embedder.load(threads=args.threads)
    print(f"load average before: {os.getloadavg()}")
    query_latency(emb)
    report(emb, "250-token windows", fixed_windows(emb, docs, 250, args.n), args.rounds)
    report(emb, "100-token windows", fixed_windows(emb, docs, 100, args.n), args.rounds)
    report(emb, "mixed chunk windows", chunk_windows(emb, docs, args.n), args.rounds)


if __name__ == "__main__":
    main()
