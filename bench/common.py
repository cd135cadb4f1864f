"""What every benchmark shares: corpora, repositories, timing and keeping a run's results."""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from docdex.index_format.layout import DataDir, IndexFormatError
from docdex.index_format.store import load_current

from bench import tables
from bench.summary import CACHE, ROOT, Figure, record, summarise

SHARED = ROOT.parent / "shared"
EVAL = SHARED / "eval"
SEEDS = CACHE / "seeds"

CORPORA = {  # name -> (bundle, branch); the bundle lies in one of CORPUS_FOLDERS
    "apm": ("apm-docs.bundle", "main"),
    "rustc": ("rustc-dev-guide-md.bundle", "md-linear"),
    "powershell": ("PowerShell-Docs-md.bundle", "md-linear"),
    "msmarco": ("msmarco-5k.bundle", "main"),
    "vite": ("vite-docs.bundle", "main"),
    "mkdocs": ("mkdocs-docs.bundle", "master"),
    "rustbook": ("rust-book.bundle", "main"),
    "hugo": ("hugo-docs.bundle", "master"),
    "material": ("mkdocs-material.bundle", "master"),
    "pymdownx": ("pymdown-extensions.bundle", "main"),
    "starlight": ("starlight.bundle", "main"),
    "sqlmodel": ("sqlmodel.bundle", "main"),
    "cargo": ("cargo.bundle", "master"),
}
CORPUS_FOLDERS = (ROOT / "bench" / "corpora", SHARED / "corpora")  # ours (in git), the shared ones


EVAL_FILES = {  # corpus -> its query file in ../shared/eval (PowerShell-Docs has none)
    "apm": "apm.queries.jsonl",
    "rustc": "rustc-dev-guide.queries.jsonl",
    "msmarco": "msmarco-5k.queries.jsonl",
}
GIT_ENV = {  # commits made by the benchmarks, whatever the machine's git configuration
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@docdex.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@docdex.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(*args: str, cwd: Path | None = None, input: str | None = None) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, input=input
    ).stdout.strip()


def bench_git(cwd: Path, *args: str) -> None:
    """`git` as the benchmarks' own author (GIT_ENV), for repositories they write to."""
    subprocess.run(
        ["git", *args], cwd=cwd, env={**os.environ, **GIT_ENV}, check=True, capture_output=True
    )


def work_repo(where: Path, files: Mapping[str, bytes]) -> Path:
    """A bare repository (where/origin.git) and a clone (where/work, returned) whose one
    commit holds `files` (path -> content), not pushed yet; the clone's remote is origin."""
    where.mkdir(parents=True)
    bare, work = where / "origin.git", where / "work"
    bench_git(where, "init", "-q", "--bare", "--initial-branch=main", str(bare))
    bench_git(where, "init", "-q", "--initial-branch=main", str(work))
    for name, content in files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_bytes(content)
    bench_git(work, "add", "-A")
    bench_git(work, "commit", "-q", "-m", "docs")
    bench_git(work, "remote", "add", "origin", str(bare))
    return work


def eval_queries(corpus: str) -> list[dict]:
    """The rows of `corpus`'s query file (format: ../shared/eval/README.md)."""
    lines = (EVAL / EVAL_FILES[corpus]).read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def corpus_bundle(corpus: str) -> Path:
    """Where `corpus`'s bundle lies: the first of CORPUS_FOLDERS that holds it (the shared
    folder's path when none does, for the error that follows)."""
    bundle, _branch = CORPORA[corpus]
    found = (folder / bundle for folder in CORPUS_FOLDERS if (folder / bundle).is_file())
    return next(found, CORPUS_FOLDERS[-1] / bundle)


def source_repo(corpus: str) -> Path:
    """A local clone (with work tree, full history) of a corpus bundle, cached."""
    _bundle, branch = CORPORA[corpus]
    path = CACHE / "src" / corpus
    if not (path / ".git").exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        git("clone", "-q", "--no-checkout", "-b", branch, str(corpus_bundle(corpus)), str(path))
    return path


_NOT_INDEX = shutil.ignore_patterns("state", "docdex.toml")  # a run's state, configuration


def seed_index(data: Path, seed: Path) -> bool:
    """Start the new data directory `data` with the index published in the data directory
    `seed`, without its configuration or run state. The first run in `data` then copies the
    vectors of every chunk whose text it finds again instead of embedding it: set-up made
    cheaper, nothing measured. False, copying nothing, when `seed` holds no readable index."""
    try:
        if load_current(DataDir(seed)) is None:
            return False
    except IndexFormatError:
        return False
    shutil.copytree(seed, data, ignore=_NOT_INDEX)
    return True


def keep_seed(data: Path, seed: Path) -> None:
    """Keep the index published in `data` as the next run's `seed` (see seed_index)."""
    fresh = seed.with_name(f".{seed.name}.tmp")
    shutil.rmtree(fresh, ignore_errors=True)
    shutil.copytree(data, fresh, ignore=_NOT_INDEX)
    shutil.rmtree(seed, ignore_errors=True)
    fresh.rename(seed)


def fresh_bare(corpus: str, at: str, where: Path) -> Path:
    """A bare repository whose main branch is the corpus at commit `at`."""
    src = source_repo(corpus)
    bare = where / f"{corpus}.git"
    git("init", "-q", "--bare", "--initial-branch=main", str(bare))
    git("push", "-q", str(bare), f"{at}:refs/heads/main", cwd=src)
    return bare


def first_parent_commits(corpus: str) -> list[str]:
    """The corpus branch's commits, oldest first."""
    _bundle, branch = CORPORA[corpus]
    return git("rev-list", "--first-parent", "--reverse", branch, cwd=source_repo(corpus)).split()


def changed_markdown(corpus: str, commit: str) -> tuple[int, int]:
    """Markdown files `commit` changes (renames detected) and the bytes of their new
    versions: the size of the change a push hands the indexer."""
    repo = source_repo(corpus)
    out = git("diff-tree", "--no-commit-id", "-r", "-M", f"{commit}^", commit, cwd=repo)
    blobs = []
    files = 0
    for line in out.splitlines():
        meta, _, paths = line.partition("\t")
        if not paths.split("\t")[-1].endswith((".md", ".markdown")):
            continue
        files += 1
        new_blob = meta.split()[3]
        if new_blob.strip("0"):  # all zeros: deleted
            blobs.append(new_blob)
    sizes = git("cat-file", "--batch-check=%(objectsize)", cwd=repo, input="\n".join(blobs))
    return files, sum(int(size) for size in sizes.split())


def blobs_at_head(repo: Path) -> dict[str, bytes]:
    """path -> content of every file blob at the repository's HEAD that it holds (a partial
    clone's missing blobs are left out, symlinks too: the indexer reads through them)."""
    listing = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "-r", "-z", "HEAD"], capture_output=True, check=True
    ).stdout
    entries = []
    for line in filter(None, listing.split(b"\0")):
        meta, path = line.split(b"\t", 1)
        mode, kind, sha = meta.split()
        if kind == b"blob" and mode != b"120000":
            entries.append((path.decode("utf-8", "surrogateescape"), sha))
    out = subprocess.run(
        ["git", "-C", str(repo), "cat-file", "--batch"],
        input=b"".join(sha + b"\n" for _, sha in entries),
        capture_output=True,
        check=True,
    ).stdout
    blobs, at = {}, 0
    for path, _ in entries:
        header_end = out.index(b"\n", at)
        header = out[at:header_end].split()
        if header[-1] == b"missing":
            at = header_end + 1
            continue
        size = int(header[2])
        blobs[path] = out[header_end + 1 : header_end + 1 + size]
        at = header_end + 2 + size
    return blobs


def first_differing_line(served: str, expected: str) -> int | str:
    """The first line (from 1) where two texts differ, or "past the end" when one is the
    other's start."""
    pairs = zip(served.split("\n"), expected.split("\n"), strict=False)
    return next((n for n, (a, b) in enumerate(pairs, 1) if a != b), "past the end")


def theil_sen(x: list[float], y: list[float]) -> tuple[float, float]:
    """(intercept, slope) of a line through (x, y) that outliers barely move: the median of
    the slopes between pairs of points, then the median intercept under that slope."""
    slopes = [
        (y[j] - y[i]) / (x[j] - x[i])
        for i in range(len(x))
        for j in range(i + 1, len(x))
        if abs(x[j] - x[i]) > 1e-9
    ]
    slope = median(slopes) if slopes else 0.0
    return median([b - slope * a for a, b in zip(x, y, strict=True)]), slope


def children_cpu() -> float:
    """User + system CPU seconds of this process's finished children (every thread)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def percentile(values: list[float], share: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def write_results(
    name: str, figures: list[Figure], raw: object, seconds: float | None = None
) -> Path:
    """Keep a benchmark's run: its summary in bench/results/NAME.json, its table in
    docs/benchmarks.md rewritten from it, and `raw` (timings, records) in the bench cache;
    `seconds`: how long the run took, when it says."""
    path = record(
        summarise(name, figures, seconds=None if seconds is None else round(seconds)), raw
    )
    for problem in tables.update(tables.BENCHMARKS, [name]):
        say(f"[bench] {problem}")
    return path


def docdex(data: Path, *args: str) -> dict:
    """Run the real CLI in its own process (so its peak RSS is its own) and decode --json."""
    out = subprocess.run(
        [sys.executable, "-m", "docdex.cli", "--data", str(data), *args, "--json"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out)


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
