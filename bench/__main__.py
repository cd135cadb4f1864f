"""`just bench [quick|full]`: run the benchmarks, print one table, write bench/results/."""

from __future__ import annotations

import sys

from .common import Figure
from .indexing import bench_indexing

SETS = {
    # everyday: a small full index and short replays, a few minutes
    "quick": lambda: bench_indexing("apm", {"apm": 30}),
    # everything the issues promise, on the big corpora
    "full": lambda: bench_indexing(
        "powershell", {"rustc": 200, "powershell": 200}, reference_share=0.25
    ),
}


def print_table(figures: list[Figure]) -> None:
    width = max(len(f"{f.bench}: {f.name}") for f in figures)
    for f in figures:
        verdict = "" if f.met is None else ("  ok" if f.met else "  MISSED")
        target = f"  target {f.target}" if f.target else ""
        print(f"{f.bench + ': ' + f.name:<{width}}  {f.value:>12} {f.unit:<4}{target}{verdict}")


def main(argv: list[str]) -> int:
    name = argv[0] if argv else "full"
    if name not in SETS:
        print(f"unknown benchmark set {name!r}; choose one of: {', '.join(SETS)}", file=sys.stderr)
        return 2
    print_table(SETS[name]())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
