"""`just bench [SET|NAME...]`: run benchmarks, print one table, write bench/results/.

Sets: `quick` (a few minutes, everyday use) and `full` (everything the issues promise, on
the large corpora; about an hour on 2 cores). Single benchmarks run by name.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable

from bench.common import Figure


def _indexing(name: str, *args, **kwargs) -> Callable[[], list[Figure]]:
    return lambda: importlib.import_module("bench.performance.indexing").bench_corpus(
        name, *args, **kwargs
    )


def _lazy(module: str, function: str) -> Callable[[], list[Figure]]:
    return lambda: getattr(importlib.import_module(f"bench.performance.{module}"), function)()


BENCHMARKS: dict[str, Callable[[], list[Figure]]] = {
    "index-apm": _indexing("apm", 30),
    "index-rustc": _indexing("rustc", 200, full=False),
    "index-powershell": _indexing("powershell", 200, share=0.25),
    "hooks": _lazy("hooks", "bench_push_overhead"),
    "hooks-rustc": _lazy("hooks", "bench_rustc_push_to_searchable"),
    "queries": _lazy("queries", "bench_queries"),
    "watch": _lazy("watch", "bench_watch_latency"),
    "serve-powershell": _lazy("queries", "bench_serving_powershell"),
    "answers": _lazy("answers", "bench_answers"),
    "web": _lazy("web", "bench_web_keystroke"),
    "refs": _lazy("refs", "bench_refs"),
    "embed-graphs": _lazy("embed_graphs", "bench_embed_graphs"),
    "scale": _lazy("scale", "bench_scale"),
    "scale-quick": _lazy("scale", "bench_scale_quick"),
    "replicas": _lazy("replicas", "bench_replicas"),
}
SETS = {
    "quick": ["index-apm", "queries", "hooks", "watch"],
    "full": [
        "index-rustc",
        "index-powershell",
        "serve-powershell",
        "answers",
        "queries",
        "hooks",
        "hooks-rustc",
        "refs",
        "watch",
        "replicas",
        "scale",
        "embed-graphs",
    ],
}


def print_table(figures: list[Figure]) -> None:
    width = max(len(f"{f.bench}: {f.name}") for f in figures)
    for f in figures:
        verdict = "" if f.met is None else ("  ok" if f.met else "  MISSED")
        target = f"  target {f.target}" if f.target else ""
        label = f"{f.bench}: {f.name}"
        print(f"{label:<{width}}  {f.value:>12} {f.unit:<4}{target}{verdict}")


def main(argv: list[str]) -> int:
    names = [n for arg in (argv or ["full"]) for n in SETS.get(arg, [arg])]
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        choices = ", ".join([*SETS, *BENCHMARKS])
        print(f"unknown benchmark {unknown[0]!r}; choose from: {choices}", file=sys.stderr)
        return 2
    figures: list[Figure] = []
    for name in names:
        figures += BENCHMARKS[name]()
    if {"index-rustc", "index-powershell"} <= set(names):
        from .indexing import cost_follows_change

        figures += cost_follows_change(figures, "rustc", "powershell")
    print_table(figures)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
