"""How far a better choice among today's rankings could take "held by a top-3 hit".

    python -m bench.ranking.ceiling --index apm=DATA_DIR[:SOURCE] ...

Per handwritten set, for the questions judged by section (as bench/ranking/answers_alone
counts them): the share whose judged section a top-3 hit holds when the answer is shaped
(search_docs' way) from each ranking the engine can make here (the default fusion, RRF,
BM25 alone, the dense list alone); the share that one of them holds (an oracle choosing the
best ranking per question: no fusion of these lists that keeps one of their orders does
better); and the share whose judged section has a chunk among the default's first 30 and
first 100 hits (the rerank depth, and all search_docs takes): what a reranker of those
candidates could at best bring up. A chunk counts when it lies inside the judged section or
is a copy of one that does (the same content hash, another page).
"""

from __future__ import annotations

import argparse
import sys

import msgspec

from docdex.evaluation.scoring import Query, load_queries
from docdex.server.answers.budget import DEFAULT_MAX_CHARS
from docdex.server.answers.widening import search_with_context
from docdex.server.engine import DEFAULT_SETTINGS, Engine, EngineSettings, Fusion, Hit

from .answers_alone import ANSWERED, TOP, Judged, judged_section, open_engine
from .check import HERE, SETS
from .report import parse_index
from bench.tables import markdown

FUSED = msgspec.structs.replace(DEFAULT_SETTINGS, reranker="none")
RANKINGS = {  # "default" is the default fusion, without a rerank
    "default": FUSED,
    "rrf": msgspec.structs.replace(FUSED, fusion=Fusion.RRF),
    "bm25": msgspec.structs.replace(FUSED, fusion=Fusion.BM25),
    "dense": msgspec.structs.replace(FUSED, fusion=Fusion.DENSE),
}
# on an index with token vectors (`late_interaction = true`), the default fusion reranked
# by MaxSim at each of these weights too
MAXSIM_WEIGHTS = (0.5, 1.0, DEFAULT_SETTINGS.maxsim_weight)


def rankings(with_tokens: bool) -> dict[str, EngineSettings]:
    if not with_tokens:
        return RANKINGS
    maxsim = {
        f"maxsim {w:g}": msgspec.structs.replace(FUSED, reranker="maxsim", maxsim_weight=w)
        for w in MAXSIM_WEIGHTS
    }
    return RANKINGS | maxsim


RERANK_DEPTH = DEFAULT_SETTINGS.rerank_depth
CANDIDATES = 100  # what search_docs takes from the engine


def judged_sections(engine: Engine, source: str, query: Query) -> list[Judged]:
    return [
        section
        for judged in [*query.relevant, *query.alt]
        if judged.heading
        and (section := judged_section(engine.index, source, judged.path, judged.heading))
    ]


def held(engine: Engine, source: str, query: Query, sections: list[Judged]) -> bool:
    scope = engine.scope(source=source)
    hits = search_with_context(engine, query.query, ANSWERED, scope, DEFAULT_MAX_CHARS).results
    return any(section.held_by(hit) for hit in hits[:TOP] for section in sections)


def first_inside(engine: Engine, source: str, query: Query, sections: list[Judged]) -> int:
    """The rank of the default's first hit whose chunk lies inside a judged section or is a
    copy of one that does (0: none in its CANDIDATES best)."""
    scope = engine.scope(source=source)
    hits = engine.search(query.query, CANDIDATES, scope).results
    hashes = {h for s in sections for h in _hashes_inside(engine, source, s)}
    for rank, hit in enumerate(hits, 1):
        if any(_inside(s, hit) for s in sections) or _hash(engine, hit) in hashes:
            return rank
    return 0


def _inside(section: Judged, hit: Hit) -> bool:
    first, last = hit.matched_lines
    return hit.path == section.path and section.first <= first and last <= section.last


def _hashes_inside(engine: Engine, source: str, section: Judged) -> set[str]:
    page = engine.index.pages.get(f"{source}:{section.path}")
    chunks = engine.index.page_chunks(page) if page is not None else []
    return {
        c.content_hash
        for c in chunks
        if section.first <= c.start_line and c.end_line <= section.last
    }


def _hash(engine: Engine, hit: Hit) -> str:
    chunk = engine.index.chunk(hit.chunk_id)
    return chunk.content_hash if chunk is not None else ""


def share(flags: list[bool]) -> str:
    return f"{sum(flags) / len(flags):.0%}" if flags else "-"


def measure_set(engines: dict[str, Engine], source: str, name: str) -> list[str]:
    default = engines["default"]
    by_ranking: dict[str, list[bool]] = {ranking: [] for ranking in engines}
    oracle: list[bool] = []
    ranks: list[int] = []
    for query in load_queries(HERE / name):
        sections = judged_sections(default, source, query) if query.relevant else []
        if not sections:
            continue
        outcomes = {r: held(e, source, query, sections) for r, e in engines.items()}
        for ranking, outcome in outcomes.items():
            by_ranking[ranking].append(outcome)
        oracle.append(any(outcomes.values()))
        ranks.append(first_inside(default, source, query, sections))
    return [
        name,
        str(len(oracle)),
        *(share(by_ranking[r]) for r in engines),
        share(oracle),
        share([0 < r <= RERANK_DEPTH for r in ranks]),
        share([0 < r <= CANDIDATES for r in ranks]),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ranking.ceiling")
    parser.add_argument("--index", action="append", default=[], metavar="CORPUS=DIR[:SOURCE]")
    args = parser.parse_args(argv)
    for corpus, (data, source) in parse_index(args.index).items():
        base = open_engine(data, FUSED)
        engines = {
            r: base.with_settings(s) for r, s in rankings(base.index.has_token_vectors).items()
        }
        rows = [header(list(engines))]
        for name, of in SETS.items():
            if of == corpus and name.endswith("handwritten.jsonl"):
                rows.append(measure_set(engines, source, name))
        print("\n".join(markdown(rows)) + "\n")
        base.close()
    return 0


def header(names: list[str]) -> list[str]:
    return [
        "handwritten set",
        "judged by section",
        *(f"held: {r}" for r in names),
        "held by one of them",
        f"in the default's {RERANK_DEPTH}",
        f"in its {CANDIDATES}",
    ]


if __name__ == "__main__":
    sys.exit(main())
