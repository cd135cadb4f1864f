"""Sweep the adaptive fusion's dense trust over every answerable set, per split, and say
where W2.5's goal 2 holds (never below RRF, nor more than a point below the better single
retriever: MRR@10, nDCG@10 on graded sets).

    python -m bench.ranking.sweep --index apm=/tmp/docdex-lead/apm \
        --index rustc=/tmp/docdex-lead/rustc --index powershell=/tmp/docdex-lead/ps \
        --index msmarco=/tmp/docdex-lead/msmarco [--start .70,.75] [--slope 20,40]

Each query is retrieved once (the real search's candidates, `search.gather`); every
configuration and baseline then re-fuses those candidates with `search.fuse`, so the
sweep costs one retrieval per query whatever its size. Rows are the sets by class and
split; columns the goal's floor there, then the configurations (start / slope); `!` marks
a cell where the goal is missed.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from docdex.evaluation.scoring import DEPTH, Query, aggregate, load_queries, score_query
from docdex.index_format.layout import DataDir
from docdex.model.embedder import Embedder
from docdex.server.engine import search
from docdex.server.engine.loaded import Snapshot
from docdex.server.engine.query import QueryProfile
from docdex.server.engine.scope import Scope, as_entries

from .check import HERE, SETS, expected_split
from .report import SHARED, parse_index
from bench.common import EVAL, EVAL_FILES

SINGLE_RETRIEVER_SLACK = 0.01  # goal 2: at most a point below the better single retriever
BASELINES = ("bm25", "dense", "rrf")

Fuse = Callable[[Snapshot, list[search.Candidate], QueryProfile], None]


@dataclass(frozen=True)
class Retrieved:
    """One query's candidates, kept to be fused again under each configuration."""

    query: Query
    profile: QueryProfile
    candidates: list[search.Candidate]


def answerable_files(corpus: str) -> list[tuple[str, Path]]:
    names = [n for n, c in SETS.items() if c == corpus and not n.endswith("unanswerable.jsonl")]
    paths = [HERE / n for n in names]
    if corpus in EVAL_FILES:
        paths.append(EVAL / EVAL_FILES[corpus])
    return [(p.name.removesuffix(".jsonl"), p) for p in paths if p.exists()]


def retrieve_all(
    snapshot: Snapshot, embedder, path: Path, source: str
) -> dict[str, list[Retrieved]]:
    """The file's answerable queries, retrieved, by class and split (check.py's line rule,
    on the files report.py splits; the other shared files are whole)."""
    split = path.name in SETS or path.name in SHARED
    scope = Scope(as_entries(source))
    out: dict[str, list[Retrieved]] = {}
    for number, query in enumerate(load_queries(path), start=1):
        if not query.relevant:
            continue
        profile = search.validate(snapshot, query.query, DEPTH, scope.entries, "")
        candidates, _ = search.gather(snapshot, embedder, profile, scope)
        group = out.setdefault(f"{query.cls} {expected_split(number) if split else 'all'}", [])
        group.append(Retrieved(query, profile, candidates))
    return dict(sorted(out.items()))


def score(snapshot: Snapshot, retrieved: list[Retrieved], fuse: Fuse) -> float:
    """MRR@10 of the queries fused by `fuse` (nDCG@10 when they are graded)."""
    outcomes = []
    for r in retrieved:
        fuse(snapshot, r.candidates, r.profile)
        top = sorted(r.candidates, key=lambda c: -c.score)[:DEPTH]
        outcomes.append(score_query(r.query, [search.to_hit(snapshot, c) for c in top], False))
    [report] = aggregate([r.query for r in retrieved], outcomes, 3, "", 0).classes
    return report.ndcg_at_10 if report.ndcg_at_10 is not None else report.mrr_at_10


def fusion(name: str, trust: search.DenseTrust = search.DENSE_TRUST) -> Fuse:
    return lambda snapshot, cands, profile: search.fuse(snapshot, cands, profile, name, trust)


def floor_of(baselines: dict[str, float]) -> float:
    best_single = max(baselines["bm25"], baselines["dense"])
    return max(baselines["rrf"], best_single - SINGLE_RETRIEVER_SLACK)


def sweep(groups, trusts: list[search.DenseTrust]) -> list[list[str]]:
    """Groups: (label, snapshot, retrieved queries). A row per group, then one of misses."""
    missed = [0] * len(trusts)
    rows = []
    for label, snapshot, retrieved in groups:
        floor = floor_of({b: score(snapshot, retrieved, fusion(b)) for b in BASELINES})
        cells = [label, f"{floor:.3f}"]
        for i, trust in enumerate(trusts):
            value = score(snapshot, retrieved, fusion("adaptive", trust))
            miss = value < floor - 1e-9
            missed[i] += miss
            cells.append(f"{value:.3f}{'!' if miss else ''}")
        rows.append(cells)
    return [*rows, ["sets missed", "", *(str(m) for m in missed)]]


def header(trusts: list[search.DenseTrust]) -> list[str]:
    names = [f"{t.start:.2f} / {t.slope:g}" for t in trusts]
    names[0] += " (default)"
    return ["set, class, split (queries)", "goal: at least", *names]


def floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ranking.sweep")
    parser.add_argument("--index", action="append", default=[], metavar="CORPUS=DIR[:SOURCE]")
    parser.add_argument("--start", type=floats, default=[0.70, 0.72, 0.75, 0.78])
    parser.add_argument("--slope", type=floats, default=[20.0, 40.0])
    args = parser.parse_args(argv)
    embedder = Embedder.load(for_queries=True)
    groups = []
    for corpus, (data, source) in parse_index(args.index).items():
        snapshot = Snapshot.load(DataDir(data), embedder=embedder)
        for name, path in answerable_files(corpus):
            print(f"retrieving {name}", file=sys.stderr, flush=True)
            for group, retrieved in retrieve_all(snapshot, embedder, path, source).items():
                groups.append((f"{name} {group} ({len(retrieved)})", snapshot, retrieved))
    swept = [search.DenseTrust(a, b) for a, b in itertools.product(args.start, args.slope)]
    trusts = [search.DENSE_TRUST, *(t for t in swept if t != search.DENSE_TRUST)]
    table = [header(trusts), *sweep(groups, trusts)]
    for row in table:
        print("| " + " | ".join(row) + " |")
        if row is table[0]:
            print("|" + "---|" * len(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
