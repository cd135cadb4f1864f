"""Section precision per handwritten set: whether the section that answers is the first hit.

    python -m bench.ranking.section_precision --index apm=DATA_DIR[:SOURCE] ... \
        [--before SETTING=VALUE]

Every handwritten set of the corpora given is retrieved once and ranked again (as the
sweep does) by BM25 alone, dense alone, RRF (k = 60), the ranking before (the default
with `--before`'s settings changed: `definition_bonus=0` is adr/0035's) and the default.
A row per set and configuration: page recall@1 and MRR@10, section recall@1, section
recall@3 and section MRR@10 (over the questions whose sections are judged).
"""

from __future__ import annotations

import argparse
import sys

import msgspec

from docdex.evaluation.scoring import DEPTH, aggregate, load_queries, score_query
from docdex.index_format.layout import DataDir
from docdex.model.embedder import Embedder
from docdex.server.engine import DEFAULT_SETTINGS, Engine, EngineSettings, Fusion

from .check import HERE, SETS
from .report import parse_index
from .sweep import Retrieved
from bench.tables import markdown

SINGLE = {"bm25": Fusion.BM25, "dense": Fusion.DENSE, "rrf": Fusion.RRF}


def configurations(before: list[str]) -> dict[str, EngineSettings]:
    plain = msgspec.structs.replace(DEFAULT_SETTINGS, reranker="none")
    out = {name: msgspec.structs.replace(plain, fusion=f) for name, f in SINGLE.items()}
    if before:
        changed = dict(_setting(s) for s in before)
        out["before"] = msgspec.structs.replace(plain, **changed)
    out["default"] = plain
    return out


def _setting(text: str) -> tuple[str, float | int]:
    name, _, value = text.partition("=")
    return name, float(value) if "." in value else int(value)


def figures(engine: Engine, retrieved: list[Retrieved]) -> list[str]:
    outcomes = [score_query(r.query, engine.rank(r.retrieval, DEPTH), False) for r in retrieved]
    [m] = aggregate([r.query for r in retrieved], outcomes, 3, "", 0).classes
    sections = [m.section_recall_at_1, m.section_recall_at_k, m.section_mrr_at_10]
    return [f"{m.recall_at_1:.3f}", f"{m.mrr_at_10:.3f}", *(f"{x or 0:.3f}" for x in sections)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ranking.section_precision")
    parser.add_argument("--index", action="append", default=[], metavar="CORPUS=DIR[:SOURCE]")
    parser.add_argument("--before", action="append", default=[], metavar="SETTING=VALUE")
    args = parser.parse_args(argv)
    embedder = Embedder.load(for_queries=True)
    configs = configurations(args.before)
    header = ["set (questions)", "ranking", "R@1", "MRR@10", "sec R@1", "sec R@3", "sec MRR@10"]
    rows = [header]
    for corpus, (data, source) in parse_index(args.index).items():
        engine = Engine.open(DataDir(data), embedder)
        scope = engine.scope(source=source)
        for name, of in SETS.items():
            if of != corpus or not name.endswith("handwritten.jsonl"):
                continue
            print(f"retrieving {name}", file=sys.stderr, flush=True)
            queries = [q for q in load_queries(HERE / name) if q.relevant]
            retrieved = [Retrieved(q, engine.retrieve(q.query, scope)) for q in queries]
            label = f"{name.removesuffix('.jsonl')} ({len(queries)})"
            for config, settings in configs.items():
                rows.append([label, config, *figures(engine.with_settings(settings), retrieved)])
        engine.close()
    print("\n".join(markdown(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
