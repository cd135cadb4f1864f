"""A run's summary: its figures, the machine, the commit and the date, one file per bench.

A benchmark (or a fault scenario) keeps the summary of its last run in
bench/results/NAME.json (committed; the fault campaign's quick set in NAME.quick.json), and
its raw details (timings, per-push records, notes) in the bench cache, which is not. The
tables of docs/benchmarks.md and docs/reliability.md are rendered from the summaries
(bench/tables.py). This module imports nothing of docdex's, so reading the summaries is
cheap.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
CACHE = Path(os.environ.get("DOCDEX_BENCH_CACHE", "/tmp/docdex-bench"))
RAW = CACHE / "raw"  # each run's raw details, named as its summary


class Figure(msgspec.Struct):
    """One measured figure. `group` is the part of the bench it belongs to ("full index
    powershell", "scale 50k", a fault scenario's injection), `target` the line it must
    stay within ("<= 1.15"), `met` whether it did (None: no target)."""

    group: str
    name: str
    value: int | float
    unit: str
    target: str = ""
    met: bool | None = None


class Machine(msgspec.Struct):
    python: str
    platform: str
    cpus: int


class Summary(msgspec.Struct, kw_only=True, omit_defaults=True):
    bench: str
    set: str = ""  # the fault campaign's "quick" or "full"; "" for a benchmark
    date: str  # when the run finished (UTC, ISO 8601)
    commit: str  # HEAD when it ran (short hash)
    dirty: bool  # the working tree had changes HEAD does not hold
    machine: Machine
    seconds: float | None = None  # how long the run took, where it was recorded
    figures: list[Figure]

    @property
    def file(self) -> str:
        return f"{self.bench}.quick.json" if self.set == "quick" else f"{self.bench}.json"


def this_machine() -> Machine:
    return Machine(
        python=platform.python_version(), platform=platform.platform(), cpus=os.cpu_count() or 0
    )


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def summarise(
    bench: str, figures: list[Figure], set: str = "", seconds: float | None = None
) -> Summary:
    """The summary of a run that just finished here."""
    return Summary(
        bench=bench,
        set=set,
        date=now(),
        commit=_git("rev-parse", "--short", "HEAD"),
        dirty=bool(_git("status", "--porcelain")),
        machine=this_machine(),
        seconds=seconds,
        figures=figures,
    )


def record(summary: Summary, raw: object, results: Path = RESULTS, cache: Path = RAW) -> Path:
    """Write `summary` into `results` and the run's raw details into `cache`; the
    summary's path."""
    results.mkdir(parents=True, exist_ok=True)
    cache.mkdir(parents=True, exist_ok=True)
    facts = {"bench": summary.bench, "set": summary.set, "date": summary.date}
    _write_json(cache / summary.file, {**facts, "commit": summary.commit, "raw": raw})
    path = results / summary.file
    path.write_text(as_json(summary))
    return path


def as_json(summary: Summary) -> str:
    """The summary's file: a figure a line, so that a rerun's diff shows what moved."""
    facts = msgspec.to_builtins(summary)
    figures = [json.dumps(f, ensure_ascii=False) for f in facts.pop("figures")]
    head = json.dumps(facts, indent=2, ensure_ascii=False).removesuffix("\n}")
    return head + ',\n  "figures": [\n    ' + ",\n    ".join(figures) + "\n  ]\n}\n"


def _write_json(path: Path, payload: object) -> None:
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")


def load(path: Path) -> Summary:
    # The standard library's decoder, since a figure may be NaN (a percentile of nothing).
    return msgspec.convert(json.loads(path.read_text()), Summary)


def committed(results: Path = RESULTS) -> dict[str, list[Summary]]:
    """Every summary in `results`, by bench; a bench's full run before its quick one."""
    out: dict[str, list[Summary]] = {}
    for path in sorted(results.glob("*.json")):
        summary = load(path)
        out.setdefault(summary.bench, []).append(summary)
    for summaries in out.values():
        summaries.sort(key=lambda s: s.set == "quick")
    return out
