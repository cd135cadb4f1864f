"""Embedding against the machine's peak: windows/s, GFLOP/s and the share of the float32 FMA
peak of the default passage graph (fused float32) and of the int8 one, on the windows docdex
embeds, beside what is left to close (intra-op threads, batching by length and its padding,
the text groups the indexer embeds). `just bench embed-peak`; docs/benchmarks.md.

    python -m bench.performance.embed_peak [--texts N] [--rounds R]

Texts are drawn from what an index of apm-docs' and PowerShell-Docs' heads embeds (the
project's chunker), shuffled together and embedded as the indexer does: `embed_texts` over
groups of the indexer's size (tokenising, windows, batches by length), every variant on
each group in turn, so that a change in the machine's load falls on all of them alike; the
figures are medians of the rounds. FLOPs are those of the windows' real lengths (padding is
work, not output). The peaks: the nominal one (cores × 8 float32 lanes × 2 FMA pipes × 2
FLOP × the clock /proc/cpuinfo reports) and the practical one, a 2048³ sgemm through numpy's
OpenBLAS on the same cores, measured in every round.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time

import msgspec
import numpy as np

from docdex.index_format.config import Settings
from docdex.indexer.run.storage.stream import EMBED_GROUP_TEXTS
from docdex.model.embedder import Embedder
from docdex.model.windows import length_batches

from .embed_graphs import flop_per_window, peak_gflops
from .reference import unique_embed_inputs
from bench.common import CACHE, CORPORA, Figure, git, say, source_repo, write_results

CORES = 2
SGEMM_N = 2048
_SGEMM = f"""
import time, numpy as np
a = np.random.default_rng(0).random(({SGEMM_N}, {SGEMM_N}), dtype=np.float32)
a @ a
best = min((lambda t: (a @ a, time.perf_counter() - t)[1])(time.perf_counter()) for _ in range(5))
print(2 * {SGEMM_N}**3 / best / 1e9)
"""


class Variant(msgspec.Struct):
    name: str
    embedder: Embedder
    group: int = EMBED_GROUP_TEXTS  # texts embedded in one call, as the indexer groups them
    threads: int = CORES  # intra-op threads: its share of sgemm is of sgemm on as many


def sgemm_gflops(threads: int) -> float:
    """GFLOP/s of the best of five 2048³ float32 products on `threads` OpenBLAS threads, in
    a child (the thread count is fixed when numpy loads)."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
    done = subprocess.run(
        [sys.executable, "-c", _SGEMM], env=env, check=True, capture_output=True, text=True
    )
    return float(done.stdout)


def sample_texts(per_corpus: int) -> list[str]:
    """`per_corpus` embed inputs of each corpus's head, drawn at random, shuffled together;
    kept in the bench cache (chunking PowerShell-Docs whole takes a while)."""
    kept = CACHE / f"embed-peak-texts-{per_corpus}.json"
    if kept.exists():
        return json.loads(kept.read_text())
    rng = random.Random(44)
    texts: list[str] = []
    for corpus in ("apm", "powershell"):
        repo = source_repo(corpus)
        head = git("rev-parse", CORPORA[corpus][1], cwd=repo)
        found = unique_embed_inputs(str(repo), head, Settings())
        texts += rng.sample(found, min(per_corpus, len(found)))
    rng.shuffle(texts)
    kept.write_text(json.dumps(texts))
    return texts


def variants() -> list[Variant]:
    default = Embedder.load(threads=CORES)
    int8 = Embedder.load(threads=CORES, passages="int8")
    alone = Embedder.load(threads=1)
    int8_alone = Embedder.load(threads=1, passages="int8")
    return [
        Variant("float32 (minilm)", default),
        Variant("int8 (minilm-int8, a new data directory's)", int8),
        Variant("float32, 1 intra-op thread", alone, threads=1),
        Variant("int8, 1 intra-op thread", int8_alone, threads=1),
        Variant("float32, token budget 4096", _with(default, token_budget=4096)),
        Variant("float32, one window a run", _with(default, token_budget=1, max_batch=1)),
        Variant("float32, texts in one group", default, group=1 << 30),
    ]


def _with(base: Embedder, token_budget: int, max_batch: int = 64) -> Embedder:
    return Embedder(base.session, base.tokenizer, base.info, token_budget, max_batch, base.graph)


def groups_of(texts: list[str], size: int) -> list[list[str]]:
    return [texts[i : i + size] for i in range(0, len(texts), size)]


def padded_tokens(v: Variant, texts: list[str]) -> int:
    """Tokens the graph runs over, padding included, with `v`'s groups and batching."""
    emb, total = v.embedder, 0
    for part in groups_of(texts, v.group):
        windows, _owners = emb.token_windows(part)
        lengths = np.fromiter((len(w) for w in windows), dtype=np.int64, count=len(windows))
        for batch in length_batches(lengths, emb.token_budget, emb.max_batch, emb.max_padding):
            total += len(batch) * int(lengths[batch].max())
    return total


def timed(v: Variant, texts: list[str]) -> float:
    """Seconds `v` takes to embed `texts` in one call."""
    started = time.perf_counter()
    v.embedder.embed_texts(texts)
    return time.perf_counter() - started


def one_round(all_variants: list[Variant], texts: list[str]) -> dict[str, float]:
    """Seconds per variant over every text: a group of the indexer's size at a time, the
    variants in turn on each (a variant embedding the texts in one group: one call)."""
    spent = {v.name: 0.0 for v in all_variants}
    grouped = [v for v in all_variants if v.group < len(texts)]
    for part in groups_of(texts, EMBED_GROUP_TEXTS):
        for v in grouped:
            spent[v.name] += timed(v, part)
    for v in all_variants:
        if v not in grouped:
            spent[v.name] = timed(v, texts)
    return spent


def bench_embed_peak(per_corpus: int = 256, rounds: int = 3) -> list[Figure]:
    nominal, ghz = peak_gflops()
    say("[embed-peak] texts of apm and powershell ...")
    texts = sample_texts(per_corpus)
    all_variants = variants()
    windows, _owners = all_variants[0].embedder.token_windows(texts)
    tokens = sum(len(w) for w in windows)
    flop = sum(flop_per_window(len(w)) for w in windows)
    started = time.perf_counter()
    all_variants[0].embedder.tokenize(texts)
    tokenize_s = time.perf_counter() - started
    all_variants[0].embedder.embed_texts(texts[:16])  # warm-up
    seconds: dict[str, list[float]] = {v.name: [] for v in all_variants}
    sgemm: dict[int, list[float]] = {1: [], CORES: []}
    loads = []
    for r in range(rounds):
        for threads, measured in sgemm.items():
            measured.append(sgemm_gflops(threads))
        for name, spent in one_round(all_variants, texts).items():
            seconds[name].append(spent)
        loads.append(os.getloadavg()[0])
        say(f"[embed-peak] round {r + 1}/{rounds}")
    practical = {threads: statistics.median(measured) for threads, measured in sgemm.items()}
    figures = [
        Figure("machine", "float32 FMA peak (nominal)", round(nominal, 1), "GFLOP/s"),
        Figure("machine", "clock", round(ghz, 3), "GHz"),
        Figure("machine", "sgemm 2048³, 2 threads", round(practical[CORES], 1), "GFLOP/s"),
        Figure("machine", "sgemm 2048³, 1 thread", round(practical[1], 1), "GFLOP/s"),
        Figure("machine", "load average (1 min)", round(statistics.median(loads), 1), ""),
        Figure("windows", "windows", len(windows), ""),
        Figure("windows", "mean tokens a window", round(tokens / len(windows), 1), ""),
        Figure("windows", "MFLOP a token", round(flop / tokens / 1e6, 2), ""),
    ]
    default_s = statistics.median(seconds[all_variants[0].name])
    share = round(100 * tokenize_s / default_s, 1)
    figures.append(Figure("windows", "tokenising, share of embedding", share, "%"))
    for v in all_variants:
        median = statistics.median(seconds[v.name])
        gflops = flop / median / 1e9
        padding = padded_tokens(v, texts) / tokens - 1
        figures += [
            Figure(v.name, "windows/s", round(len(windows) / median, 1), "1/s"),
            Figure(v.name, "GFLOP/s", round(gflops, 1), ""),
            Figure(v.name, "share of FMA peak", round(100 * gflops / nominal, 1), "%"),
            Figure(v.name, "share of sgemm", round(100 * gflops / practical[v.threads], 1), "%"),
            Figure(v.name, "padding", round(100 * padding, 1), "%"),
        ]
    details = {"seconds": seconds, "sgemm": sgemm, "loads": loads, "tokenize_s": tokenize_s}
    write_results("embed-peak", figures, details)
    return figures


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--texts", type=int, default=256, help="texts drawn from each corpus")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    from .__main__ import print_table

    print_table(bench_embed_peak(args.texts, args.rounds))


if __name__ == "__main__":
    main()
