"""The chunk bound (adr/0014): a section cut into chunks within the budget
(`budget_chars`) at block boundaries, lists at items, an oversize item at its blocks, an
oversize paragraph at lines. Tables and code blocks are kept whole up to the hard bound
(`max_chars`, 4 budgets); above it a table is cut between rows and code between lines. No
chunk's text exceeds the bound: a longer line is cut into parts, between sentences, else
between words, else anywhere. A piece with almost no text joins a neighbour."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Iterator

from docdex.index_format.records import Chunk, ChunkerSettings

from .page_model import (
    CONTAINERS,
    LINES,
    Lines,
    Page,
    Piece,
    Section,
    Span,
    Unit,
    alnum_count,
    lines_of,
)
from .span_text import span_text

_WHOLE_UP_TO_THE_BOUND = {"fence", "code_block", "table_open"}
# Where a long line is cut (the whitespace stays with the part before the cut).
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s+")
_WHITESPACE = re.compile(r"\s")


def section_chunks(page: Page, section: Section, settings: ChunkerSettings) -> list[Chunk]:
    """The section cut into pieces within budget; a piece with almost no text joins the
    piece before it (or, first in its section, the piece after it) when the two fit the
    bound.

    A short section keeps its chunk when it says anything below its heading (a one-line
    answer is often the best hit); a bare heading needs min_alnum characters of its own,
    unless what follows it is too big to take it along.
    """
    budget, limit = max(settings.budget_chars, 1), settings.max_chars
    pieces: list[Piece] = []
    for span in _pieces(page, section, budget, limit):
        embed_text = span_text(page, span)
        alnum = alnum_count(embed_text, stop_at=settings.min_alnum)
        if span.start == section.start and span.columns is None and section.own_heading:
            alnum_of_heading = alnum_count(section.own_heading)
            if alnum > alnum_of_heading:  # something below the heading
                alnum = settings.min_alnum
        piece = Piece(span.start, span.end, span.columns, [embed_text], alnum)
        previous = pieces[-1] if pieces else None
        if previous and min(piece.alnum, previous.alnum) < settings.min_alnum:
            if previous.fits_with(piece, page, limit):
                previous.absorb(piece)
                continue
            for residue in (previous, piece):
                residue.stranded = residue.stranded or residue.alnum < settings.min_alnum
        pieces.append(piece)
    return [
        piece_chunk(page, section.headings, piece)
        for piece in pieces
        if _kept(page, piece, settings.min_alnum)
    ]


def _kept(page: Page, piece: Piece, min_alnum: int) -> bool:
    """Whether a piece becomes a chunk. The parts of a line share one fate, so that the line
    reassembles whole or not at all; residue that the bound kept from joining a neighbour
    stays when it has any text."""
    if piece.columns is not None:
        return page.alnum(piece.start, stop_at=min_alnum) >= min_alnum
    return piece.alnum >= min_alnum or (piece.stranded and piece.alnum > 0)


def _pieces(page: Page, section: Section, budget: int, limit: int) -> Iterator[Span]:
    """Cut the section's lines into pieces, trimmed of blank lines (0-based)."""
    units = _units(page, section.start, section.end, budget, limit)
    return packed(page, units, section.start, section.end, budget, limit)


def packed(
    page: Lines, units: Iterable[Unit], start: int, end: int, budget: int, limit: int
) -> Iterator[Span]:
    """Lines start..end as contiguous pieces: a piece takes units while it stays within the
    budget (headings stay with what follows them) and never beyond the limit. The parts of a
    cut line are pieces of their own."""
    piece_start = start
    headings_only = True
    has_units = False
    for unit in units:
        if unit.columns is not None:
            yield from _bounded(page, piece_start, unit.start - 1, budget, limit)
            yield Span(unit.start, unit.end, unit.columns)
            piece_start, headings_only, has_units = unit.end + 1, True, False
            continue
        size = page.size(piece_start, unit.end)
        if has_units and (size > limit or (size > budget and not headings_only)):
            yield from _bounded(page, piece_start, unit.start - 1, budget, limit)
            piece_start, headings_only = unit.start, True
        has_units = True
        headings_only = headings_only and unit.heading
    yield from _bounded(page, piece_start, end, budget, limit)


def _bounded(page: Lines, start: int, end: int, budget: int, limit: int) -> Iterator[Span]:
    """Lines start..end trimmed of blank lines; cut again at lines if lines that no unit
    covers (which the parser left between blocks) took them over the limit."""
    while start <= end and not page.lines[start].strip():
        start += 1
    while end >= start and not page.lines[end].strip():
        end -= 1
    if start > end:
        return
    if page.size(start, end) <= limit:
        yield Span(start, end)
    else:  # every non-blank line is a unit now, so this cannot come back here
        units = line_units(page, start, end, budget, limit)
        yield from packed(page, units, start, end, budget, limit)


def _units(page: Page, start: int, end: int, budget: int, limit: int) -> Iterator[Unit]:
    """The blocks of lines start..end, broken down until each fits the budget or is kept
    whole up to the limit."""
    first = bisect.bisect_right(page.block_ends, start)
    for position in range(first, len(page.top_level)):
        index = page.top_level[position]
        first_line, after_last = lines_of(page.tokens[index])
        if first_line > end:
            break
        if first_line >= start and after_last - 1 <= end:
            yield from _broken_down(page, page.block_unit(index), budget, limit)
        else:  # a block that straddles a section boundary (an HTML block around </details>)
            clipped = Unit(max(first_line, start), min(after_last - 1, end), LINES)
            yield from _broken_down(page, clipped, budget, limit)


def _broken_down(page: Page, unit: Unit, budget: int, limit: int) -> Iterator[Unit]:
    kind = page.tokens[unit.token].type if unit.token != LINES else ""
    size = page.size(unit.start, unit.end)
    if size <= budget or (kind in _WHOLE_UP_TO_THE_BOUND and size <= limit):
        yield unit
    elif kind in CONTAINERS and (children := page.children(unit.token)):
        for child in children:
            yield from _broken_down(page, child, budget, limit)
    else:  # a table between rows, code and paragraphs between lines
        yield from line_units(page, unit.start, unit.end, budget, limit)


def line_units(page: Lines, start: int, end: int, budget: int, limit: int) -> Iterator[Unit]:
    """Each non-blank line of start..end as a unit; a line over the limit as its parts."""
    for line in range(start, end + 1):
        if not page.lines[line].strip():
            continue
        if page.size(line, line) <= limit:
            yield Unit(line, line, LINES)
        else:
            for columns in line_parts(page.lines[line], budget, limit):
                yield Unit(line, line, LINES, columns=columns)


def piece_chunk(page: Page, headings: list[str], piece: Piece) -> Chunk:
    return Chunk(
        headings=headings,
        text=page.text(piece.start, piece.end, piece.columns),
        embed_text="\n".join(part for part in piece.embed_parts if part),
        start_line=piece.start + 1,
        end_line=piece.end + 1,
    )


def line_parts(line: str, budget: int, limit: int) -> Iterator[tuple[int, int]]:
    """Column ranges that cut a line into parts of at most `budget` characters (`limit` for a
    sentence kept whole), joining back into the line."""
    start = 0
    while len(line) - start > budget:
        stop = _part_end(line, start, budget, limit)
        yield start, stop
        start = stop
    yield start, len(line)


def _part_end(line: str, start: int, budget: int, limit: int) -> int:
    """Where the part of the line from `start` ends: after its last sentence within the
    budget, else after its first sentence if that is within the limit, else after its last
    word within the budget, else after `budget` characters. Each search looks at most
    `limit` characters ahead, so a line is cut in linear time."""
    budget_end = start + budget
    sentence_ends = [match.end() for match in _SENTENCE_END.finditer(line, start, budget_end)]
    if sentence_ends:
        return sentence_ends[-1]
    first_sentence = _SENTENCE_END.search(line, start, start + limit)
    if first_sentence is not None:
        return first_sentence.end()
    space_from_the_end = _WHITESPACE.search(line[start:budget_end][::-1])
    if space_from_the_end is not None:
        return budget_end - space_from_the_end.start()
    return budget_end
