"""Indexing benchmarks: a full index against pure embedding, and per-push replays.

Wall-clock ratios swing with whatever else runs on a shared machine, so each ratio is also
given in CPU seconds (the index run's process against the reference's embedding loop)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from docdex.index_format.config import Config, SourceConfig, load_config, save_config
from docdex.index_format.layout import DataDir
from docdex.indexer.run.pipeline import index_sources
from docdex.model.embedder import Embedder

from bench.common import (
    CACHE,
    CORPORA,
    Figure,
    changed_markdown,
    children_cpu,
    docdex,
    first_parent_commits,
    fresh_bare,
    git,
    median,
    percentile,
    say,
    source_repo,
    theil_sen,
    write_results,
)

SMALL_PUSH_FILES = 5
OVERHEAD_TARGET = 1.15


def corpus_index(corpus: str) -> Path:
    """The data directory bench_corpus leaves in the bench cache (the corpus at its head, where
    the replay ends), beside the bare repository it indexes."""
    return CACHE / "index" / corpus / "data"


def head_index(corpus: str) -> Path:
    """`corpus` at its head, indexed in the data directory `corpus_index` names: the index
    bench_corpus left there (brought up to date, usually nothing to do), else built here,
    once, which takes as long as a full index (PowerShell-Docs: about 20 minutes)."""
    data = DataDir(corpus_index(corpus))
    bare = data.root.parent / f"{corpus}.git"
    src = source_repo(corpus)
    head = git("rev-parse", CORPORA[corpus][1], cwd=src)
    if not bare.exists():
        shutil.rmtree(data.root.parent, ignore_errors=True)
        data.root.parent.mkdir(parents=True)
        fresh_bare(corpus, head, data.root.parent)
    git("push", "-q", "--force", str(bare), f"{head}:refs/heads/main", cwd=src)
    if not data.config.exists():  # a replay-only index ran from an unsaved Config
        data.ensure()
        save_config(data, Config(sources=[SourceConfig(name=corpus, location=str(bare))]))
    say(f"[{corpus}] the index at the head {head[:10]} (reused when up to date) ...")
    index_sources(data, load_config(data))
    return data.root


def full_index(corpus: str, at: str, work: Path, share: float) -> tuple[list[Figure], dict, Path]:
    """Index `corpus` at commit `at` from scratch with the real CLI, then embed the same
    windows alone. Returns figures, details and the data directory (for a replay)."""
    bare = fresh_bare(corpus, at, work)
    data = work / "data"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "docdex.cli",
            "--data",
            str(data),
            "source",
            "add",
            corpus,
            str(bare),
        ],
        check=True,
        capture_output=True,
    )
    say(f"[{corpus}] full index at {at[:10]} ...")
    load_before = os.getloadavg()[0]
    cpu_before = children_cpu()
    report = docdex(data, "index")
    index_cpu = children_cpu() - cpu_before
    say(f"[{corpus}] embedding the same windows alone (share {share}) ...")
    ref = json.loads(
        subprocess.run(
            [sys.executable, "-m", "bench.performance.reference", str(bare), at, str(share)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    [version] = [v for v in docdex(data, "inspect") if v["current"]]
    wall_ratio = report["took_s"] / ref["embed_s"]
    cpu_ratio = index_cpu / ref["embed_cpu_s"]
    name = f"full index {corpus}"
    figures = [
        Figure(
            name,
            "total / embedding alone (CPU s)",
            round(cpu_ratio, 3),
            "x",
            f"<= {OVERHEAD_TARGET}",
            cpu_ratio <= OVERHEAD_TARGET,
        ),
        Figure(name, "total / embedding alone (wall)", round(wall_ratio, 3), "x"),
        Figure(name, "total time", round(report["took_s"], 1), "s"),
        Figure(name, "chunks", version["chunks"], ""),
        Figure(name, "windows embedded", report["windows_embedded"], ""),
        Figure(name, "windows/s (alone)", round(ref["windows"] / ref["embed_s"], 1), "1/s"),
        Figure(name, "tokens/s (alone)", round(ref["tokens"] / ref["embed_s"]), "1/s"),
        Figure(
            name, "peak RSS", report["peak_rss_mb"], "MB", "<= 700", report["peak_rss_mb"] <= 700
        ),
        Figure(name, "bytes on disk per chunk", round(version["bytes"] / version["chunks"]), "B"),
    ]
    details = {
        "corpus": corpus,
        "commit": at,
        "load_average_at_start": load_before,
        "index_cpu_s": index_cpu,
        "index_report": report,
        "reference": ref,
        "version": version,
        "same_windows": ref["windows"] == report["windows_embedded"],
    }
    return figures, details, data


def replay(corpus: str, bare: Path, data: Path, commits: list[str]) -> list[dict]:
    """Push each commit to the bare repo, then run one incremental index in-process (as the
    worker's cycle does, model already loaded); one record per push."""
    config = Config(sources=[SourceConfig(name=corpus, location=str(bare))])
    embedder = Embedder.load()
    src = source_repo(corpus)
    records = []
    for n, commit in enumerate(commits, 1):
        git("push", "-q", "--force", str(bare), f"{commit}:refs/heads/main", cwd=src)
        started = time.perf_counter()
        report = index_sources(DataDir(data), config, embedder=embedder)
        seconds = time.perf_counter() - started
        [source] = report.sources
        files, changed_bytes = changed_markdown(corpus, commit)
        records.append(
            {
                "commit": commit,
                "files": files,
                "kb": changed_bytes / 1024,
                "seconds": seconds,
                "embedded": source.chunks_embedded,
                "reused": source.chunks_reused,
                "compacted": report.compacted,
                "status": source.status,
            }
        )
        if n % 25 == 0:
            say(f"[{corpus}] replayed {n}/{len(commits)} pushes")
    return records


FIXED_PART = "push time at 0 KB changed (Theil-Sen intercept)"


def replay_figures(corpus: str, records: list[dict]) -> list[Figure]:
    small = [r for r in records if r["files"] <= SMALL_PUSH_FILES]
    seconds = [r["seconds"] for r in small]
    fixed, per_kb = theil_sen([r["kb"] for r in small], seconds)
    name = f"incremental {corpus}"
    return [
        Figure(
            name,
            f"median push (<= {SMALL_PUSH_FILES} files, n={len(small)})",
            round(median(seconds), 3),
            "s",
            "<= 1.0",
            median(seconds) <= 1.0,
        ),
        Figure(
            name,
            f"p95 push (<= {SMALL_PUSH_FILES} files)",
            round(percentile(seconds, 0.95), 3),
            "s",
        ),
        Figure(
            name,
            f"median KB of markdown changed (<= {SMALL_PUSH_FILES} files)",
            round(median([r["kb"] for r in small]), 1),
            "KB",
        ),
        Figure(name, FIXED_PART, round(fixed * 1000, 1), "ms"),
        Figure(
            name,
            "push time per KB of markdown changed (Theil-Sen slope)",
            round(per_kb * 1000, 2),
            "ms",
        ),
        Figure(
            name,
            f"median push (all, n={len(records)})",
            round(median([r["seconds"] for r in records]), 3),
            "s",
        ),
    ]


def bench_corpus(corpus: str, pushes: int, share: float = 1.0, full: bool = True) -> list[Figure]:
    """A full index of `corpus` where its replay starts (measured when `full`), then a
    replay of its last `pushes` commits. Writes bench/results/index-<corpus>.json and keeps
    the index in the bench cache (`corpus_index`): PowerShell's is served by serve-powershell,
    apm's seeds watch's."""
    commits = first_parent_commits(corpus)
    start, replayed = commits[-pushes - 1], commits[-pushes:]
    figures: list[Figure] = []
    details: dict = {}
    work = corpus_index(corpus).parent
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    if full:
        figures, details["full_index"], data = full_index(corpus, start, work, share)
        bare = work / f"{corpus}.git"
    else:
        bare, data = fresh_bare(corpus, start, work), work / "data"
        say(f"[{corpus}] indexing the starting point {start[:10]} (not measured) ...")
        config = Config(sources=[SourceConfig(name=corpus, location=str(bare))])
        index_sources(DataDir(data), config)
    details["replay"] = replay(corpus, bare, data, replayed)
    figures += replay_figures(corpus, details["replay"])
    write_results(f"index-{corpus}", figures, details)
    return figures


def cost_follows_change(figures: list[Figure], small: str, large: str) -> list[Figure]:
    """The median small-push time of the large repo over that of the small repo (the target),
    and the same for the part of a push's time that does not grow with the markdown it
    changes: pushes of the same number of files change more markdown in one corpus than in
    another, so the first ratio mixes the size of the change into the size of the repo."""

    def value(corpus: str, prefix: str) -> float:
        return next(
            f.value
            for f in figures
            if f.group == f"incremental {corpus}" and f.name.startswith(prefix)
        )

    ratio = value(large, "median push (<=") / value(small, "median push (<=")
    fixed = value(large, FIXED_PART) / value(small, FIXED_PART)
    return [
        Figure(
            "incremental",
            f"median push {large} / {small}",
            round(ratio, 2),
            "x",
            "<= 1.5",
            ratio <= 1.5,
        ),
        Figure("incremental", f"push time at 0 KB changed {large} / {small}", round(fixed, 2), "x"),
    ]
