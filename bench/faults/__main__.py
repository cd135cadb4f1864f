"""`just chaos [quick|full] [NAME...]`: run fault scenarios, print the table, write results.

Each scenario is a module bench/faults/<name>.py with `run(quick, work) -> list[Row]`; the
driver runs those that exist, writes bench/results/chaos-<name>.json (quick runs:
chaos-<name>.quick.json) and regenerates the table in docs/reliability.md from every
results file, a full run's rows before a quick run's.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
import tempfile
import time
from pathlib import Path

import msgspec

from .rows import Row
from bench.common import CACHE, RESULTS, ROOT, machine, say

SCENARIOS = {  # name -> module
    "fuzz": "fuzz",
    "disk-full": "diskfull",
    "crash": "crash",
    "damage": "damage",
    "concurrent": "concurrent",
    "slow-sockets": "slow_sockets",
    "soak": "soak",
}
MODES = ("quick", "full")  # `quick NAME...`: those scenarios' quick runs
DOC = ROOT / "docs" / "reliability.md"
BEGIN, END = "<!-- chaos:begin -->", "<!-- chaos:end -->"


def available(name: str) -> bool:
    return importlib.util.find_spec(f"bench.faults.{SCENARIOS[name]}") is not None


def run_scenario(name: str, quick: bool) -> list[Row]:
    module = importlib.import_module(f"bench.faults.{SCENARIOS[name]}")
    CACHE.mkdir(parents=True, exist_ok=True)
    say(f"[chaos] {name} ({'quick' if quick else 'full'}) ...")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(
        prefix=f"chaos-{name}-", dir=CACHE, ignore_cleanup_errors=True
    ) as tmp:
        rows = module.run(quick, Path(tmp))
    seconds = time.monotonic() - started
    write_rows(name, quick, rows, seconds)
    say(f"[chaos] {name} done in {seconds:.0f} s")
    return rows


def results_path(name: str, quick: bool) -> Path:
    return RESULTS / f"chaos-{name}{'.quick' if quick else ''}.json"


def write_rows(name: str, quick: bool, rows: list[Row], seconds: float) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = results_path(name, quick)
    payload = {
        "bench": f"chaos-{name}",
        "set": "quick" if quick else "full",
        "machine": machine(),
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "seconds": round(seconds, 1),
        "rows": msgspec.to_builtins(rows),
    }
    path.write_text(json.dumps(payload, indent=2) + "\n")
    return path


def recorded_rows() -> list[tuple[str, str, Row]]:
    """(set, commit, row) for every scenario with results, its full run's if it has one."""
    out = []
    for name in SCENARIOS:
        for quick in (False, True):
            path = results_path(name, quick)
            if path.exists():
                payload = json.loads(path.read_text())
                commit = payload["machine"]["commit"]
                rows = msgspec.convert(payload["rows"], list[Row])
                out += [(payload["set"], commit, row) for row in rows]
                break
    return out


def format_figures(figures: dict[str, float]) -> str:
    return ", ".join(f"{k} {_number(v)}" for k, v in figures.items())


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.3g}"


def markdown_table(rows: list[tuple[str, str, Row]]) -> str:
    lines = [
        "| scenario | injected | times | lost | figures | set, commit |",
        "|---|---|---:|---:|---|---|",
    ]
    for which, commit, row in rows:
        cells = [row.scenario, row.injected, str(row.count), str(row.lost)]
        cells += [format_figures(row.figures), f"{which}, {commit}"]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


def update_doc(table: str) -> None:
    text = DOC.read_text()
    head, begin, rest = text.partition(BEGIN)
    _old, end, tail = rest.partition(END)
    if not begin or not end:
        say(f"[chaos] {DOC} has no {BEGIN} ... {END} markers; table not written")
        return
    DOC.write_text(f"{head}{BEGIN}\n{table}\n{END}{tail}")


def print_rows(rows: list[Row]) -> None:
    width = max((len(f"{r.scenario}: {r.injected}") for r in rows), default=0)
    for r in rows:
        label = f"{r.scenario}: {r.injected}"
        print(f"{label:<{width}}  x{r.count:<5} lost {r.lost:<3} {format_figures(r.figures)}")
        if r.notes:
            print(f"{'':<{width}}  {r.notes}")


def main(argv: list[str]) -> int:
    quick = "quick" in argv
    names = [a for a in argv if a not in MODES] or list(SCENARIOS)
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        choices = ", ".join([*MODES, *SCENARIOS])
        print(f"unknown scenario {unknown[0]!r}; choose from: {choices}", file=sys.stderr)
        return 2
    rows: list[Row] = []
    for name in dict.fromkeys(names):
        if not available(name):
            say(f"[chaos] {name}: bench/faults/{SCENARIOS[name]}.py is not there yet; skipped")
            continue
        rows += run_scenario(name, quick)
    print_rows(rows)
    update_doc(markdown_table(recorded_rows()))
    return 1 if any(r.lost for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
