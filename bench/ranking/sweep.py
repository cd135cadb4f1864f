"""Sweep the adaptive fusion's dense trust over every answerable set, per split, and say
where the fusion's floor holds: never below RRF, nor more than a point below the better
single retriever (MRR@10; nDCG@10 on graded sets).

    python -m bench.ranking.sweep --index apm=/tmp/docdex-lead/apm \
        --index rustc=/tmp/docdex-lead/rustc --index powershell=/tmp/docdex-lead/ps \
        --index msmarco=/tmp/docdex-lead/msmarco [--start .70,.75] [--slope 20,40]

Each query is retrieved once (`Engine.retrieve`, the real search's candidates); every
configuration and baseline then ranks those candidates again (`Engine.rank` under its
settings), so the sweep costs one retrieval per query whatever its size. Rows are the sets
by class and split; columns the floor there, then the configurations (start / slope); `!`
marks a cell below the floor.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from dataclasses import dataclass
from pathlib import Path

import msgspec

from docdex.evaluation.scoring import DEPTH, Query, aggregate, load_queries, score_query
from docdex.index_format.layout import DataDir
from docdex.model.embedder import Embedder
from docdex.server.engine import DEFAULT_SETTINGS, DenseTrust, Engine, Fusion, Retrieval, Scope

from .check import HERE, SETS, expected_split
from .report import SHARED, parse_index
from bench.common import EVAL, EVAL_FILES
from bench.tables import markdown

SINGLE_RETRIEVER_SLACK = 0.01  # at most a point below the better single retriever
BASELINES = (Fusion.BM25, Fusion.DENSE, Fusion.RRF)


@dataclass(frozen=True)
class Retrieved:
    """One query's candidates, kept to be ranked again under each configuration."""

    query: Query
    retrieval: Retrieval


@dataclass(frozen=True)
class Group:
    label: str
    engine: Engine
    retrieved: list[Retrieved]


def answerable_files(corpus: str, shared: bool = True) -> list[tuple[str, Path]]:
    """(name, path) of the corpus's answerable query files; `shared`: its file of
    ../shared/eval too."""
    names = [n for n, c in SETS.items() if c == corpus and not n.endswith("unanswerable.jsonl")]
    paths = [HERE / n for n in names]
    if shared and corpus in EVAL_FILES:
        paths.append(EVAL / EVAL_FILES[corpus])
    return [(p.name.removesuffix(".jsonl"), p) for p in paths if p.exists()]


def retrieve_all(engine: Engine, path: Path, source: str) -> dict[str, list[Retrieved]]:
    """The file's answerable queries, retrieved, by class and split (check.py's line rule,
    on the files report.py splits; the other shared files are whole)."""
    split = path.name in SETS or path.name in SHARED
    scope = Scope(frozenset([source] if source else []))
    out: dict[str, list[Retrieved]] = {}
    for number, query in enumerate(load_queries(path), start=1):
        if not query.relevant:
            continue
        group = out.setdefault(f"{query.cls} {expected_split(number) if split else 'all'}", [])
        group.append(Retrieved(query, engine.retrieve(query.query, scope)))
    return dict(sorted(out.items()))


def settings_of(fusion: Fusion, trust: DenseTrust = DEFAULT_SETTINGS.dense_trust):
    """The default settings with this fusion and dense trust, and no rerank."""
    return msgspec.structs.replace(
        DEFAULT_SETTINGS, fusion=fusion, dense_trust=trust, reranker="none"
    )


def score(engine: Engine, retrieved: list[Retrieved]) -> float:
    """MRR@10 of the queries ranked by `engine` (nDCG@10 when they are graded)."""
    return figures(engine, retrieved)[0]


def figures(engine: Engine, retrieved: list[Retrieved]) -> tuple[float, float | None]:
    """`score`, and the section MRR@10 beside it (None: no query judges a section)."""
    outcomes = [score_query(r.query, engine.rank(r.retrieval, DEPTH), False) for r in retrieved]
    [report] = aggregate([r.query for r in retrieved], outcomes, 3, "", 0).classes
    figure = report.ndcg_at_10 if report.ndcg_at_10 is not None else report.mrr_at_10
    return figure, report.section_mrr_at_10


def floor_of(baselines: dict[Fusion, float]) -> float:
    best_single = max(baselines[Fusion.BM25], baselines[Fusion.DENSE])
    return max(baselines[Fusion.RRF], best_single - SINGLE_RETRIEVER_SLACK)


def sweep(groups: list[Group], trusts: list[DenseTrust]) -> list[list[str]]:
    """A row per group, then one of misses."""
    missed = [0] * len(trusts)
    rows = []
    for group in groups:
        engine, retrieved = group.engine, group.retrieved
        baselines = {b: score(engine.with_settings(settings_of(b)), retrieved) for b in BASELINES}
        floor = floor_of(baselines)
        cells = [group.label, f"{floor:.3f}"]
        for i, trust in enumerate(trusts):
            value = score(engine.with_settings(settings_of(Fusion.ADAPTIVE, trust)), retrieved)
            miss = value < floor - 1e-9
            missed[i] += miss
            cells.append(f"{value:.3f}{'!' if miss else ''}")
        rows.append(cells)
    return [*rows, ["sets missed", "", *(str(m) for m in missed)]]


def header(trusts: list[DenseTrust]) -> list[str]:
    names = [f"{t.start:.2f} / {t.slope:g}" for t in trusts]
    names[0] += " (default)"
    return ["set, class, split (queries)", "floor", *names]


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
        engine = Engine.open(DataDir(data), embedder)
        for name, path in answerable_files(corpus):
            print(f"retrieving {name}", file=sys.stderr, flush=True)
            for label, retrieved in retrieve_all(engine, path, source).items():
                groups.append(Group(f"{name} {label} ({len(retrieved)})", engine, retrieved))
    default = DEFAULT_SETTINGS.dense_trust
    swept = [DenseTrust(a, b) for a, b in itertools.product(args.start, args.slope)]
    trusts = [default, *(t for t in swept if t != default)]
    table = [header(trusts), *sweep(groups, trusts)]
    print("\n".join(markdown(table)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
