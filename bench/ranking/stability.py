"""Whether a source's ranking holds when other sources join it in one data directory.

    python -m bench.ranking.stability --pair sqlmodel=ALONE_DIR,MIXED_DIR[:SOURCE] ...

For each corpus, ALONE_DIR indexes it alone and MIXED_DIR indexes it beside other corpora
(the same commit). Every answerable query of the corpus's sets (and its shared query file)
is searched, restricted to the source, in both, with the default settings, with BM25 alone
and with dense alone: the share of queries whose first 10 hits, first 3 or first hit
differ (in order), and each set's MRR@10 and section MRR@10 in both. The searches run in
this process, on the engine the running code builds: run it once per version of the code
to compare them.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import msgspec

from docdex.evaluation.scoring import Query, aggregate, load_queries, score_query
from docdex.index_format.layout import DataDir
from docdex.model.embedder import Embedder
from docdex.server.engine import DEFAULT_SETTINGS, Engine, Fusion, Hit

from .sweep import answerable_files
from bench.tables import markdown

DEPTH = 10
RANKINGS = {"default": Fusion.ADAPTIVE, "bm25": Fusion.BM25, "dense": Fusion.DENSE}


@dataclass(frozen=True)
class Pair:
    corpus: str
    alone: Path
    mixed: Path
    source: str


def parse_pair(value: str) -> Pair:
    corpus, _, rest = value.partition("=")
    dirs, _, source = rest.partition(":")
    alone, _, mixed = dirs.partition(",")
    return Pair(corpus, Path(alone), Path(mixed), source or corpus)


def ranked(engine: Engine, source: str, queries: list[Query]) -> list[list[Hit]]:
    scope = engine.scope(source=source)
    return [engine.search(q.query, DEPTH, scope).results for q in queries]


def mrrs(queries: list[Query], hits: list[list[Hit]]) -> tuple[float, float | None]:
    outcomes = [score_query(q, h, False) for q, h in zip(queries, hits, strict=True)]
    [metrics] = aggregate(queries, outcomes, 3, "", 0).classes
    return metrics.mrr_at_10, metrics.section_mrr_at_10


def compare(pair: Pair, embedder: Embedder) -> list[list[str]]:
    engines = [Engine.open(DataDir(d), embedder) for d in (pair.alone, pair.mixed)]
    rows = []
    try:
        for name, path in answerable_files(pair.corpus):
            by_class: dict[str, list[Query]] = {}
            for q in load_queries(path):
                if q.relevant:
                    by_class.setdefault(q.cls, []).append(q)
            for cls, queries in sorted(by_class.items()):
                for label, fusion in RANKINGS.items():
                    settings = msgspec.structs.replace(
                        DEFAULT_SETTINGS, fusion=fusion, reranker="none"
                    )
                    alone, mixed = (
                        ranked(e.with_settings(settings), pair.source, queries) for e in engines
                    )
                    rows.append(row(f"{name} {cls} ({len(queries)})", label, queries, alone, mixed))
    finally:
        for engine in engines:
            engine.close()
    return rows


def row(
    label: str, ranking: str, queries: list[Query], alone: list[list[Hit]], mixed: list[list[Hit]]
) -> list[str]:
    def ids(hits: list[Hit]) -> list[str]:
        return [h.chunk_id for h in hits]

    def changed(depth: int) -> str:
        moved = sum(ids(a)[:depth] != ids(m)[:depth] for a, m in zip(alone, mixed, strict=True))
        return f"{moved / len(queries):.0%}"

    (page_a, section_a), (page_m, section_m) = mrrs(queries, alone), mrrs(queries, mixed)
    sections = "" if section_a is None else f"{section_a:.3f} -> {section_m:.3f}"
    return [
        label,
        ranking,
        changed(DEPTH),
        changed(3),
        changed(1),
        f"{page_a:.3f} -> {page_m:.3f}",
        sections,
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ranking.stability")
    parser.add_argument(
        "--pair", action="append", default=[], metavar="CORPUS=ALONE,MIXED[:SOURCE]"
    )
    args = parser.parse_args(argv)
    embedder = Embedder.load(for_queries=True)
    rows = [
        [
            "set (queries)",
            "ranking",
            "top 10 changed",
            "top 3 changed",
            "first hit changed",
            "MRR@10 alone -> mixed",
            "section MRR@10",
        ]
    ]
    for pair in map(parse_pair, args.pair):
        print(f"comparing {pair.corpus}", file=sys.stderr, flush=True)
        rows += compare(pair, embedder)
    print("\n".join(markdown(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
