"""Indexing benchmarks: a full index against pure embedding, and per-push replays."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from docdex.config import Config, SourceConfig
from docdex.index_format.layout import DataDir
from docdex.indexer.embedder import Embedder
from docdex.indexer.pipeline import index_sources

from .common import (
    Figure,
    changed_files,
    docdex,
    first_parent_commits,
    fresh_bare,
    git,
    median,
    percentile,
    say,
    source_repo,
    write_results,
)

SMALL_PUSH_FILES = 5


def full_index(
    corpus: str, at: str, work: Path, reference_share: float = 1.0
) -> tuple[list[Figure], dict, Path, Path]:
    """Index `corpus` at commit `at` from scratch with the real CLI; compare with embedding
    the same windows alone. Returns figures, details, the bare repo and the data dir."""
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
    started = time.perf_counter()
    report = docdex(data, "index")
    wall = time.perf_counter() - started
    say(f"[{corpus}] embedding the same windows alone ...")
    ref = json.loads(
        subprocess.run(
            [sys.executable, "-m", "bench.reference", str(bare), at, str(reference_share)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    [version] = [v for v in docdex(data, "inspect") if v["current"]]
    overhead = report["took_s"] / ref["embed_s"]
    name = f"full index {corpus}"
    figures = [
        Figure(
            name, "total / embedding alone", round(overhead, 3), "x", "<= 1.15", overhead <= 1.15
        ),
        Figure(name, "total time", round(report["took_s"], 1), "s"),
        Figure(name, "embedding alone", round(ref["embed_s"], 1), "s"),
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
        "wall_s_with_startup": round(wall, 2),
        "index_report": report,
        "reference": ref,
        "version": version,
        "same_windows": ref["windows"] == report["windows_embedded"],
    }
    return figures, details, bare, data


def replay(corpus: str, bare: Path, data: Path, commits: list[str]) -> tuple[list[float], list]:
    """Push each commit to the bare repo, then run one incremental index in-process (as the
    worker does); return per-push seconds for small pushes, and every push's record."""
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
        records.append(
            {
                "commit": commit,
                "files": changed_files(corpus, commit),
                "seconds": seconds,
                "embedded": source.chunks_embedded,
                "reused": source.chunks_reused,
                "compacted": report.compacted,
                "status": source.status,
            }
        )
        if n % 25 == 0:
            say(f"[{corpus}] replayed {n}/{len(commits)} pushes")
    small = [r["seconds"] for r in records if r["files"] <= SMALL_PUSH_FILES]
    return small, records


def bench_indexing(
    full_corpus: str, replays: dict[str, int], reference_share: float = 1.0
) -> list[Figure]:
    """Full index of `full_corpus` (at the commit its replay starts from, if any), then
    replays of the last N commits of each corpus in `replays`."""
    figures: list[Figure] = []
    details: dict = {"replays": {}}
    medians: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="docdex-bench-") as tmp:
        for corpus, pushes in replays.items():
            commits = first_parent_commits(corpus)
            start, replayed = commits[-pushes - 1], commits[-pushes:]
            work = Path(tmp) / corpus
            work.mkdir()
            if corpus == full_corpus:
                full, details["full_index"], bare, data = full_index(
                    corpus, start, work, reference_share
                )
                figures += full
            else:
                bare = fresh_bare(corpus, start, work)
                data = work / "data"
                index_sources(
                    DataDir(data), Config(sources=[SourceConfig(name=corpus, location=str(bare))])
                )
            small, records = replay(corpus, bare, data, replayed)
            medians[corpus] = median(small)
            name = f"incremental {corpus}"
            figures += [
                Figure(
                    name,
                    f"median push (<= {SMALL_PUSH_FILES} files, n={len(small)})",
                    round(medians[corpus], 3),
                    "s",
                    "<= 1.0",
                    medians[corpus] <= 1.0,
                ),
                Figure(name, "p95 push (<= 5 files)", round(percentile(small, 0.95), 3), "s"),
                Figure(
                    name,
                    "median push (all)",
                    round(median([r["seconds"] for r in records]), 3),
                    "s",
                ),
            ]
            details["replays"][corpus] = records
        if full_corpus not in replays:
            work = Path(tmp) / f"{full_corpus}-full"
            work.mkdir()
            head = first_parent_commits(full_corpus)[-1]
            full, details["full_index"], _bare, _data = full_index(
                full_corpus, head, work, reference_share
            )
            figures = full + figures
    if len(medians) == 2:
        a, b = sorted(medians.values())
        figures.append(
            Figure(
                "incremental",
                "median ratio between repos",
                round(b / a, 2),
                "x",
                "<= 1.5",
                b / a <= 1.5,
            )
        )
    write_results("indexing", figures, details)
    return figures
