"""Whether the top hits answer on their own: per set of handwritten questions, the share
whose judged section lies wholly inside the text of one of the first three hits, and the
characters those three hits carry.

    python -m bench.ranking.answers_alone --index apm=DATA_DIR[:SOURCE] ...

A judged section is its heading's chunks with their subsections: the lines from the first
chunk whose breadcrumb names the judged heading to the last (compared as the scorer
compares headings, `norm_heading`). A hit holds it when it is of the same page and its lines
cover that span. A section cut into several chunks is never held by one hit: that is what
this measures.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from docdex.evaluation.scoring import Query, load_queries, norm_heading
from docdex.index_format.layout import DataDir
from docdex.model.embedder import Embedder
from docdex.server.engine import Engine

from .check import HERE, SETS
from .report import parse_index
from bench.tables import markdown

TOP = 3


def section_span(engine: Engine, doc_id: str, heading: str) -> tuple[int, int] | None:
    page = engine.pages.get(doc_id)
    if page is None:
        return None
    wanted = norm_heading(heading)
    spans = [
        (c.start_line, c.end_line)
        for c in engine.page_chunks(page)
        if any(norm_heading(h) == wanted for h in c.headings[1:])
    ]
    return (min(s for s, _ in spans), max(e for _, e in spans)) if spans else None


def held(engine: Engine, source: str, query: Query) -> tuple[bool | None, int]:
    """Whether one of the first hits holds a judged section (None: no judged section is in
    the index), and the characters of those hits."""
    hits = engine.search(query.query, TOP, engine.scope(source=source)).results
    chars = sum(len(h.text) for h in hits)
    spans = []
    for judged in [*query.relevant, *query.alt]:
        if judged.heading:
            span = section_span(engine, f"{source}:{judged.path}", judged.heading)
            if span is not None:
                spans.append((judged.path, span))
    if not spans:
        return None, chars
    inside = any(
        h.path == path and h.start_line <= first and h.end_line >= last
        for h in hits
        for path, (first, last) in spans
    )
    return inside, chars


def measure(engine: Engine, path: Path, source: str) -> list[str]:
    outcomes = [held(engine, source, q) for q in load_queries(path) if q.relevant]
    judged = [inside for inside, _ in outcomes if inside is not None]
    share = sum(judged) / len(judged) if judged else float("nan")
    chars = statistics.median(c for _, c in outcomes) if outcomes else 0
    return [path.name, str(len(judged)), f"{share:.0%}", f"{chars:,.0f}"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ranking.answers_alone")
    parser.add_argument("--index", action="append", default=[], metavar="CORPUS=DIR[:SOURCE]")
    args = parser.parse_args(argv)
    embedder = Embedder.load(for_queries=True)
    rows = [["set", "questions judged by section", "held by a top-3 hit", "median chars of top 3"]]
    for corpus, (data, source) in parse_index(args.index).items():
        engine = Engine.open(DataDir(data), embedder)
        for name, of in SETS.items():
            if of == corpus and name.endswith("handwritten.jsonl"):
                rows.append(measure(engine, HERE / name, source))
        engine.close()
    print("\n".join(markdown(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
