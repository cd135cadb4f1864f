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
are chunk_start_line-chunk_end_line, and `context` says how it was widened. No line of a
page comes twice. A later hit whose chunk an earlier hit's text holds adds nothing: it is
left out, and the next one takes its place. A later hit whose section holds earlier hits of
its page (a page's first section, which is the whole page, after a subsection) is folded
into the first of them: that one keeps its rank, chunk and score and shows the section, the
others are left out. Otherwise a later hit's widening stops at the lines earlier hits of its
page show: it takes the chunks beside it up to them. A page's hits after its first two
follow the other pages' hits, so that fragments of one page do not fill the list
(docs/retrieval.md, "Hits with their context").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import msgspec

from docdex.index_format.reassembly import reassemble
from docdex.index_format.records import CHUNK_ID, ChunkRecord, chunk_id
from docdex.server.engine import MAX_RESULTS, Hit, SearchResult, VersionReader

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
    index: VersionReader,
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
        kept = _with_hit(index, kept, hit, room, budget, after)
    return msgspec.structs.replace(result, results=kept)


def _with_hit(
    index: VersionReader, kept: list[Hit], hit: Hit, room: int, budget: Budget, after: int
) -> list[Hit]:
    """`kept` and `hit`, widened, with no line twice: when `hit`'s section holds the earlier
    hits of its page that it overlaps, it is folded into the first of them; otherwise its
    widening stops at their lines."""
    wide = widened(index, hit, room)
    overlapped = [n for n, earlier in enumerate(kept) if _overlap(earlier, wide)]
    if not overlapped:
        return [*kept, budget.spend(wide, after)]
    if wide.context == SECTION and all(_inside(kept[n], wide) for n in overlapped):
        return _folded_into(kept, overlapped, wide, budget, after)
    shown = [(h.start_line, h.end_line) for h in kept if h.doc_id == hit.doc_id]
    return [*kept, budget.spend(widened(index, hit, room, shown), after)]


def _folded_into(
    kept: list[Hit], held: list[int], wide: Hit, budget: Budget, after: int
) -> list[Hit]:
    """`kept` with the first of the hits `held` (their indexes) widened to `wide`'s text,
    which holds them all, and the others left out: it keeps its rank, its chunk and score,
    and takes the section `wide` names. `after`: the hits still to come after `wide`'s."""
    first = kept[held[0]]
    budget.left += sum(len(kept[n].text) for n in held)  # given back, then spent again
    folded = msgspec.structs.replace(
        first,
        text=wide.text,
        start_line=wide.start_line,
        end_line=wide.end_line,
        heading=wide.heading,
        context=wide.context,
        chunk_start_line=first.matched_lines[0],
        chunk_end_line=first.matched_lines[1],
        truncated=False,
    )
    folded = budget.spend(folded, after + len(held))  # to come: the places it leaves too
    return [folded if n == held[0] else h for n, h in enumerate(kept) if n not in held[1:]]


def _overlap(earlier: Hit, hit: Hit) -> bool:
    """Whether the two texts share a line of their page."""
    return (
        earlier.doc_id == hit.doc_id
        and earlier.start_line <= hit.end_line
        and hit.start_line <= earlier.end_line
    )


def _inside(earlier: Hit, hit: Hit) -> bool:
    """Whether `hit`'s text holds every line of `earlier`'s."""
    return (
        earlier.doc_id == hit.doc_id
        and hit.start_line <= earlier.start_line
        and earlier.end_line <= hit.end_line
    )


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
        and earlier.start_line <= hit.matched_lines[0]
        and hit.matched_lines[1] <= earlier.end_line
    )


Lines = tuple[int, int]  # a page's lines, first and last


def widened(index: VersionReader, hit: Hit, room: int, shown: Sequence[Lines] = ()) -> Hit:
    """`hit` with its text widened to at most `room` characters (the module's rule), taking
    no chunk with a line of `shown` (the lines earlier hits of its page show)."""
    found = CHUNK_ID.search(hit.chunk_id)
    if found is None or len(hit.text) >= room:
        return hit
    page = _Page(index, hit.doc_id, shown)
    at = int(found.group(1))
    if page[at] is None:
        return hit
    section = _section(page, at, room)
    if section is not None:
        span, context = section, SECTION
    else:
        span, context = _neighbours(page, at, room), NEIGHBOURS
    if span == (at, at):
        return hit
    run = page.run(span)
    return msgspec.structs.replace(
        hit,
        text=span_text(run),
        start_line=run[0].start_line,
        end_line=run[-1].end_line,
        context=context,
        chunk_start_line=hit.start_line,
        chunk_end_line=hit.end_line,
    )


class _Page:
    """A page's chunks by number, each read once and only when the widening asks for it
    (a long page's other chunks are never decoded)."""

    def __init__(self, index: VersionReader, doc_id: str, shown: Sequence[Lines] = ()):
        self._index, self._doc_id, self._shown = index, doc_id, shown
        self._read: dict[int, ChunkRecord | None] = {}

    def __getitem__(self, number: int) -> ChunkRecord | None:
        if number not in self._read:
            found = self._index.chunk(chunk_id(self._doc_id, number)) if number >= 0 else None
            self._read[number] = found
        return self._read[number]

    def run(self, span: tuple[int, int]) -> list[ChunkRecord]:
        return [c for n in range(span[0], span[1] + 1) if (c := self[n]) is not None]

    def within(self, number: int, headings: list[str]) -> ChunkRecord | None:
        """Chunk `number` when it lies in the section these headings name, else None."""
        chunk = self[number]
        return chunk if chunk is not None and chunk.headings[: len(headings)] == headings else None

    def free(self, number: int, headings: list[str]) -> ChunkRecord | None:
        """Chunk `number` when it lies in that section and no earlier hit shows its lines."""
        chunk = self.within(number, headings)
        return chunk if chunk is not None and not self.shows(chunk) else None

    def shows(self, chunk: ChunkRecord) -> bool:
        """Whether an earlier hit of the page shows a line of `chunk`."""
        return any(
            first <= chunk.end_line and chunk.start_line <= last for first, last in self._shown
        )


def _section(page: _Page, at: int, room: int) -> tuple[int, int] | None:
    """The first and last chunk of `at`'s section (those around it whose breadcrumb starts
    with its own: its subsections' too), or None when its text is longer than `room` or an
    earlier hit shows some of it."""
    home = page[at]
    assert home is not None
    first = last = at
    length = len(home.text)  # the chunks' texts alone: a lower bound of the section's
    for step in (-1, 1):
        edge = at
        while (chunk := page.within(edge + step, home.headings)) is not None:
            edge += step
            length += len(chunk.text)
            if length > room or page.shows(chunk):
                return None
        first, last = (edge, last) if step < 0 else (first, edge)
    span = (first, last)
    return span if len(span_text(page.run(span))) <= room else None


def _neighbours(page: _Page, at: int, room: int) -> tuple[int, int]:
    """The chunks around `at` in its section whose text fits in `room` and that no earlier
    hit shows: grown a chunk at a time, the next one first, then the one before."""
    home = page[at]
    assert home is not None
    span, grew = (at, at), True
    while grew:
        grew = False
        for lo, hi in ((span[0], span[1] + 1), (span[0] - 1, span[1])):
            edge = hi if hi > span[1] else lo
            inside = page.free(edge, home.headings) is not None
            if inside and len(span_text(page.run((lo, hi)))) <= room:
                span, grew = (lo, hi), True
    return span


def span_text(run: Sequence[ChunkRecord]) -> str:
    """The page's text from the first of these consecutive chunks to the last."""
    before = run[0].start_line - 1  # reassembled from the run's first line, not the page's
    return reassemble([_Shifted(c.text, c.start_line - before, c.end_line - before) for c in run])


class _Shifted(NamedTuple):
    text: str
    start_line: int
    end_line: int
