"""Markdown chunker: a page's text -> ParsedPage (metadata and breadcrumbed chunks).

Block boundaries come from markdown-it's block parser, given a large page a piece at a time
(pieces.py): one pass over the pieces finds the sections, a second chunks each piece from its
own tokens. Sections start at headings
h1..h{section_levels} and at `<details>` blocks that have a `<summary>`. A section longer
than the budget (`budget_chars`) is cut at block boundaries: lists at items, an oversize item
at its blocks, an oversize paragraph at lines. Tables and code blocks are kept whole up to
the hard bound (`max_chars`, 4 budgets; adr/0014); above it a table is cut between rows and
code between lines. No chunk's text exceeds the bound: a longer line is cut into parts,
between sentences, else between words, else anywhere. Short sections stay chunks of their
own; a piece with almost no text joins a neighbour.

A chunk's text is the file's text of its lines, exactly: lines start..end, or a part of one
line (start == end), the parts of a line being consecutive chunks that join back into it
(index_format.reassembly). Every line that is not empty lies in some chunk, front matter
aside (it is the page's metadata: its lines are empty here), so the chunks give the page
back whole.

markdown-it stops parsing blocks nested deeper than its limit (a list ten levels deep) and
skips the rest of the page; here the too-deep lines are a plain paragraph instead, and the
blocks after them parse as usual.

Line numbers are 1-based lines of the file as stored; a lone CR counts as a line break, as
it does for markdown-it and editors.
"""

from __future__ import annotations

import bisect
import logging
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import msgspec
from markdown_it import MarkdownIt
from markdown_it.token import Token

from docdex.index_format.records import Chunk, ChunkerSettings, ParsedPage
from docdex.markdown.deep_blocks import DeepBlocksAsText

from . import cleanup, include_syntax, mdx
from .frontmatter import read_front_matter
from .include_syntax import PathReader
from .pieces import piece_bounds

_log = logging.getLogger(__name__)


# Structure only: inline content is parsed on demand, for the text that needs it.
_BLOCK_PARSER = MarkdownIt("commonmark").enable("table").disable(["inline", "text_join"])
_BLOCK_PARSER.block = DeepBlocksAsText(_BLOCK_PARSER)

_DETAILS_TAG = re.compile(r"<(/?)(details|summary)\b[^<>]*>", re.IGNORECASE)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_HEADING_MAX_CHARS = 2_000  # of the markdown a heading or summary is read from
_MAX_DETAILS_DEPTH = 6  # deeper <details> are content, not sections
_WHOLE_UP_TO_THE_BOUND = {"fence", "code_block", "table_open"}
_TABLE_PARTS = {"table_open", "thead_open", "tbody_open"}
_CODE = {"fence", "code_block"}
_CONTAINERS = {"bullet_list_open", "ordered_list_open", "list_item_open", "blockquote_open"}
_LINES = -1  # Unit.token for a plain range of lines
# Where a long line is cut (the whitespace stays with the part before the cut).
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s+")
_WHITESPACE = re.compile(r"\s")


def lines_of(token: Token) -> tuple[int, int]:
    """(first line, line after the last) of a block token, 0-based: markdown-it maps every
    block token to its lines (only inline tokens have no map)."""
    assert token.map is not None, token.type
    first, after_last = token.map
    return first, after_last


def parse_page(
    text: str,
    path: str,
    settings: ChunkerSettings = ChunkerSettings(),  # noqa: B008 (frozen, so sharing is safe)
    read: PathReader | None = None,
) -> ParsedPage:
    """Parse one markdown (or MDX) page into its metadata and chunks. Never raises.

    With `read` (the repository's files by path), include lines are resolved: the included
    text joins the embed text of the chunk holding the line (include_syntax.py)."""
    try:
        return _parse_page(text, path, settings, _Includes(read))
    except Exception:  # one odd page must not stop an index run; keep its text searchable
        _log.exception("markdown parse failed for %s; indexing it as plain lines", path)
        return _plain_page(text, path, settings)


def _parse_page(text: str, path: str, settings: ChunkerSettings, inc: _Includes) -> ParsedPage:
    lines = cleanup.normalise_newlines(text).split("\n")
    front_matter_lines, meta = read_front_matter(lines)
    front_matter = "\n".join(lines[:front_matter_lines])
    lines[:front_matter_lines] = [""] * front_matter_lines
    parser_lines = mdx.parser_lines(path, lines)
    include_at = include_syntax.include_lines(parser_lines)
    for index in include_at:  # the line itself is no content; what it includes is
        parser_lines[index] = ""
    text_of_page = _PageText(lines, cleanup.without_markers(parser_lines))
    bounds = piece_bounds(text_of_page.source_lines)
    env: dict[str, Any] = {}  # shared by the pieces: a reference is defined once per page
    headings: list[_Marker] = []
    tags: list[_Tag] = []
    kept: _Page | None = None  # a page of one piece keeps the tokens of the first pass
    for first, after in bounds:  # the first pass: what sections need, tokens dropped
        page = _Page(text_of_page, first, after, env)
        headings += _headings(page)
        tags += _details_tags(page)
        kept = page if len(bounds) == 1 else None
    for heading in headings:  # now that every reference definition is known
        heading.text = _heading_text(heading.text, env)
    title = _title(meta.title, headings, path, env)
    levels = min(max(settings.section_levels, 1), 6)
    details = _details_spans(tags, text_of_page.source, env)
    markers = _markers([h for h in headings if h.level <= levels], details)
    sections = list(_sections(markers, len(lines), title))
    section_starts = [s.start for s in sections]
    chunks: list[Chunk] = []
    for first, after in bounds:  # the second pass: a piece's chunks from its tokens alone
        page = kept if kept is not None else _Page(text_of_page, first, after, env)
        mine = _piece_chunks(page, sections, section_starts, settings, first, after)
        if include_at and inc.read is not None:
            here = {i: v for i, v in include_at.items() if first <= i < after}
            mine = _with_includes(mine, here, lines, path, settings, inc, title)
        chunk_of = _chunk_of(page, sections, section_starts)
        chunks += _every_line_kept(mine, page, settings, chunk_of, first, after)
    chunks = _with_lead(chunks, meta.tags)
    return ParsedPage(
        title=title,
        description=meta.description,
        tags=meta.tags,
        dates=meta.dates,
        chunks=chunks,
        draft=meta.draft,
        front_matter=front_matter,
    )


def _piece_chunks(
    page: _Page,
    sections: list[_Section],
    starts: list[int],
    settings: ChunkerSettings,
    first: int,
    after: int,
) -> list[Chunk]:
    """The chunks of the sections' lines that lie in the piece first..after - 1 (a section
    that crosses a piece's end is cut there)."""
    out: list[Chunk] = []
    for position in range(max(bisect.bisect_right(starts, first) - 1, 0), len(sections)):
        section = sections[position]
        if section.start >= after:
            break
        if section.start < first or section.end >= after:
            own = section.own_heading if section.start >= first else ""
            start, end = max(section.start, first), min(section.end, after - 1)
            section = _Section(start, end, section.headings, own)
        out += _section_chunks(page, section, settings)
    return out


def _chunk_of(page: _Page, sections: list[_Section], starts: list[int]) -> Callable[[_Span], Chunk]:
    """A chunk of its own for lines no chunk holds, under the breadcrumb of their section."""

    def chunk_of(span: _Span) -> Chunk:
        headings = _section_at(sections, starts, span.start).headings
        embed_text = _embed_text(page, span)
        return _chunk(page, headings, _Piece(span.start, span.end, span.columns, [embed_text], 0))

    return chunk_of


def _with_lead(chunks: list[Chunk], tags: list[str]) -> list[Chunk]:
    """The front matter's tags and keywords lead the first chunk's embed text, so they are
    searched (words and vectors) with it (adr/0018)."""
    if not chunks or not tags:
        return chunks
    first = chunks[0]
    lead = " ".join(tags)
    return [msgspec.structs.replace(first, embed_text=f"{lead}\n{first.embed_text}"), *chunks[1:]]


def page_lead(page: ParsedPage) -> str:
    """What the first chunk's full-text body gets before its embed text: the page's
    description. Kept out of the embedded text: on apm it cost a hand-written query its
    first rank (adr/0018)."""
    return f"{page.description}\n" if page.description else ""


# --- includes ------------------------------------------------------------------------------


@dataclass(slots=True)
class _Includes:
    """What a page's includes may still read: the reader, how deep, how many files."""

    read: PathReader | None
    depth: int = 0
    left: int = include_syntax.MAX_INCLUDES


def _with_includes(
    chunks: list[Chunk],
    include_at: dict[int, tuple[str, list[str]]],
    lines: list[str],
    path: str,
    settings: ChunkerSettings,
    inc: _Includes,
    title: str,
) -> list[Chunk]:
    """The chunks with each resolved include's text added to the embed text of the chunk
    holding its line (a line no chunk holds becomes a chunk of its own)."""
    out = list(chunks)
    for index, (kind, written) in sorted(include_at.items()):
        text = _included_text(kind, written[0], path, settings, inc)
        if not text:
            continue
        line = index + 1
        at = next((i for i, c in enumerate(out) if c.start_line <= line <= c.end_line), -1)
        if at >= 0:
            chunk = out[at]
            out[at] = msgspec.structs.replace(chunk, embed_text=f"{chunk.embed_text}\n{text}")
            continue
        before = [c for c in out if c.end_line < line]
        headings = before[-1].headings if before else [title]
        out.append(Chunk(list(headings), lines[index], text, line, line))
        out.sort(key=lambda c: (c.start_line, c.end_line))
    return out


def _included_text(
    kind: str, written: str, path: str, settings: ChunkerSettings, inc: _Includes
) -> str:
    if inc.read is None or inc.depth >= include_syntax.MAX_DEPTH or inc.left <= 0:
        return ""
    for candidate in include_syntax.candidates(kind, written, path):
        if candidate == path:
            continue
        text = inc.read(candidate)
        if text is None:
            continue
        inc.left -= 1
        nested = _Includes(inc.read, inc.depth + 1, inc.left)
        # an included snippet is often one short line: keep all of its text
        every_piece = msgspec.structs.replace(settings, min_alnum=1)
        parsed = _parse_page(text, candidate, every_piece, nested)
        inc.left = nested.left
        return "\n".join(chunk.embed_text for chunk in parsed.chunks if chunk.embed_text)
    return ""


# --- metadata ------------------------------------------------------------------------------


def _headings(page: _Page) -> list[_Marker]:
    return [
        _Marker(
            line=lines_of(page.tokens[index])[0],
            kind="heading",
            level=int(page.tokens[index].tag[1:]),
            text=page.tokens[index + 1].content[:_HEADING_MAX_CHARS],  # read after parsing
        )
        for index in page.top_level
        if page.tokens[index].type == "heading_open"
    ]


def _title(front_matter_title: str, headings: list[_Marker], path: str, env: dict[str, Any]) -> str:
    if front_matter_title:
        title = _heading_text(front_matter_title, env)
        if title:
            return title
    first_h1 = next((h.text for h in headings if h.level == 1 and h.text), "")
    return first_h1 or PurePosixPath(path.replace("\\", "/")).stem


def _heading_text(markdown: str, env: dict[str, Any]) -> str:
    """A heading as a reader sees it; a huge one is read from its start only, since every
    chunk of its section carries it in its breadcrumb."""
    return cleanup.heading_text(markdown[:_HEADING_MAX_CHARS], env)


def _fold(text: str) -> str:
    return " ".join(text.casefold().split())


# --- sections ------------------------------------------------------------------------------


def _details_spans(tags: Iterable[_Tag], source: str, env: dict[str, Any]) -> list[_Details]:
    """`<details>` elements that have a `<summary>`, matched open to close across blocks
    (`tags` as _details_tags finds them in `source`, the whole page)."""
    spans: list[_Details] = []
    open_details: list[_Details] = []
    summary_start = -1
    for kind, line, start, end in tags:
        if kind == "details":
            open_details.append(_Details(open_line=line, depth=len(open_details)))
        elif kind == "/details" and open_details:
            details = open_details.pop()
            details.close_line = line
            spans.append(details)
        elif kind == "summary" and open_details and _wants_summary(open_details[-1]):
            summary_start = end
        elif kind == "/summary" and open_details and summary_start >= 0:
            raw = source[summary_start : min(start, summary_start + _HEADING_MAX_CHARS)]
            open_details[-1].summary = _heading_text(raw, env)
            summary_start = -1
    spans.extend(open_details)
    return sorted((d for d in spans if d.summary), key=lambda d: d.open_line)


def _wants_summary(details: _Details) -> bool:
    return not details.summary and details.depth < _MAX_DETAILS_DEPTH


_Tag = tuple[str, int, int, int]  # (tag, line, start, end): a details or summary tag


def _details_tags(page: _Page) -> Iterator[_Tag]:
    """(tag, line, start, end) of details/summary tags in top-level HTML and paragraphs."""
    for index in page.top_level:
        token = page.tokens[index]
        if token.type not in ("html_block", "paragraph_open"):
            continue
        first, last = lines_of(token)
        offset = page.line_offsets[first]
        block = page.source[offset : page.line_offsets[last] - 1]
        if "<" not in block:
            continue
        if token.type == "paragraph_open":
            block = _CODE_SPAN.sub(lambda m: " " * len(m.group()), block)
        line, counted_to = first, 0
        for match in _DETAILS_TAG.finditer(block):
            line += block.count("\n", counted_to, match.start())
            counted_to = match.start()
            kind = match.group(1) + match.group(2).lower()
            yield kind, line, offset + match.start(), offset + match.end()


def _markers(headings: list[_Marker], details: list[_Details]) -> list[_Marker]:
    """Section boundaries in line order; a close comes before anything starting on its line."""
    markers = list(headings)
    heading_lines = [h.line for h in headings]
    for span in details:
        markers.append(_Marker(line=span.open_line, kind="open", text=span.summary))
        close_at = span.close_line + 1 if span.close_line >= 0 else _next_after(heading_lines, span)
        if close_at >= 0:
            markers.append(_Marker(line=close_at, kind="close"))
    order = {"close": 0, "open": 1, "heading": 1}
    return sorted(markers, key=lambda m: (m.line, order[m.kind]))


def _next_after(lines: list[int], span: _Details) -> int:
    """An unclosed <details> ends at the next section heading (or with the page)."""
    position = bisect.bisect_right(lines, span.open_line)
    return lines[position] if position < len(lines) else -1


def _sections(markers: list[_Marker], line_count: int, title: str) -> Iterator[_Section]:
    crumbs: list[_Marker] = []
    start = 0
    own_heading = ""
    for marker in markers:
        if marker.line > start:
            yield _Section(start, marker.line - 1, _breadcrumb(title, crumbs), own_heading)
            start = marker.line
            own_heading = ""
        _apply(crumbs, marker)
        own_heading = marker.text if marker.kind != "close" else ""
    if start < line_count:
        yield _Section(start, line_count - 1, _breadcrumb(title, crumbs), own_heading)


def _apply(crumbs: list[_Marker], marker: _Marker) -> None:
    if marker.kind == "heading":
        while crumbs and crumbs[-1].kind == "heading" and crumbs[-1].level >= marker.level:
            crumbs.pop()
        crumbs.append(marker)
    elif marker.kind == "open":
        crumbs.append(marker)
    elif any(c.kind == "open" for c in crumbs):
        while crumbs.pop().kind != "open":
            pass


def _section_at(sections: list[_Section], starts: list[int], line: int) -> _Section:
    """The section that holds the line (sections cover the page, in order; `starts` are
    their first lines)."""
    return sections[bisect.bisect_right(starts, line) - 1]


def _breadcrumb(title: str, crumbs: list[_Marker]) -> list[str]:
    folded_title = _fold(title)
    return [title] + [
        c.text
        for c in crumbs
        if c.text and not (c.kind == "heading" and c.level == 1 and _fold(c.text) == folded_title)
    ]


# --- chunks --------------------------------------------------------------------------------


def _section_chunks(page: _Page, section: _Section, settings: ChunkerSettings) -> list[Chunk]:
    """The section cut into pieces within budget; a piece with almost no text joins the
    piece before it (or, first in its section, the piece after it) when the two fit the
    bound.

    A short section keeps its chunk when it says anything below its heading (a one-line
    answer is often the best hit); a bare heading needs min_alnum characters of its own,
    unless what follows it is too big to take it along.
    """
    budget, limit = max(settings.budget_chars, 1), settings.max_chars
    pieces: list[_Piece] = []
    for span in _pieces(page, section, budget, limit):
        embed_text = _embed_text(page, span)
        alnum = _alnum_count(embed_text, stop_at=settings.min_alnum)
        if span.start == section.start and span.columns is None and section.own_heading:
            alnum_of_heading = _alnum_count(section.own_heading)
            if alnum > alnum_of_heading:  # something below the heading
                alnum = settings.min_alnum
        piece = _Piece(span.start, span.end, span.columns, [embed_text], alnum)
        previous = pieces[-1] if pieces else None
        if previous and min(piece.alnum, previous.alnum) < settings.min_alnum:
            if previous.fits_with(piece, page, limit):
                previous.absorb(piece)
                continue
            for residue in (previous, piece):
                residue.stranded = residue.stranded or residue.alnum < settings.min_alnum
        pieces.append(piece)
    return [
        _chunk(page, section.headings, piece)
        for piece in pieces
        if _kept(page, piece, settings.min_alnum)
    ]


def _kept(page: _Page, piece: _Piece, min_alnum: int) -> bool:
    """Whether a piece becomes a chunk. The parts of a line share one fate, so that the line
    reassembles whole or not at all; residue that the bound kept from joining a neighbour
    stays when it has any text."""
    if piece.columns is not None:
        return page.alnum(piece.start, stop_at=min_alnum) >= min_alnum
    return piece.alnum >= min_alnum or (piece.stranded and piece.alnum > 0)


def _every_line_kept(
    chunks: list[Chunk],
    page: _Lines,
    settings: ChunkerSettings,
    chunk_of: Callable[[_Span], Chunk],
    first_line: int = 0,
    after_line: int | None = None,
) -> list[Chunk]:
    """The chunks, grown over the lines that none of them holds, so that the page
    reassembles whole (an empty line needs no chunk: reassembly gives it back).

    Such a run of lines (the heading of a section with nothing of its own, a fragment with
    almost no text, a line of spaces) joins the chunk after it: an empty section's heading
    leads its subsection. At the end of the page, or when that chunk would go over the
    bound (or is a part of a line), it joins the chunk before it; when neither can take it,
    it is chunks of its own. A chunk that grows keeps its embed text, and so its vectors.
    Only lines first_line..after_line - 1 are looked at (a piece of the page; all of it by
    default).
    """
    budget, limit = max(settings.budget_chars, 1), settings.max_chars
    out: list[Chunk] = []
    reached = first_line  # the first line (0-based) after the chunks so far
    end_of_lines = len(page.lines) if after_line is None else after_line
    for chunk in [*chunks, None]:
        start = chunk.start_line - 1 if chunk else end_of_lines
        text_lines = [n for n in range(reached, start) if page.lines[n]]
        if text_lines:
            first, last = text_lines[0], text_lines[-1]
            if chunk and _grows(page, chunk, first, chunk.end_line - 1, limit):
                chunk = _spanning(page, chunk, first, chunk.end_line - 1)
            elif out and _grows(page, out[-1], out[-1].start_line - 1, last, limit):
                out[-1] = _spanning(page, out[-1], out[-1].start_line - 1, last)
            else:
                out.extend(map(chunk_of, _runs(page, first, last, budget, limit)))
        if chunk:
            out.append(chunk)
            reached = max(reached, chunk.end_line)
    return out


def _grows(page: _Lines, chunk: Chunk, start: int, end: int, limit: int) -> bool:
    """Whether the chunk, lines and not a part of one, can span lines start..end."""
    whole = len(chunk.text) == page.size(chunk.start_line - 1, chunk.end_line - 1) - 1
    return whole and page.size(start, end) - 1 <= limit


def _spanning(page: _Lines, chunk: Chunk, start: int, end: int) -> Chunk:
    text = page.text(start, end, None)
    return msgspec.structs.replace(chunk, text=text, start_line=start + 1, end_line=end + 1)


def _runs(page: _Lines, start: int, end: int, budget: int, limit: int) -> Iterator[_Span]:
    """Lines start..end as runs within the limit, each from and to a line that is not
    empty; a line over the limit as its parts."""
    run: tuple[int, int] | None = None  # its first and last line
    for line in range(start, end + 1):
        if not page.lines[line]:
            continue
        long_line = page.size(line, line) > limit
        if run and (long_line or page.size(run[0], line) - 1 > limit):
            yield _Span(*run)
            run = None
        if long_line:
            yield from (_Span(line, line, c) for c in _line_parts(page.lines[line], budget, limit))
        else:
            run = (run[0] if run else line, line)
    if run:
        yield _Span(*run)


def _pieces(page: _Page, section: _Section, budget: int, limit: int) -> Iterator[_Span]:
    """Cut the section's lines into pieces, trimmed of blank lines (0-based)."""
    units = _units(page, section.start, section.end, budget, limit)
    return _packed(page, units, section.start, section.end, budget, limit)


def _packed(
    page: _Lines, units: Iterable[_Unit], start: int, end: int, budget: int, limit: int
) -> Iterator[_Span]:
    """Lines start..end as contiguous pieces: a piece takes units while it stays within the
    budget (headings stay with what follows them) and never beyond the limit. The parts of a
    cut line are pieces of their own."""
    piece_start = start
    headings_only = True
    has_units = False
    for unit in units:
        if unit.columns is not None:
            yield from _bounded(page, piece_start, unit.start - 1, budget, limit)
            yield _Span(unit.start, unit.end, unit.columns)
            piece_start, headings_only, has_units = unit.end + 1, True, False
            continue
        size = page.size(piece_start, unit.end)
        if has_units and (size > limit or (size > budget and not headings_only)):
            yield from _bounded(page, piece_start, unit.start - 1, budget, limit)
            piece_start, headings_only = unit.start, True
        has_units = True
        headings_only = headings_only and unit.heading
    yield from _bounded(page, piece_start, end, budget, limit)


def _bounded(page: _Lines, start: int, end: int, budget: int, limit: int) -> Iterator[_Span]:
    """Lines start..end trimmed of blank lines; cut again at lines if lines that no unit
    covers (which the parser left between blocks) took them over the limit."""
    while start <= end and not page.lines[start].strip():
        start += 1
    while end >= start and not page.lines[end].strip():
        end -= 1
    if start > end:
        return
    if page.size(start, end) <= limit:
        yield _Span(start, end)
    else:  # every non-blank line is a unit now, so this cannot come back here
        units = _line_units(page, start, end, budget, limit)
        yield from _packed(page, units, start, end, budget, limit)


def _units(page: _Page, start: int, end: int, budget: int, limit: int) -> Iterator[_Unit]:
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
            clipped = _Unit(max(first_line, start), min(after_last - 1, end), _LINES)
            yield from _broken_down(page, clipped, budget, limit)


def _broken_down(page: _Page, unit: _Unit, budget: int, limit: int) -> Iterator[_Unit]:
    kind = page.tokens[unit.token].type if unit.token != _LINES else ""
    size = page.size(unit.start, unit.end)
    if size <= budget or (kind in _WHOLE_UP_TO_THE_BOUND and size <= limit):
        yield unit
    elif kind in _CONTAINERS and (children := page.children(unit.token)):
        for child in children:
            yield from _broken_down(page, child, budget, limit)
    else:  # a table between rows, code and paragraphs between lines
        yield from _line_units(page, unit.start, unit.end, budget, limit)


def _line_units(page: _Lines, start: int, end: int, budget: int, limit: int) -> Iterator[_Unit]:
    """Each non-blank line of start..end as a unit; a line over the limit as its parts."""
    for line in range(start, end + 1):
        if not page.lines[line].strip():
            continue
        if page.size(line, line) <= limit:
            yield _Unit(line, line, _LINES)
        else:
            for columns in _line_parts(page.lines[line], budget, limit):
                yield _Unit(line, line, _LINES, columns=columns)


def _chunk(page: _Page, headings: list[str], piece: _Piece) -> Chunk:
    return Chunk(
        headings=headings,
        text=page.text(piece.start, piece.end, piece.columns),
        embed_text="\n".join(part for part in piece.embed_parts if part),
        start_line=piece.start + 1,
        end_line=piece.end + 1,
    )


def _alnum_count(text: str, stop_at: int = -1) -> int:
    count = 0
    for char in text:
        if char.isalnum():
            count += 1
            if count == stop_at:
                break
    return count


# --- long lines ----------------------------------------------------------------------------


def _line_parts(line: str, budget: int, limit: int) -> Iterator[tuple[int, int]]:
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


# --- embed text ----------------------------------------------------------------------------


def _embed_text(page: _Page, span: _Span) -> str:
    if span.columns is not None:
        return _line_part_text(page, span.start, *span.columns)
    return _lines_text(page, span.start, span.end)


def _lines_text(page: _Page, start: int, end: int) -> str:
    """Clean text of lines start..end, rendered from the page's own block tokens."""
    parts: list[str] = []
    first = bisect.bisect_right(page.block_ends, start)
    for position in range(first, len(page.top_level)):
        index = page.top_level[position]
        if lines_of(page.tokens[index])[0] > end:
            break
        _render(page, index, start, end, parts)
    return cleanup.tidy("".join(parts))


def _render(page: _Page, index: int, start: int, end: int, parts: list[str]) -> None:
    token = page.tokens[index]
    first, after_last = lines_of(token)
    if first >= start and after_last - 1 <= end:
        parts.append(cleanup.render_tokens(page.tokens[index : page.closing[index] + 1], page.env))
    elif token.type in _CONTAINERS or token.type in _TABLE_PARTS:
        for child in page.children_overlapping(index, start, end):
            _render(page, child.token, start, end, parts)
    else:
        parts.append(_partial_text(page, index, max(first, start), min(after_last - 1, end)))
        parts.append("\n")


def _partial_text(page: _Page, index: int, start: int, end: int) -> str:
    """Text of some lines of a block that was cut at lines (a long paragraph, say)."""
    token = page.tokens[index]
    if token.type in ("paragraph_open", "heading_open"):
        inline = page.tokens[index + 1]
        first = inline.map[0] if inline.map else start
        lines = page.content_lines(index + 1)[start - first : end - first + 1]
        return cleanup.inline_text("\n".join(lines), page.env)
    if token.type in _CODE:
        first = lines_of(token)[0] + (1 if token.type == "fence" else 0)
        lines = page.content_lines(index)[max(start - first, 0) : max(end - first + 1, 0)]
        return "\n".join(lines)
    return cleanup.html_block_text("\n".join(page.source_lines[start : end + 1]), page.env)


def _line_part_text(page: _Page, line: int, begin: int, stop: int) -> str:
    """Clean text of a part of a line that was cut into parts."""
    raw = page.lines[line][begin:stop]
    kind = page.block_kind_at(line)
    if kind in _CODE:
        return cleanup.tidy(raw)
    if kind == "html_block":
        return cleanup.tidy(cleanup.strip_html(raw))
    if kind == "table_open":
        raw = raw.replace("|", " ")
    return cleanup.tidy(cleanup.rough_inline_text(cleanup.strip_template_tags(raw)))


def _plain_page(text: str, path: str, settings: ChunkerSettings) -> ParsedPage:
    """Last resort: the page as budget-sized runs of lines under its file name (a line over
    the bound in parts, as in a page that parses)."""
    title = PurePosixPath(path).stem
    page = _Lines(cleanup.normalise_newlines(text).split("\n"))
    budget, limit = max(settings.budget_chars, 1), settings.max_chars
    last = len(page.lines) - 1
    spans = _packed(page, _line_units(page, 0, last, budget, limit), 0, last, budget, limit)
    chunks = [_plain_chunk(page, title, span) for span in spans]
    covered = _every_line_kept(chunks, page, settings, lambda span: _plain_chunk(page, title, span))
    return ParsedPage(title=title, chunks=covered)


def _plain_chunk(page: _Lines, title: str, span: _Span) -> Chunk:
    text = page.text(span.start, span.end, span.columns)
    return Chunk([title], text, " ".join(text.split()), span.start + 1, span.end + 1)


def _offsets(lines: list[str]) -> list[int]:
    """Where each line starts in the lines joined by newlines (one extra entry at the end)."""
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    return offsets


def _closing_indexes(tokens: list[Token]) -> list[int]:
    """For each opening token, the index of its closing token (others map to themselves)."""
    closing = list(range(len(tokens)))
    opened: list[int] = []
    for index, token in enumerate(tokens):
        if token.nesting == 1:
            opened.append(index)
        elif token.nesting == -1 and opened:
            closing[opened.pop()] = index
    return closing


# --- records -------------------------------------------------------------------------------


class _Lines:
    """A page's lines as stored (front matter blanked): the text chunks are cut from."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        self.size_offsets = _offsets(lines)
        self._alnum: dict[tuple[int, int], int] = {}

    def size(self, start: int, end: int) -> int:
        """Characters of lines start..end (0-based, inclusive), newlines included."""
        return self.size_offsets[end + 1] - self.size_offsets[start]

    def text(self, start: int, end: int, columns: tuple[int, int] | None) -> str:
        if columns is not None:
            return self.lines[start][columns[0] : columns[1]]
        return "\n".join(self.lines[start : end + 1])

    def alnum(self, line: int, stop_at: int) -> int:
        """Alphanumeric characters of a line, counted up to stop_at (cached: every part of a
        long line asks)."""
        if (line, stop_at) not in self._alnum:
            self._alnum[line, stop_at] = _alnum_count(self.lines[line], stop_at)
        return self._alnum[line, stop_at]


class _PageText(_Lines):
    """A page's lines and the parser's.

    `lines` are the file's lines (front matter blanked), the source of chunk text;
    `source_lines` are the same lines without admonition markers and template tags, the
    input of the parser. Both have one entry per line of the file.
    """

    def __init__(self, lines: list[str], source_lines: list[str]):
        super().__init__(lines)
        self.source_lines = source_lines
        self.source = "\n".join(source_lines)
        self.line_offsets = _offsets(source_lines)


class _Page(_Lines):
    """The block tokens of a piece of a page (lines first..after - 1, pieces.py; the whole
    page when it is small) and lookups over them, in the page's line numbers."""

    def __init__(self, text: _PageText, first: int, after: int, env: dict[str, Any]):
        self.lines, self.size_offsets, self._alnum = text.lines, text.size_offsets, text._alnum
        self.source_lines, self.source = text.source_lines, text.source
        self.line_offsets = text.line_offsets
        self.env = env
        whole = first == 0 and after == len(text.source_lines)
        piece = text.source if whole else "\n".join(text.source_lines[first:after])
        self.tokens = _BLOCK_PARSER.parse(piece, env)
        if first:
            for token in self.tokens:
                if token.map:
                    token.map = [token.map[0] + first, token.map[1] + first]
        self.closing = _closing_indexes(self.tokens)
        self.top_level = [
            i for i, t in enumerate(self.tokens) if t.level == 0 and t.nesting != -1 and t.map
        ]
        self.block_ends = [lines_of(self.tokens[i])[1] for i in self.top_level]

        self._children: dict[int, list[_Unit]] = {}
        self._children_ends: dict[int, list[int]] = {}
        self._content_lines: dict[int, list[str]] = {}

    def block_unit(self, index: int) -> _Unit:
        token = self.tokens[index]
        first, after_last = lines_of(token)
        return _Unit(first, after_last - 1, index, heading=token.type == "heading_open")

    def children(self, index: int) -> list[_Unit]:
        """The blocks directly inside the container token at index (cached)."""
        if index not in self._children:
            parent = self.tokens[index]
            self._children[index] = [
                self.block_unit(child)
                for child in range(index + 1, self.closing[index])
                if (token := self.tokens[child]).level == parent.level + 1
                and token.nesting != -1
                and token.map
            ]
            self._children_ends[index] = [unit.end for unit in self._children[index]]
        return self._children[index]

    def children_overlapping(self, index: int, start: int, end: int) -> Iterator[_Unit]:
        children = self.children(index)
        for position in range(bisect.bisect_left(self._children_ends[index], start), len(children)):
            if children[position].start > end:
                break
            yield children[position]

    def content_lines(self, index: int) -> list[str]:
        """The lines of a token's content (cached: each piece of a long block asks)."""
        if index not in self._content_lines:
            self._content_lines[index] = self.tokens[index].content.split("\n")
        return self._content_lines[index]

    def block_kind_at(self, line: int) -> str:
        """The type of the innermost block that holds the line ("" if none)."""
        position = bisect.bisect_right(self.block_ends, line)
        if position == len(self.top_level):
            return ""
        index = self.top_level[position]
        while lines_of(self.tokens[index])[0] <= line:
            if self.tokens[index].type not in _CONTAINERS:
                return self.tokens[index].type
            inner = next(self.children_overlapping(index, line, line), None)
            if inner is None:
                return self.tokens[index].type
            index = inner.token
        return ""


@dataclass(slots=True)
class _Marker:
    line: int  # 0-based line where the section starts (for "close": where the outer resumes)
    kind: str  # "heading" | "open" (<details> with a summary) | "close" (</details>)
    level: int = 0
    text: str = ""


@dataclass(slots=True)
class _Details:
    open_line: int
    depth: int  # how many <details> enclose it
    close_line: int = -1
    summary: str = ""


@dataclass(frozen=True, slots=True)
class _Section:
    start: int
    end: int
    headings: list[str]
    own_heading: str  # text of the heading or summary it starts with ("" if none)


@dataclass(frozen=True, slots=True)
class _Span:
    """Lines start..end (0-based, inclusive), or with columns the part [begin, stop) of the
    line start (== end)."""

    start: int
    end: int
    columns: tuple[int, int] | None = None


@dataclass(slots=True)
class _Piece:
    """A span of a section on its way to becoming a chunk."""

    start: int
    end: int
    columns: tuple[int, int] | None
    embed_parts: list[str]
    alnum: int  # alphanumeric characters of its embed text, counted up to min_alnum
    stranded: bool = False  # residue the bound kept from joining a neighbour

    def fits_with(self, following: _Piece, page: _Lines, limit: int) -> bool:
        """Whether the following piece can join this one: whole lines within the limit, or
        adjacent parts of one line within the limit."""
        if self.columns is None and following.columns is None:
            return page.size(self.start, following.end) <= limit
        if self.columns is None or following.columns is None or self.end != following.start:
            return False
        return self.columns[1] == following.columns[0] and (
            following.columns[1] - self.columns[0] <= limit
        )

    def absorb(self, following: _Piece) -> None:
        self.end = following.end
        if self.columns is not None and following.columns is not None:
            self.columns = (self.columns[0], following.columns[1])
        self.embed_parts.extend(following.embed_parts)
        self.alnum += following.alnum


@dataclass(frozen=True, slots=True)
class _Unit:
    start: int
    end: int
    token: int  # index in the page's tokens, or _LINES
    heading: bool = False
    columns: tuple[int, int] | None = None  # a part [begin, stop) of the line start (== end)
