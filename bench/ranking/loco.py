"""Choose ranking settings by corpora held out of the choice (leave one corpus out).

    python -m bench.ranking.loco --index apm=DIR[:SOURCE] --index rustc=DIR ... [--dump FILE]
        [--without-shared] [--hubs DIR]

Every answerable set of every corpus given (bench/ranking/sets and the shared query files;
a set is a file's queries of one class) is retrieved once; each candidate setting then
ranks those candidates again (`Engine.rank`), as the sweep does. A set's floor is the
larger of RRF's figure and the better single retriever's less a point (MRR@10; nDCG@10 on
graded sets). For each corpus in turn, the candidate is chosen on the other corpora's sets
alone (fewest sets below their floor, then the largest mean margin over the floor, to a
thousandth, then the largest mean section MRR@10 over the sets that judge sections) and
scored on the held-out corpus's sets. A choice that generalises meets the floor on every
held-out set; one that was fitted does not.

Prints the candidates' margins per set, then the table of folds: for each held-out corpus,
the candidate chosen without it and its figure against the floor, RRF and the best single
retriever there, the shipped default's figure beside it, and both one's section MRR@10.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import msgspec

from docdex.evaluation.scoring import load_queries
from docdex.index_format.layout import DataDir
from docdex.model.embedder import Embedder
from docdex.server.engine import (
    DEFAULT_SETTINGS,
    DenseTrust,
    Engine,
    EngineSettings,
    Fusion,
    LexicalTrust,
)

from .hubs import Hubness, HubScaling, load_hubness, scaled
from .report import parse_index
from .sweep import BASELINES, Retrieved, answerable_files, figures, floor_of
from bench.tables import markdown

NEVER = DenseTrust(start=1.0, slope=0.0)  # the dense list never weighs more than BM25's


@dataclass(frozen=True)
class Candidate:
    name: str
    settings: EngineSettings
    hubs: HubScaling | None = None  # the dense side scaled by each chunk's hubness


def _setting(**fields: object) -> EngineSettings:
    """The shipped default, no rerank, with `fields` changed."""
    return msgspec.structs.replace(DEFAULT_SETTINGS, reranker="none", **fields)


def _form(**fields: object) -> EngineSettings:
    """adr/0035's default (the query form, no section additions), `fields` changed."""
    return _setting(**{**QUERY_FORM, **fields})


def _adaptive(**fields: object) -> EngineSettings:
    """The adaptive fusion with no query form (every query fused alike), `fields` changed."""
    return _form(prose_words=0, **fields)


QUERY_FORM = {  # adr/0035's default
    "definition_bonus": 0.0,
    "prose_heading_weight": 0.0,
    "prose_rrf_k": 10,
    "prose_definition_bonus": 0.0,
}


def candidates() -> list[Candidate]:
    """The shipped default first; then adr/0035's query form alone (the default before the
    section additions) and with them (a definition bonus, the heading overlap on prose);
    the default with the BM25 ranks weighed by BM25's own evidence, or prose fused by
    scores; the adaptive fusion with every query alike (the default before the query form),
    the weighted fusion and RRF at several rank constants; the adaptive variants (rank
    constant, dense trust, heading weight); and the query form, prose from a number of
    words, fused by the adaptive ranks (with or without the literal bonus) or by RRF."""
    out = [Candidate("default", _setting()), Candidate("query form (adr/0035)", _form())]
    out += [
        Candidate(f"query form, definition bonus {bonus:g}", _form(definition_bonus=bonus))
        for bonus in (0.25, 0.5, 1.0)
    ]
    out += [
        Candidate(f"query form, prose heading {weight:g}", _form(prose_heading_weight=weight))
        for weight in (0.02, 0.05, 0.1)
    ]
    out += [Candidate(f"query form, prose by RRF k={k}", _form(prose_rrf_k=k)) for k in (30, 60)]
    out += [
        Candidate(
            f"query form, definition bonus 0.5, on prose {bonus:g}",
            _form(definition_bonus=0.5, prose_definition_bonus=bonus),
        )
        for bonus in (0.02, 0.05, 0.1)
    ]
    out += [
        Candidate(
            f"query form, definition bonus 0.5, prose heading {weight:g}",
            _form(definition_bonus=0.5, prose_heading_weight=weight),
        )
        for weight in (0.02, 0.05)
    ]
    out += lexical_trusts()
    out += [
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
                    _form(prose_words=words, prose_literals=literals, prose_fusion=Fusion.ADAPTIVE),
                )
            )
        out.append(
            Candidate(
                f"prose from {words} words by RRF k=10",
                _form(prose_words=words, prose_literals=False, prose_fusion=Fusion.RRF),
            )
        )
        out.append(
            Candidate(
                f"prose from {words} words or a question, by RRF k=10",
                _form(
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
            _form(prose_words=0, prose_questions=True, prose_fusion=Fusion.RRF),
        )
    )
    unique: dict[EngineSettings, Candidate] = {}
    for candidate in out:
        unique.setdefault(candidate.settings, candidate)
    return list(unique.values())


# alpha, and whether the dense trust reads the raw best cosine
HUB_SCALINGS = [(a, True) for a in (0.05, 0.1, 0.15, 0.2, 0.25, 0.5, 1.0)] + [
    (0.5, False),
    (1.0, False),
]


def hub_scalings() -> list[Candidate]:
    """The shipped default with the dense side ranked by cos - alpha * r(x), r(x) a chunk's
    mean cosine to its ten nearest chunks (hubs.py); the adaptive fusion's dense trust
    reading the raw best cosine, or the scaled one."""
    return [
        Candidate(
            f"default, hubs scaled {alpha:g}{'' if raw else ', trust on scaled'}",
            _setting(),
            HubScaling(alpha, raw_trust=raw),
        )
        for alpha, raw in HUB_SCALINGS
    ]


def lexical_trusts() -> list[Candidate]:
    """The shipped default with the BM25 ranks weighed by BM25's own evidence on the query:
    the share of the query its first hit holds (full at all of it, or at half), the share
    each chunk holds, how far its first score stands above its tenth; and the default with
    prose fused by the weighted sum of both lists' normalised scores (CombSUM): BM25 over
    its best and the raw cosine (the weighted fusion's), or both rescaled min to max."""
    trusts = {
        "its first hit's coverage": LexicalTrust(coverage=1.0),
        "its first hit's coverage, full at half": LexicalTrust(coverage=0.5),
        "each chunk's coverage": LexicalTrust(coverage=1.0, each_chunk=True),
        "its spread, full at .5": LexicalTrust(spread=0.5),
    }
    out = [
        Candidate(f"default, BM25 weighed by {name}", _setting(lexical_trust=trust))
        for name, trust in trusts.items()
    ]
    out.append(Candidate("default, prose by CombSUM", _setting(prose_fusion=Fusion.WEIGHTED)))
    out.append(
        Candidate(
            "default, prose by CombSUM of min-max scores",
            _setting(prose_fusion=Fusion.WEIGHTED, prose_min_max=True),
        )
    )
    return out


@dataclass
class ScoredSet:
    corpus: str
    label: str
    queries: int
    floor: float
    rrf: float
    best_single: float
    by_candidate: dict[str, float]
    sections: dict[str, float]  # section MRR@10 by candidate; empty: no section judged


def score_set(
    corpus: str,
    label: str,
    engine: Engine,
    retrieved: list[Retrieved],
    cands: list[Candidate],
    hubs: Hubness | None = None,
) -> ScoredSet:
    baselines = {
        b: figures(engine.with_settings(_setting(fusion=b)), retrieved)[0] for b in BASELINES
    }

    def ranked_by(c: Candidate) -> list[Retrieved]:
        if c.hubs is None or hubs is None:
            return retrieved
        scaling = c.hubs
        return [Retrieved(r.query, scaled(r.retrieval, hubs, scaling)) for r in retrieved]

    scored = {c.name: figures(engine.with_settings(c.settings), ranked_by(c)) for c in cands}
    return ScoredSet(
        corpus,
        label,
        len(retrieved),
        floor_of(baselines),
        baselines[Fusion.RRF],
        max(baselines[Fusion.BM25], baselines[Fusion.DENSE]),
        {name: figure for name, (figure, _) in scored.items()},
        {name: section for name, (_, section) in scored.items() if section is not None},
    )


def misses_and_margin(sets: list[ScoredSet], name: str) -> tuple[int, float]:
    margins = [s.by_candidate[name] - s.floor for s in sets]
    return sum(m < -1e-9 for m in margins), sum(margins) / len(margins)


def mean_section_mrr(sets: list[ScoredSet], name: str) -> float:
    judged = [s.sections[name] for s in sets if s.sections]
    return sum(judged) / len(judged) if judged else 0.0


def choose(sets: list[ScoredSet], cands: list[Candidate]) -> str:
    """The candidate with the fewest sets below their floor, then the largest mean margin
    (to a thousandth: closer is a tie), then the largest mean section MRR@10."""

    def rank(name: str) -> tuple[int, float, float]:
        missed, mean = misses_and_margin(sets, name)
        return missed, -round(mean, 3), -mean_section_mrr(sets, name)

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
            "section MRR: chosen",
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
                    _section(s, chosen),
                    _section(s, "default"),
                ]
            )
    return rows


def _section(s: ScoredSet, name: str) -> str:
    return f"{s.sections[name]:.3f}" if s.sections else ""


def margins(sets: list[ScoredSet], cands: list[Candidate]) -> list[list[str]]:
    rows = [["candidate", "sets below floor", "mean margin", "worst margin", "mean section MRR"]]
    for c in cands:
        missed, mean = misses_and_margin(sets, c.name)
        worst = min(s.by_candidate[c.name] - s.floor for s in sets)
        section = mean_section_mrr(sets, c.name)
        rows.append([c.name, str(missed), f"{mean:+.3f}", f"{worst:+.3f}", f"{section:.3f}"])
    return rows


def print_table(rows: list[list[str]]) -> None:
    print("\n".join([*markdown(rows), ""]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ranking.loco")
    parser.add_argument("--index", action="append", default=[], metavar="CORPUS=DIR[:SOURCE]")
    parser.add_argument("--dump", metavar="FILE", help="write every set's figures as JSON")
    parser.add_argument(
        "--without-shared",
        action="store_true",
        help="bench/ranking's sets alone, not the query files of ../shared/eval",
    )
    parser.add_argument(
        "--skip-class",
        action="append",
        default=[],
        metavar="CLASS",
        help="leave the queries of this class out (literal: their one-token queries rank alike "
        "under every query form)",
    )
    parser.add_argument(
        "--hubs",
        type=Path,
        metavar="DIR",
        help="each corpus's chunk hubness, DIR/CORPUS.npz (python -m bench.ranking.hubs): "
        "add the candidates that scale the dense side by it",
    )
    args = parser.parse_args(argv)
    embedder = Embedder.load(for_queries=True)
    cands = candidates() + (hub_scalings() if args.hubs else [])
    sets: list[ScoredSet] = []
    for corpus, (data, source) in parse_index(args.index).items():
        engine = Engine.open(DataDir(data), embedder)
        hubs = load_hubness(args.hubs / f"{corpus}.npz") if args.hubs else None
        scope = engine.scope(source=source)
        for name, path in answerable_files(corpus, shared=not args.without_shared):
            print(f"retrieving {name}", file=sys.stderr, flush=True)
            by_class: dict[str, list[Retrieved]] = {}
            for query in (q for q in load_queries(path) if q.relevant):
                if query.cls in args.skip_class:
                    continue
                by_class.setdefault(query.cls, []).append(
                    Retrieved(query, engine.retrieve(query.query, scope))
                )
            for cls, retrieved in sorted(by_class.items()):
                sets.append(score_set(corpus, f"{name} {cls}", engine, retrieved, cands, hubs))
    if args.dump:
        with open(args.dump, "w") as out:
            json.dump([s.__dict__ for s in sets], out, indent=1)
    print_table(margins(sets, cands))
    print_table(folds(sets, cands))
    return 0


if __name__ == "__main__":
    sys.exit(main())
