"""Whether the top hits answer on their own: per set of handwritten questions, the share
whose judged section lies wholly inside the text of one of the first three hits, and the
characters the answer carries, without the hits' context and with it.

    python -m bench.ranking.answers_alone --index apm=DATA_DIR[:SOURCE] ... \
        [--context CHARS ...] [--page-hits N ...]

Each question is answered as search_docs answers it (10 hits within the default budget of
characters): the engine's hits, then, for each context setting, widened and folded
(server/answers/widening.py). A judged section is its heading's chunks with their
subsections: the lines from the first chunk whose breadcrumb names the judged heading to the
last (compared as the scorer compares headings, `norm_heading`). A hit holds it when it is of
the same page and its text covers those lines. Without context, a section cut into several
chunks is never held by one hit.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import msgspec

from docdex.evaluation.scoring import Query, load_queries, norm_heading
from docdex.index_format.layout import DataDir
from docdex.model.embedder import Embedder
from docdex.server.answers.budget import DEFAULT_MAX_CHARS
from docdex.server.answers.widening import CONTEXT_CHARS, PAGE_HITS, hits_to_ask, with_context
from docdex.server.engine import Engine, VersionReader

from .check import HERE, SETS
from .report import parse_index
from bench.tables import markdown

TOP = 3
ANSWERED = 10  # search_docs' default num_results


def section_span(index: VersionReader, doc_id: str, heading: str) -> tuple[int, int] | None:
    page = index.pages.get(doc_id)
    if page is None:
        return None
    wanted = norm_heading(heading)
    spans = [
        (c.start_line, c.end_line)
        for c in index.page_chunks(page)
        if any(norm_heading(h) == wanted for h in c.headings[1:])
    ]
    return (min(s for s, _ in spans), max(e for _, e in spans)) if spans else None


class Variant(msgspec.Struct, frozen=True):
    """One way of answering: the hits' context (0: none), and the hits of a page before the
    others' (0: any number)."""

    context_chars: int
    page_hits: int

    @property
    def name(self) -> str:
        widen = f"context {self.context_chars:,}" if self.context_chars else "no context"
        return widen + (f", {self.page_hits} per page" if self.page_hits else ", any per page")


class Outcome(msgspec.Struct, frozen=True):
    held: bool | None  # None: no judged section is in the index
    top_chars: int  # the first TOP hits' text
    answer_chars: int  # every hit's text
    pages: int  # the pages the hits are of


def answered(engine: Engine, source: str, query: Query, variant: Variant) -> Outcome:
    found = engine.search(query.query, hits_to_ask(ANSWERED), engine.scope(source=source))
    hits = with_context(
        engine.index, found, ANSWERED, DEFAULT_MAX_CHARS, variant.context_chars, variant.page_hits
    ).results
    spans = []
    for judged in [*query.relevant, *query.alt]:
        if judged.heading:
            span = section_span(engine.index, f"{source}:{judged.path}", judged.heading)
            if span is not None:
                spans.append((judged.path, span))
    inside = any(
        h.path == path and h.start_line <= first and h.end_line >= last and not h.truncated
        for h in hits[:TOP]
        for path, (first, last) in spans
    )
    return Outcome(
        held=inside if spans else None,
        top_chars=sum(len(h.text) for h in hits[:TOP]),
        answer_chars=sum(len(h.text) for h in hits),
        pages=len({h.doc_id for h in hits}),
    )


def measure(engine: Engine, path: Path, source: str, variant: Variant) -> list[str]:
    outcomes = [answered(engine, source, q, variant) for q in load_queries(path) if q.relevant]
    judged = [o.held for o in outcomes if o.held is not None]
    share = sum(judged) / len(judged) if judged else float("nan")
    top = statistics.median(o.top_chars for o in outcomes) if outcomes else 0
    whole = statistics.median(o.answer_chars for o in outcomes) if outcomes else 0
    pages = statistics.median(o.pages for o in outcomes) if outcomes else 0
    return [
        path.name,
        variant.name,
        str(len(judged)),
        f"{share:.0%}",
        f"{top:,.0f}",
        f"{whole:,.0f}",
        f"{pages:g}",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ranking.answers_alone")
    parser.add_argument("--index", action="append", default=[], metavar="CORPUS=DIR[:SOURCE]")
    parser.add_argument(
        "--context",
        action="append",
        type=int,
        metavar="CHARS",
        help="the most characters a hit widens to, measured beside none (default: the shipped)",
    )
    parser.add_argument(
        "--page-hits",
        action="append",
        type=int,
        metavar="N",
        help="hits of a page before the others' to measure (0: any; default: the shipped)",
    )
    args = parser.parse_args(argv)
    contexts = args.context or [CONTEXT_CHARS]
    page_hits = args.page_hits or [PAGE_HITS]
    variants = [Variant(0, 0)] + [Variant(c, n) for c in contexts for n in page_hits]
    embedder = Embedder.load(for_queries=True)
    rows = [
        [
            "set",
            "answered with",
            "questions judged by section",
            "held by a top-3 hit",
            "median chars of top 3",
            "median chars of 10 hits",
            "median pages of 10 hits",
        ]
    ]
    for corpus, (data, source) in parse_index(args.index).items():
        engine = Engine.open(DataDir(data), embedder)
        for name, of in SETS.items():
            if of == corpus and name.endswith("handwritten.jsonl"):
                rows += [measure(engine, HERE / name, source, v) for v in variants]
        engine.close()
    print("\n".join(markdown(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
