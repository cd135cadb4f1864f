"""Passage graphs side by side: tokens/s of each variant against today's graph, interleaved
in one process, on real windows of apm-docs and PowerShell-Docs; vector agreement; and the
roofline (the cores' float32 FMA peak). `just bench embed-graphs`; adr/0020.

    .venv/bin/python -m bench.performance.embed_graphs [--windows N] [--rounds R] [--agreement N]
        [--variant NAME_PART ...]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time

import msgspec
import numpy as np
import onnxruntime as ort

from docdex.index_format.config import Settings
from docdex.model.embedder import Embedder, package_session
from docdex.model.files import DIM, weights_path
from docdex.model.passagegraph import passage_graph
from docdex.model.sessions import session_options

from .reference import unique_embed_inputs
from bench.common import CORPORA, Figure, git, say, source_repo, write_results

LAYERS, FFN = 6, 1536
FP32_LANES, FMA_UNITS = 8, 2  # AVX2: 8 float32 lanes per FMA, two FMA pipes per core (Zen 3)
TODAY = "package graph, float32 (before)"
SLICE = 32  # windows per turn of the interleaving: a few seconds of each variant


class Variant(msgspec.Struct):
    name: str
    session: ort.InferenceSession
    token_budget: int = 1024


def flop_per_window(length: int) -> int:
    """Multiply-adds × 2 of one window: the six layers' projections and FFN, and attention's
    two products over the window's own length (embeddings and norms are negligible)."""
    dense = 4 * DIM * DIM + 2 * DIM * FFN
    return LAYERS * 2 * (length * dense + 2 * length * length * DIM)


def peak_gflops() -> tuple[float, float]:
    """(float32 FMA peak in GFLOP/s of the usable cores, the clock in GHz it assumes): the
    clock is the one /proc/cpuinfo reports (a virtual machine's nominal clock)."""
    mhz = 0.0
    with open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("cpu MHz"):
                mhz = max(mhz, float(line.split(":")[1]))
    ghz = mhz / 1000
    cores = len(os.sched_getaffinity(0))
    return cores * FP32_LANES * FMA_UNITS * 2 * ghz, ghz


def corpus_windows(emb: Embedder, corpus: str, n: int) -> list[list[int]]:
    """`n` windows drawn at random from every window an index of the corpus's head embeds
    (the project's chunker and tokenizer, bench/performance/reference.py)."""
    repo = source_repo(corpus)
    head = git("rev-parse", CORPORA[corpus][1], cwd=repo)
    windows, _owners = emb.token_windows(unique_embed_inputs(str(repo), head, Settings()))
    return random.Random(42).sample(windows, min(n, len(windows)))


def rewritten(kind: str, spin: bool = False) -> ort.InferenceSession:
    """A session over passagegraph's `kind` rewrite (built here, not cached); `spin` lets
    idle intra-op threads spin, as docdex does not (sessions.py)."""
    opts = session_options(2, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    if spin:
        opts.add_session_config_entry("session.intra_op.allow_spinning", "1")
    return ort.InferenceSession(passage_graph(weights_path(), kind), opts)


def variants(emb: Embedder) -> list[Variant]:
    path, sha = weights_path(), emb.info.sha256
    fused = rewritten("float32")
    return [
        Variant(TODAY, package_session(path, sha, 2)),
        Variant("fused float32 (adr/0020)", fused),
        Variant("fused float32, budget 512", fused, 512),
        Variant("fused float32, budget 4096", fused, 4096),
        Variant("fused float32, threads spinning", rewritten("float32", spin=True)),
        Variant("fused, dynamic int8 (package weights)", rewritten("int8-per-call")),
        Variant("fused, dynamic uint8 (package weights)", rewritten("uint8")),
        Variant("fused, int8, MatMul inputs quantised per row", rewritten("int8")),
    ]


def chosen(all_variants: list[Variant], names: list[str]) -> list[Variant]:
    """Today's graph and the variants whose name contains one of `names` (all if none)."""
    first, rest = all_variants[0], all_variants[1:]
    return [first, *(v for v in rest if not names or any(n in v.name for n in names))]


def run(emb: Embedder, variant: Variant, windows: list[list[int]]) -> tuple[float, np.ndarray]:
    emb.session, emb.token_budget = variant.session, variant.token_budget
    started = time.perf_counter()
    vectors = emb.embed_windows(windows)
    return time.perf_counter() - started, vectors


def interleaved(
    emb: Embedder, all_variants: list[Variant], windows: list[list[int]], rounds: int
) -> dict[str, list[float]]:
    """Seconds per variant per round. Each round goes through the windows a slice at a
    time and runs every variant on each slice in turn, so that a shift in the machine's
    load falls on all variants alike."""
    seconds: dict[str, list[float]] = {v.name: [] for v in all_variants}
    slices = [windows[i : i + SLICE] for i in range(0, len(windows), SLICE)]
    for r in range(rounds):
        spent = dict.fromkeys(seconds, 0.0)
        for part in slices:
            for variant in all_variants:
                spent[variant.name] += run(emb, variant, part)[0]
        for name, total in spent.items():
            seconds[name].append(total)
        say(f"[embed-graphs] round {r + 1}/{rounds}")
    return seconds


def agreement(
    emb: Embedder, all_variants: list[Variant], windows: list[list[int]]
) -> dict[str, tuple[float, float, float]]:
    """(mean, 1st percentile, min) cosine of each variant's pooled vectors with today's
    graph's."""
    reference = run(emb, all_variants[0], windows)[1]
    out = {}
    for variant in all_variants[1:]:
        cos = np.sum(run(emb, variant, windows)[1] * reference, axis=1)
        out[variant.name] = (float(cos.mean()), float(np.percentile(cos, 1)), float(cos.min()))
    return out


def corpus_figures(
    corpus: str, windows: list[list[int]], seconds: dict[str, list[float]], peak: float
) -> list[Figure]:
    tokens = sum(len(w) for w in windows)
    flop = sum(flop_per_window(len(w)) for w in windows)
    before = statistics.median(seconds[TODAY])
    figures = []
    for name, times in seconds.items():
        median = statistics.median(times)
        bench = f"embed-graphs {corpus}: {name}"
        figures += [
            Figure(bench, "tokens/s", round(tokens / median), "1/s"),
            Figure(bench, "x today's graph (median of rounds)", round(before / median, 2), "x"),
            Figure(
                bench, "share of float32 FMA peak", round(100 * flop / median / 1e9 / peak, 1), "%"
            ),
        ]
    return figures


def bench_embed_graphs(
    n: int = 400, rounds: int = 5, agree: int = 1500, names: list[str] | None = None
) -> list[Figure]:
    emb = Embedder.load(threads=2)
    peak, ghz = peak_gflops()
    all_variants = chosen(variants(emb), names or [])
    figures: list[Figure] = []
    details: dict[str, object] = {"peak_gflops": peak, "clock_ghz": ghz, "corpora": {}}
    for corpus in ("apm", "powershell"):
        say(f"[embed-graphs] windows of {corpus} ...")
        sample = corpus_windows(emb, corpus, max(n, agree))
        timed = sample[:n]
        run(emb, all_variants[0], timed[:16])  # warm-up
        seconds = interleaved(emb, all_variants, timed, rounds)
        agreed = agreement(emb, all_variants, sample[:agree])
        figures += corpus_figures(corpus, timed, seconds, peak)
        for name, (mean, p1, low) in agreed.items():
            bench = f"embed-graphs {corpus}: {name}"
            figures += [
                Figure(
                    bench, f"cosine with today's, mean of {len(sample[:agree])}", round(mean, 6), ""
                ),
                Figure(bench, "cosine with today's, 1st percentile", round(p1, 6), ""),
                Figure(bench, "cosine with today's, min", round(low, 6), ""),
            ]
        details["corpora"][corpus] = {
            "timed_windows": len(timed),
            "timed_tokens": sum(len(w) for w in timed),
            "flop": sum(flop_per_window(len(w)) for w in timed),
            "seconds": seconds,
            "agreement": agreed,
            "load_average": os.getloadavg(),
        }
    write_results("embed-graphs", figures, details)
    return figures


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--windows", type=int, default=400)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--agreement", type=int, default=1500)
    ap.add_argument(
        "--variant", action="append", default=[], help="only variants whose name holds this"
    )
    args = ap.parse_args()
    from .__main__ import print_table

    print_table(bench_embed_graphs(args.windows, args.rounds, args.agreement, args.variant))


if __name__ == "__main__":
    main()
