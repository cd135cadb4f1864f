"""`just faults [quick|full] [NAME...]`: run fault scenarios, print their rows, keep their
summaries; `just faults tables` rewrites docs/reliability.md's tables without running any.

Each scenario is a module bench/faults/<name>.py with `run(quick, work) -> list[Row]`. A
run's summary goes to bench/results/faults-<name>.json (the quick set's to
faults-<name>.quick.json: the quick set is a smoke test, the full run is the claim, and
each file holds one run's commit and machine), its rows with their notes to the bench
cache, and the scenario's table in docs/reliability.md is rendered again from its
summaries (bench/tables.py).
"""

from __future__ import annotations

import importlib
import sys
import tempfile
import time
from pathlib import Path

import msgspec

from .rows import Row, as_figures
from bench import tables
from bench.common import CACHE, say
from bench.summary import record, summarise

SCENARIOS = {  # name -> module
    "fuzz": "fuzz",
    "probe": "probe",
    "hostile": "hostile",
    "disk-full": "diskfull",
    "crash": "crash",
    "damage": "damage",
    "concurrent": "concurrent",
    "slow-sockets": "slow_sockets",
    "soak": "soak",
    "cost": "cost",
}
MODES = ("quick", "full")  # `quick NAME...`: those scenarios' quick runs


def bench_name(scenario: str) -> str:
    return f"{tables.FAULTS}{scenario}"


def run_scenario(name: str, quick: bool) -> list[Row]:
    module = importlib.import_module(f"bench.faults.{SCENARIOS[name]}")
    CACHE.mkdir(parents=True, exist_ok=True)
    which = "quick" if quick else "full"
    say(f"[faults] {name} ({which}) ...")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(
        prefix=f"faults-{name}-", dir=CACHE, ignore_cleanup_errors=True
    ) as tmp:
        rows = module.run(quick, Path(tmp))
    seconds = round(time.monotonic() - started, 1)
    summary = summarise(bench_name(name), as_figures(rows), set=which, seconds=seconds)
    record(summary, {"rows": msgspec.to_builtins(rows)})
    say(f"[faults] {name} done in {seconds:.0f} s")
    return rows


def print_rows(rows: list[Row]) -> None:
    width = max((len(f"{r.scenario}: {r.injected}") for r in rows), default=0)
    for r in rows:
        label = f"{r.scenario}: {r.injected}"
        figures = ", ".join(f"{k} {v:g}" for k, v in r.figures.items())
        print(f"{label:<{width}}  x{r.count:<5} lost {r.lost:<3} {figures}")
        if r.notes:
            print(f"{'':<{width}}  {r.notes}")


def rewrite_tables(scenarios: list[str] | None = None) -> None:
    names = None if scenarios is None else [bench_name(s) for s in scenarios]
    for problem in tables.update(tables.RELIABILITY, names):
        say(f"[faults] {problem}")


def main(argv: list[str]) -> int:
    if argv == ["tables"]:
        rewrite_tables()
        return 0
    quick = "quick" in argv
    names = list(dict.fromkeys(a for a in argv if a not in MODES)) or list(SCENARIOS)
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        choices = ", ".join([*MODES, *SCENARIOS, "tables"])
        print(f"unknown scenario {unknown[0]!r}; choose from: {choices}", file=sys.stderr)
        return 2
    rows = [row for name in names for row in run_scenario(name, quick)]
    print_rows(rows)
    rewrite_tables(names)
    return 1 if any(r.lost for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
