"""Choose ranking settings by corpora held out of the choice (leave one corpus out).

    python -m bench.ranking.loco --index apm=DIR[:SOURCE] --index rustc=DIR ... [--dump FILE]

Every answerable set of every corpus given (bench/ranking/sets and the shared query files;
a set is a file's queries of one class) is retrieved once; each candidate setting then
ranks those candidates again (`Engine.rank`), as the sweep does. A set's floor is the
larger of RRF's figure and the better single retriever's less a point (MRR@10; nDCG@10 on
graded sets). For each corpus in turn, the candidate is chosen on the other corpora's sets
alone (fewest sets below their floor, then the largest mean margin over the floor) and
scored on the held-out corpus's sets. A choice that generalises meets the floor on every
held-out set; one that was fitted does not.

Prints the candidates' margins per set, then the table of folds: for each held-out corpus,
the candidate chosen without it and its figure against the floor, RRF and the best single
retriever there, and the shipped default's figure beside it.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass

import msgspec

from docdex.evaluation.scoring import load_queries
from docdex.index_format.layout import DataDir
from docdex.model.embedder import Embedder
from docdex.server.engine import DEFAULT_SETTINGS, DenseTrust, Engine, EngineSettings, Fusion

from .report import parse_index
from .sweep import BASELINES, Retrieved, answerable_files, floor_of, score
from bench.tables import markdown

NEVER = DenseTrust(start=1.0, slope=0.0)  # the dense list never weighs more than BM25's


@dataclass(frozen=True)
class Candidate:
    name: str
    settings: EngineSettings


def _setting(**fields: object) -> EngineSettings:
    """The shipped default, no rerank, with `fields` changed."""
    return msgspec.structs.replace(DEFAULT_SETTINGS, reranker="none", **fields)


def _adaptive(**fields: object) -> EngineSettings:
    """The adaptive fusion with no query form (every query fused alike), `fields` changed."""
    return _setting(prose_words=0, **fields)


def candidates() -> list[Candidate]:
    """The shipped default first; then the adaptive fusion with every query alike (the
    default before the query form), the weighted fusion and RRF at several rank constants;
    the adaptive variants (rank constant, dense trust, heading weight); and the query form,
    prose from a number of words, fused by the adaptive ranks (with or without the literal
    bonus) or by RRF."""
    out = [
        Candidate("default", _setting()),
        Candidate("adaptive, every query alike", _adaptive()),
        Candidate("weighted", _adaptive(fusion=Fusion.WEIGHTED)),
    ]
    out += [Candidate(f"rrf k={k}", _adaptive(fusion=Fusion.RRF, rrf_k=k)) for k in (10, 30, 60)]
    for k in (10, 30, 60):
        for label, trust in (("trust .70/20", DenseTrust(0.70, 20.0)), ("equal", NEVER)):
            for heading in (0.0, 0.5):
                out.append(
                    Candidate(
                        f"adaptive k={k} {label} heading {heading:g}",
                        _adaptive(adaptive_k=k, dense_trust=trust, adaptive_heading_weight=heading),
                    )
                )
    for words in (6, 8, 10, 12):
        for literals in (True, False):
            out.append(
                Candidate(
                    f"prose from {words} words{'' if literals else ' no literal bonus'}",
                    _setting(
                        prose_words=words, prose_literals=literals, prose_fusion=Fusion.ADAPTIVE
                    ),
                )
            )
        out.append(
            Candidate(
                f"prose from {words} words by RRF k=10",
                _setting(prose_words=words, prose_literals=False, prose_fusion=Fusion.RRF),
            )
        )
        out.append(
            Candidate(
                f"prose from {words} words or a question, by RRF k=10",
                _setting(
                    prose_words=words,
                    prose_questions=True,
                    prose_literals=False,
                    prose_fusion=Fusion.RRF,
                ),
            )
        )
    out.append(
        Candidate(
            "prose: a question only, by RRF k=10",
            _setting(prose_words=0, prose_questions=True, prose_fusion=Fusion.RRF),
        )
    )
    unique: dict[EngineSettings, Candidate] = {}
    for candidate in out:
        unique.setdefault(candidate.settings, candidate)
    return list(unique.values())


@dataclass
class ScoredSet:
    corpus: str
    label: str
    queries: int
    floor: float
    rrf: float
    best_single: float
    by_candidate: dict[str, float]


def score_set(
    corpus: str, label: str, engine: Engine, retrieved: list[Retrieved], cands: list[Candidate]
) -> ScoredSet:
    baselines = {b: score(engine.with_settings(_setting(fusion=b)), retrieved) for b in BASELINES}
    return ScoredSet(
        corpus,
        label,
        len(retrieved),
        floor_of(baselines),
        baselines[Fusion.RRF],
        max(baselines[Fusion.BM25], baselines[Fusion.DENSE]),
        {c.name: score(engine.with_settings(c.settings), retrieved) for c in cands},
    )


def misses_and_margin(sets: list[ScoredSet], name: str) -> tuple[int, float]:
    margins = [s.by_candidate[name] - s.floor for s in sets]
    return sum(m < -1e-9 for m in margins), sum(margins) / len(margins)


def choose(sets: list[ScoredSet], cands: list[Candidate]) -> str:
    """The candidate with the fewest sets below their floor, then the largest mean margin."""

    def rank(name: str) -> tuple[int, float]:
        missed, mean = misses_and_margin(sets, name)
        return missed, -mean

    return min((c.name for c in cands), key=rank)


def folds(sets: list[ScoredSet], cands: list[Candidate]) -> list[list[str]]:
    rows = [
        [
            "held out",
            "set (queries)",
            "chosen without it",
            "its figure",
            "floor",
            "RRF",
            "best single",
            "default",
        ]
    ]
    for corpus in dict.fromkeys(s.corpus for s in sets):
        chosen = choose([s for s in sets if s.corpus != corpus], cands)
        for s in (s for s in sets if s.corpus == corpus):
            value = s.by_candidate[chosen]
            mark = " **below**" if value < s.floor - 1e-9 else ""
            rows.append(
                [
                    corpus,
                    f"{s.label} ({s.queries})",
                    chosen,
                    f"{value:.3f}{mark}",
                    f"{s.floor:.3f}",
                    f"{s.rrf:.3f}",
                    f"{s.best_single:.3f}",
                    f"{s.by_candidate['default']:.3f}",
                ]
            )
    return rows


def margins(sets: list[ScoredSet], cands: list[Candidate]) -> list[list[str]]:
    rows = [["candidate", "sets below floor", "mean margin", "worst margin"]]
    for c in cands:
        missed, mean = misses_and_margin(sets, c.name)
        worst = min(s.by_candidate[c.name] - s.floor for s in sets)
        rows.append([c.name, str(missed), f"{mean:+.3f}", f"{worst:+.3f}"])
    return rows


def print_table(rows: list[list[str]]) -> None:
    print("\n".join([*markdown(rows), ""]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ranking.loco")
    parser.add_argument("--index", action="append", default=[], metavar="CORPUS=DIR[:SOURCE]")
    parser.add_argument("--dump", metavar="FILE", help="write every set's figures as JSON")
    args = parser.parse_args(argv)
    embedder = Embedder.load(for_queries=True)
    cands = candidates()
    sets: list[ScoredSet] = []
    for corpus, (data, source) in parse_index(args.index).items():
        engine = Engine.open(DataDir(data), embedder)
        scope = engine.scope(source=source)
        for name, path in answerable_files(corpus):
            print(f"retrieving {name}", file=sys.stderr, flush=True)
            by_class: dict[str, list[Retrieved]] = {}
            for query in (q for q in load_queries(path) if q.relevant):
                by_class.setdefault(query.cls, []).append(
                    Retrieved(query, engine.retrieve(query.query, scope))
                )
            for cls, retrieved in sorted(by_class.items()):
                sets.append(score_set(corpus, f"{name} {cls}", engine, retrieved, cands))
    if args.dump:
        with open(args.dump, "w") as out:
            json.dump([s.__dict__ for s in sets], out, indent=1)
    print_table(margins(sets, cands))
    print_table(folds(sets, cands))
    return 0


if __name__ == "__main__":
    sys.exit(main())
