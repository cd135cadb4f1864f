"""Whether the top hits answer on their own: per set of handwritten questions, the share
whose judged section lies wholly inside the text of one of the first three hits, and the
characters the answer carries, without the hits' context and with it.

    python -m bench.ranking.answers_alone --index apm=DATA_DIR[:SOURCE] ... \
        [--context CHARS ...] [--page-hits N ...]

Each question is answered as search_docs answers it (10 hits within the default budget of
characters): the engine's hits, then, for each context setting, widened and folded
(server/answers/widening.py, `search_with_context`). A judged section is its heading's
chunks with their subsections: the lines from the first chunk whose breadcrumb names the
judged heading to the last (compared as the scorer compares headings, `norm_heading`). A hit
holds it when it is of the same page and its text covers those lines; a judged section
longer than the widening bound (which no hit's text can hold) is held by a hit whose matched
chunk lies inside it and whose outline spans it: the part that answers, and where the rest
is. A hit that lists copies (another page's lines holding the same text as part of its own)
also holds a judged section of a copy's page that those lines cover, its text being uncut:
it shows that section's text. A long section is never held through a copy. Without context,
a section cut into several chunks is never held by one hit. Each context setting is measured
without copies folded and with them (search_docs' way).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import msgspec

from docdex.evaluation.scoring import Query, load_queries, norm_heading
from docdex.index_format.layout import DataDir
from docdex.index_format.records import ChunkRecord
from docdex.index_format.store import load_current
from docdex.model.choice import query_embedder
from docdex.model.model_environment import ModelEnvironment
from docdex.model.protocol import TextEmbedder
from docdex.server.answers.budget import DEFAULT_MAX_CHARS
from docdex.server.answers.widening import CONTEXT_CHARS, PAGE_HITS, search_with_context
from docdex.server.engine import DEFAULT_SETTINGS, Engine, EngineSettings, Hit, VersionReader

from .check import HERE, SETS
from .report import parse_index
from bench.tables import markdown

TOP = 3
ANSWERED = 10  # search_docs' default num_results


class Judged(msgspec.Struct, frozen=True):
    """A judged section: its page, its lines, and whether it is longer than the bound."""

    path: str
    first: int
    last: int
    long: bool

    def held_by(self, hit: Hit) -> bool:
        if self._copied(hit):
            return True
        if hit.path != self.path:
            return False
        if hit.start_line <= self.first and self.last <= hit.end_line and not hit.truncated:
            return True
        chunk_first, chunk_last = hit.matched_lines
        outlined = hit.outline[0] if hit.outline else None
        return (
            self.long
            and outlined is not None
            and self.first <= chunk_first
            and chunk_last <= self.last
            and outlined.start_line <= self.first
            and self.last <= outlined.end_line
        )

    def _copied(self, hit: Hit) -> bool:
        """Whether a copy the hit lists is of this page and covers the section: the hit's
        text, uncut, holds the same text."""
        return not hit.truncated and any(
            copy.path == self.path and copy.start_line <= self.first and self.last <= copy.end_line
            for copy in hit.copies
        )


def _section_chunks(index: VersionReader, doc_id: str, heading: str) -> list[ChunkRecord]:
    page = index.pages.get(doc_id)
    if page is None:
        return []
    wanted = norm_heading(heading)
    return [
        c for c in index.page_chunks(page) if any(norm_heading(h) == wanted for h in c.headings[1:])
    ]


def judged_section(index: VersionReader, source: str, path: str, heading: str) -> Judged | None:
    chunks = _section_chunks(index, f"{source}:{path}", heading)
    if not chunks:
        return None
    first, last = min(c.start_line for c in chunks), max(c.end_line for c in chunks)
    return Judged(path, first, last, sum(len(c.text) for c in chunks) > CONTEXT_CHARS)


class Variant(msgspec.Struct, frozen=True):
    """One way of answering: the hits' context (0: none), the hits of a page before the
    others' (0: any number), whether a hit holding part of its section carries its outline,
    and whether copies of an earlier hit's text are folded into it."""

    context_chars: int
    page_hits: int
    outlines: bool = True
    copies: bool = True

    @property
    def name(self) -> str:
        widen = f"context {self.context_chars:,}" if self.context_chars else "no context"
        spread = f", {self.page_hits} per page" if self.page_hits else ", any per page"
        shaped = (", outlines" if self.outlines else "") + (", copies" if self.copies else "")
        return widen + spread + shaped


class Outcome(msgspec.Struct, frozen=True):
    held: bool | None  # None: no judged section is in the index
    top_chars: int  # the first TOP hits' text
    answer_chars: int  # every hit's text
    pages: int  # the pages the hits are of


def answered(engine: Engine, source: str, query: Query, variant: Variant) -> Outcome:
    hits = search_with_context(
        engine,
        query.query,
        ANSWERED,
        engine.scope(source=source),
        DEFAULT_MAX_CHARS,
        context_chars=variant.context_chars,
        page_hits=variant.page_hits,
        outlines=variant.outlines,
        copies=variant.copies,
    ).results
    sections = [
        section
        for judged in [*query.relevant, *query.alt]
        if judged.heading
        and (section := judged_section(engine.index, source, judged.path, judged.heading))
    ]
    inside = any(section.held_by(h) for h in hits[:TOP] for section in sections)
    return Outcome(
        held=inside if sections else None,
        top_chars=sum(shown_chars(h) for h in hits[:TOP]),
        answer_chars=sum(shown_chars(h) for h in hits),
        pages=len({h.doc_id for h in hits}),
    )


def shown_chars(hit: Hit) -> int:
    """The characters a hit shows: its text and its outline's headings."""
    return len(hit.text) + sum(len(entry.heading) for entry in hit.outline)


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


def query_model(data: DataDir) -> TextEmbedder:
    """The query model of the model `data`'s current version was built with."""
    return query_embedder(load_current(data).embedder, 0, ModelEnvironment())


def open_engine(data: Path, settings: EngineSettings = DEFAULT_SETTINGS) -> Engine:
    """An engine over the current version of the data directory `data`, searching with the
    query model that version was built with."""
    return Engine.open(DataDir(data), query_model(DataDir(data)), settings=settings)


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
    variants = [Variant(0, 0, outlines=False, copies=False)] + [
        Variant(c, n, copies=copies)
        for c in contexts
        for n in page_hits
        for copies in (False, True)
    ]
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
        engine = open_engine(data)
        for name, of in SETS.items():
            if of == corpus and name.endswith("handwritten.jsonl"):
                rows += [measure(engine, HERE / name, source, v) for v in variants]
        engine.close()
    print("\n".join(markdown(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
