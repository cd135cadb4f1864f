"""`just bench [SET|NAME...]`: run benchmarks, print their figures, keep their summaries.

Sets: `quick` (a few minutes, everyday use), `full` (every figure with a target, on the
large corpora; about an hour on 2 cores) and `index-ratio` (the two replays whose ratio has
a target). Single benchmarks run by name. Each run's summary goes to
bench/results/NAME.json and its table in docs/benchmarks.md is rendered from it;
`just bench tables` renders every table from the committed summaries, running nothing.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable

from bench import tables
from bench.common import Figure, say, write_results


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
    "hit-fields": _lazy("hit_fields", "bench_hit_fields"),
    "web": _lazy("web", "bench_web_keystroke"),
    "refs": _lazy("refs", "bench_refs"),
    "changes": _lazy("changes", "bench_changes"),
    "embed-graphs": _lazy("embed_graphs", "bench_embed_graphs"),
    "embed-peak": _lazy("embed_peak", "bench_embed_peak"),
    "scale": _lazy("scale", "bench_scale"),
    "scale-quick": _lazy("scale", "bench_scale_quick"),
    "replicas": _lazy("replicas", "bench_replicas"),
    "gauntlet": _lazy("gauntlet", "bench_gauntlet"),
    "first-search": _lazy("first_search", "bench_first_search"),
    "first-search-quick": _lazy("first_search", "bench_first_search_quick"),
    "first-search-powershell": _lazy("first_search", "bench_first_keywords_powershell"),
}
RATIO = "index-ratio"  # the replays' ratio, kept when both ran: its reference is in the run
SETS = {
    RATIO: ["index-rustc", "index-powershell"],
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
        "changes",
        "watch",
        "replicas",
        "scale",
        "embed-graphs",
        "embed-peak",
    ],
}


def print_table(figures: list[Figure]) -> None:
    width = max(len(f"{f.group}: {f.name}") for f in figures)
    for f in figures:
        verdict = "" if f.met is None else ("  ok" if f.met else "  MISSED")
        target = f"  target {f.target}" if f.target else ""
        label = f"{f.group}: {f.name}"
        print(f"{label:<{width}}  {f.value:>12} {f.unit:<4}{target}{verdict}")


def main(argv: list[str]) -> int:
    if argv == ["tables"]:
        for problem in tables.update(tables.BENCHMARKS):
            say(f"[bench] {problem}")
        return 0
    names = list(dict.fromkeys(n for arg in (argv or ["full"]) for n in SETS.get(arg, [arg])))
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        choices = ", ".join([*SETS, *BENCHMARKS, "tables"])
        print(f"unknown benchmark {unknown[0]!r}; choose from: {choices}", file=sys.stderr)
        return 2
    figures: list[Figure] = []
    for name in names:
        figures += BENCHMARKS[name]()
    if set(SETS[RATIO]) <= set(names):
        from .indexing import cost_follows_change

        ratio = cost_follows_change(figures, "rustc", "powershell")
        write_results(RATIO, ratio, {"from": SETS[RATIO]})
        figures += ratio
    print_table(figures)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
