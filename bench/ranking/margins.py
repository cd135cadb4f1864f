"""How sure a set's margin to its floor is: per answerable query file of a corpus and class
(the loco table's sets), the default's MRR@10 (nDCG@10 on graded sets) minus RRF's and minus
the better single retriever's, each with a 95 %
paired bootstrap interval over the file's questions, and the questions it ranks better and
worse than each.

    python -m bench.ranking.margins --index material=DATA_DIR[:SOURCE] ... [--skip-class CLASS]

A floor (bench/ranking/sweep.py, `floor_of`) is RRF's figure, or the better single
retriever's less a point when that is higher; the loco table compares each set's figure with
it. On a set of 25 questions one question moved from the first hit to the second moves
MRR@10 by .02: this says whether a figure under its floor is more than that.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Sequence

import msgspec

from docdex.evaluation.scoring import score_query
from docdex.server.engine import DEFAULT_SETTINGS, Engine, Fusion

from .answers_alone import open_engine
from .report import parse_index
from .sweep import DEPTH, SINGLE_RETRIEVER_SLACK, Retrieved, answerable_files, retrieve_all
from bench.tables import markdown

RESAMPLES = 10_000
BASELINES = (Fusion.RRF, Fusion.BM25, Fusion.DENSE)


def per_query(engine: Engine, retrieved: list[Retrieved], fusion: Fusion | None) -> list[float]:
    """Each query's figure under `fusion` without a rerank (None: the default, reranked
    by MaxSim on an index with token vectors): its nDCG@10 when it is graded, else its
    reciprocal rank (0 past DEPTH)."""
    if fusion is not None:
        baseline = msgspec.structs.replace(DEFAULT_SETTINGS, fusion=fusion, reranker="none")
        engine = engine.with_settings(baseline)
    out = []
    for item in retrieved:
        outcome = score_query(item.query, engine.rank(item.retrieval, DEPTH), False)
        if outcome.ndcg is not None:
            out.append(outcome.ndcg)
        else:
            out.append(1.0 / outcome.rank if outcome.rank else 0.0)
    return out


def interval(diffs: Sequence[float], resamples: int, seed: int = 7) -> tuple[float, float]:
    """The 95 % percentile interval of the mean of `diffs`, resampled with replacement."""
    rng = random.Random(seed)
    n = len(diffs)
    means = sorted(sum(rng.choices(diffs, k=n)) / n for _ in range(resamples))
    return means[int(0.025 * resamples)], means[int(0.975 * resamples) - 1]


def margin_cells(
    default: list[float], other: list[float], slack: float, resamples: int
) -> list[str]:
    diffs = [a - b + slack for a, b in zip(default, other, strict=True)]
    low, high = interval(diffs, resamples)
    mean = sum(diffs) / len(diffs)
    better = sum(a > b for a, b in zip(default, other, strict=True))
    worse = sum(a < b for a, b in zip(default, other, strict=True))
    return [f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]", f"{better} / {worse}"]


def measure(engine: Engine, name: str, retrieved: list[Retrieved], resamples: int) -> list[str]:
    default = per_query(engine, retrieved, None)
    by = {fusion: per_query(engine, retrieved, fusion) for fusion in BASELINES}
    single = max((Fusion.BM25, Fusion.DENSE), key=lambda f: sum(by[f]))
    mean = sum(default) / len(default)
    return [
        f"{name} ({len(retrieved)})",
        f"{mean:.3f}",
        f"{sum(by[Fusion.RRF]) / len(default):.3f}",
        *margin_cells(default, by[Fusion.RRF], 0.0, resamples),
        f"{single.value} {sum(by[single]) / len(default):.3f}",
        *margin_cells(default, by[single], SINGLE_RETRIEVER_SLACK, resamples),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ranking.margins")
    parser.add_argument("--index", action="append", default=[], metavar="CORPUS=DIR[:SOURCE]")
    parser.add_argument(
        "--resamples", type=int, default=RESAMPLES, help="bootstrap resamples of each set"
    )
    parser.add_argument(
        "--skip-class",
        action="append",
        default=[],
        metavar="CLASS",
        help="leave this class's queries out (as loco's: the tables use --skip-class literal)",
    )
    args = parser.parse_args(argv)
    rows = [
        [
            "set (questions)",
            "default",
            "RRF",
            "default - RRF [95 %]",
            "better / worse than RRF",
            "best single",
            "default - (best single - .01) [95 %]",
            "better / worse than it",
        ]
    ]
    for corpus, (data, source) in parse_index(args.index).items():
        engine = open_engine(data)
        for name, path in answerable_files(corpus):
            by_class: dict[str, list[Retrieved]] = {}
            for group, retrieved in retrieve_all(engine, path, source).items():
                cls = group.split()[0]
                if cls not in args.skip_class:
                    by_class.setdefault(cls, []).extend(retrieved)
            for cls, retrieved in by_class.items():
                rows.append(measure(engine, f"{name} {cls}", retrieved, args.resamples))
        engine.close()
    print("\n".join(markdown(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
