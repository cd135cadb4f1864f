"""Hits that answer on their own: each hit's chunk widened, within its share of the answer's
budget, to the section around it, and a hit that an earlier one already holds folded into it.

A chunk is a window of a section, and the answer an agent wants often stands in the rest of
it: a hit of one line (`ADD install.sh`), a list the chunker cut. In rank order, each hit
widens to its own section (its heading with the subsections below it) when that fits; a hit
whose section does not fit takes the chunks beside it in that section, nearest first.
"Fits" is within `max_chars` and the hit's allowance of the answer's budget (budget.py).
Climbing on to the enclosing sections of a short one held no more judged sections on any
corpus measured, for more characters (docs/retrieval.md).

The text stays an exact slice of the page (start_line-end_line), the matched chunk's lines
are chunk_start_line-chunk_end_line, and `context` says how it was widened. A later hit
whose lines an earlier hit's text holds adds nothing: it is left out, and the next one
takes its place; and a page's hits after its first two follow the other pages' hits, so
that fragments of one page do not fill the list (docs/retrieval.md, "Hits with their
context").
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from docdex.index_format.reassembly import reassemble
from docdex.index_format.records import ChunkRecord
from docdex.server.engine import MAX_RESULTS, Engine, Hit, SearchResult, breadcrumb

from .budget import Budget

# A widened text holds at most this many characters (docs/retrieval.md, "Hits with their
# context"): 4,000 held the most judged sections of the sizes measured, and keeps a 10-hit
# answer within the default budget.
CONTEXT_CHARS = 4_000
# At most this many hits of one page come before the other pages' hits, which would else be
# crowded out by fragments of one long page; its further hits follow them (not dropped: a
# search scoped to one page still gets them).
PAGE_HITS = 2
# Hits asked of the engine beyond those answered (at least), to take the place of hits
# folded in.
SPARE_HITS = 5

SECTION = "section"
NEIGHBOURS = "neighbours"


def hits_to_ask(num_results: int) -> int:
    """How many hits to ask of the engine for an answer of `num_results`."""
    return min(num_results + max(num_results, SPARE_HITS), MAX_RESULTS)


def with_context(
    engine: Engine,
    result: SearchResult,
    num_results: int,
    max_chars: int,
    context_chars: int = CONTEXT_CHARS,
    page_hits: int = PAGE_HITS,
) -> SearchResult:
    """The first `num_results` hits of `result` that no earlier one holds, `page_hits` of a
    page before the other pages' (0: any number), each widened to at most `context_chars`
    within its allowance of `max_chars` (0: not widened) and cut to that allowance."""
    budget = Budget(max_chars)
    wanted = min(num_results, len(result.results))
    kept: list[Hit] = []
    for hit in _pages_spread(result.results, page_hits):
        if len(kept) == wanted:
            break
        if any(_holds(earlier, hit) for earlier in kept):
            continue
        after = wanted - len(kept) - 1
        room = min(context_chars, budget.allowance(after))
        kept.append(budget.spend(widened(engine, hit, room), after))
    return msgspec.structs.replace(result, results=kept)


def _pages_spread(hits: list[Hit], page_hits: int) -> list[Hit]:
    """`hits` with each page's hits after its first `page_hits` moved after the others'."""
    if page_hits <= 0:
        return hits
    seen: dict[str, int] = {}
    first: list[Hit] = []
    rest: list[Hit] = []
    for hit in hits:
        seen[hit.doc_id] = seen.get(hit.doc_id, 0) + 1
        (first if seen[hit.doc_id] <= page_hits else rest).append(hit)
    return first + rest


def _holds(earlier: Hit, hit: Hit) -> bool:
    """Whether `earlier`'s text has every line of `hit`'s chunk."""
    return (
        earlier.doc_id == hit.doc_id
        and not earlier.truncated
        and earlier.start_line <= hit.chunk_start_line
        and hit.chunk_end_line <= earlier.end_line
    )


def widened(engine: Engine, hit: Hit, room: int) -> Hit:
    """`hit` with its text widened to at most `room` characters (the module's rule)."""
    page = engine.pages.get(hit.doc_id)
    chunks = engine.page_chunks(page) if page is not None else []
    at = next((i for i, c in enumerate(chunks) if c.chunk_id == hit.chunk_id), None)
    if at is None or len(hit.text) >= room:
        return hit
    section = _section(chunks, at)
    if len(span_text(chunks, section)) <= room:
        span, context = section, SECTION
    else:
        span, context = _neighbours(chunks, (at, at), section, room), NEIGHBOURS
    if span == (at, at):
        return hit
    first, last = chunks[span[0]], chunks[span[1]]
    return msgspec.structs.replace(
        hit,
        text=span_text(chunks, span),
        start_line=first.start_line,
        end_line=last.end_line,
        context=context,
        context_heading=breadcrumb(chunks[at].headings),
    )


def _section(chunks: Sequence[ChunkRecord], at: int) -> tuple[int, int]:
    """The first and last index of the chunks of `at`'s section: those around it whose
    breadcrumb starts with its own (its subsections' too)."""
    under = chunks[at].headings
    depth = len(under)
    first = last = at
    while first > 0 and chunks[first - 1].headings[:depth] == under:
        first -= 1
    while last + 1 < len(chunks) and chunks[last + 1].headings[:depth] == under:
        last += 1
    return first, last


def _neighbours(
    chunks: Sequence[ChunkRecord], span: tuple[int, int], section: tuple[int, int], room: int
) -> tuple[int, int]:
    """`span` grown a chunk at a time within `section` (the next chunk first, then the one
    before) while its text fits in `room`."""
    grew = True
    while grew:
        grew = False
        for lo, hi in ((span[0], span[1] + 1), (span[0] - 1, span[1])):
            inside = section[0] <= lo and hi <= section[1]
            if inside and len(span_text(chunks, (lo, hi))) <= room:
                span, grew = (lo, hi), True
    return span


def span_text(chunks: Sequence[ChunkRecord], span: tuple[int, int]) -> str:
    """The page's text from chunk `span[0]` to chunk `span[1]` (consecutive chunks)."""
    run = chunks[span[0] : span[1] + 1]
    return "\n".join(reassemble(run).split("\n")[run[0].start_line - 1 :])
