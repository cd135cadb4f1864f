"""Markdown chunker: a page's text -> ParsedPage (metadata and breadcrumbed chunks).

Block boundaries come from markdown-it's block parser. Sections start at headings
h1..h{section_levels} and at `<details>` blocks that have a `<summary>`. A section longer
than the budget is cut at block boundaries: lists at items, an oversize item at its blocks,
an oversize paragraph at lines; tables and code blocks are never cut. Short sections stay
chunks of their own; only pieces with almost no text are dropped.

Line numbers are 1-based lines of the file as stored; a lone CR counts as a line break, as
it does for markdown-it and editors.
"""

from __future__ import annotations

import bisect
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

from docdex.index_format.model import Chunk, ChunkerSettings, ParsedPage

from . import cleanup
from .frontmatter import read_front_matter

_log = logging.getLogger(__name__)

# Structure only: inline content is parsed on demand, for the text that needs it.
_BLOCK_PARSER = MarkdownIt("commonmark").enable("table").disable(["inline", "text_join"])

_DETAILS_TAG = re.compile(r"<(/?)(details|summary)\b[^<>]*>", re.IGNORECASE)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_SUMMARY_MAX_CHARS = 2_000
_MAX_DETAILS_DEPTH = 6  # deeper <details> are content, not sections
_UNSPLITTABLE = {"fence", "code_block", "table_open"}
_CONTAINERS = {"bullet_list_open", "ordered_list_open", "list_item_open", "blockquote_open"}
_LINES = -1  # Unit.token for a plain range of lines


def parse_page(
    text: str,
    path: str,
    settings: ChunkerSettings = ChunkerSettings(),  # noqa: B008 (frozen, so sharing is safe)
) -> ParsedPage:
    """Parse one markdown page into its metadata and chunks. Never raises."""
    try:
        return _parse_page(text, path, settings)
    except Exception:  # one odd page must not stop an index run; keep its text searchable
        _log.exception("markdown parse failed for %s; indexing it as plain lines", path)
        return _plain_page(text, path, settings)


def _parse_page(text: str, path: str, settings: ChunkerSettings) -> ParsedPage:
    lines = cleanup.normalise_newlines(text).split("\n")
    front_matter_lines, meta = read_front_matter(lines)
    lines[:front_matter_lines] = [""] * front_matter_lines
    page = _Page(lines, cleanup.without_markers(lines))
    headings = _headings(page)
    title = _title(meta.title, headings, path, page.env)
    levels = min(max(settings.section_levels, 1), 6)
    markers = _markers([h for h in headings if h.level <= levels], _details_spans(page))
    chunks = [
        chunk
        for section in _sections(markers, len(lines), title)
        for chunk in _section_chunks(page, section, settings)
    ]
    return ParsedPage(
        title=title, description=meta.description, tags=meta.tags, dates=meta.dates, chunks=chunks
    )


# --- metadata ------------------------------------------------------------------------------


def _headings(page: _Page) -> list[_Marker]:
    return [
        _Marker(
            line=page.tokens[index].map[0],  # type: ignore[index]
            kind="heading",
            level=int(page.tokens[index].tag[1:]),
            text=cleanup.heading_text(page.tokens[index + 1].content, page.env),
        )
        for index in page.top_level
        if page.tokens[index].type == "heading_open"
    ]


def _title(front_matter_title: str, headings: list[_Marker], path: str, env: dict[str, Any]) -> str:
    if front_matter_title:
        title = cleanup.heading_text(front_matter_title, env)
        if title:
            return title
    first_h1 = next((h.text for h in headings if h.level == 1 and h.text), "")
    return first_h1 or PurePosixPath(path.replace("\\", "/")).stem


def _fold(text: str) -> str:
    return " ".join(text.casefold().split())


# --- sections ------------------------------------------------------------------------------


def _details_spans(page: _Page) -> list[_Details]:
    """`<details>` elements that have a `<summary>`, matched open to close across blocks."""
    spans: list[_Details] = []
    open_details: list[_Details] = []
    summary_start = -1
    for kind, line, start, end in _details_tags(page):
        if kind == "details":
            open_details.append(_Details(open_line=line, depth=len(open_details)))
        elif kind == "/details" and open_details:
            details = open_details.pop()
            details.close_line = line
            spans.append(details)
        elif kind == "summary" and open_details and _wants_summary(open_details[-1]):
            summary_start = end
        elif kind == "/summary" and open_details and summary_start >= 0:
            raw = page.source[summary_start : min(start, summary_start + _SUMMARY_MAX_CHARS)]
            open_details[-1].summary = cleanup.heading_text(raw, page.env)
            summary_start = -1
    spans.extend(open_details)
    return sorted((d for d in spans if d.summary), key=lambda d: d.open_line)


def _wants_summary(details: _Details) -> bool:
    return not details.summary and details.depth < _MAX_DETAILS_DEPTH


def _details_tags(page: _Page) -> Iterator[tuple[str, int, int, int]]:
    """(tag, line, start, end) of details/summary tags in top-level HTML and paragraphs."""
    for index in page.top_level:
        token = page.tokens[index]
        if token.type not in ("html_block", "paragraph_open"):
            continue
        first, last = token.map  # type: ignore[misc]
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
    piece before it (or, first in its section, the piece after it).

    A short section keeps its chunk when it says anything below its heading (a one-line
    answer is often the best hit); a bare heading needs min_alnum characters of its own.
    """
    budget = max(settings.budget_chars, 1)
    pieces: list[_Piece] = []
    for start, end in _pieces(page, section, budget):
        embed_text = _embed_text(page, start, end)
        alnum = _alnum_count(embed_text, stop_at=settings.min_alnum)
        if start == section.start and section.own_heading:
            alnum_of_heading = _alnum_count(section.own_heading)
            if alnum > alnum_of_heading:  # something below the heading
                alnum = settings.min_alnum
        piece = _Piece(start, end, [embed_text], alnum)
        if pieces and min(piece.alnum, pieces[-1].alnum) < settings.min_alnum:
            pieces[-1].absorb(piece)
        else:
            pieces.append(piece)
    return [
        _chunk(page, section.headings, piece)
        for piece in pieces
        if piece.alnum >= settings.min_alnum
    ]


def _pieces(page: _Page, section: _Section, budget: int) -> Iterator[tuple[int, int]]:
    """Cut the section's lines into contiguous pieces, trimmed of blank lines (0-based)."""
    piece_start = section.start
    headings_only = True
    has_units = False
    for unit in _units(page, section.start, section.end, budget):
        over = page.size(piece_start, unit.end) > budget
        if has_units and over and not headings_only:
            yield from _trimmed(page, piece_start, unit.start - 1)
            piece_start, headings_only = unit.start, True
        has_units = True
        headings_only = headings_only and unit.is_heading(page)
    yield from _trimmed(page, piece_start, section.end)


def _trimmed(page: _Page, start: int, end: int) -> Iterator[tuple[int, int]]:
    while start <= end and not page.lines[start].strip():
        start += 1
    while end >= start and not page.lines[end].strip():
        end -= 1
    if start <= end:
        yield start, end


def _units(page: _Page, start: int, end: int, budget: int) -> Iterator[_Unit]:
    """The blocks of lines start..end, broken down until each fits the budget or is atomic."""
    first = bisect.bisect_right(page.block_ends, start)
    for position in range(first, len(page.top_level)):
        index = page.top_level[position]
        first_line, after_last = page.tokens[index].map  # type: ignore[misc]
        if first_line > end:
            break
        if first_line >= start and after_last - 1 <= end:
            yield from _broken_down(page, _Unit(first_line, after_last - 1, index), budget)
        else:  # a block that straddles a section boundary (an HTML block around </details>)
            clipped = _Unit(max(first_line, start), min(after_last - 1, end), _LINES)
            yield from _broken_down(page, clipped, budget)


def _broken_down(page: _Page, unit: _Unit, budget: int) -> Iterator[_Unit]:
    kind = page.tokens[unit.token].type if unit.token != _LINES else ""
    if page.size(unit.start, unit.end) <= budget or kind in _UNSPLITTABLE:
        yield unit
    elif kind in _CONTAINERS and (children := page.children(unit.token)):
        for child in children:
            yield from _broken_down(page, child, budget)
    else:
        for line in range(unit.start, unit.end + 1):
            if page.lines[line].strip():
                yield _Unit(line, line, _LINES)


def _chunk(page: _Page, headings: list[str], piece: _Piece) -> Chunk:
    return Chunk(
        headings=headings,
        text="\n".join(page.lines[piece.start : piece.end + 1]),
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


# --- embed text ----------------------------------------------------------------------------


def _embed_text(page: _Page, start: int, end: int) -> str:
    """Clean text of lines start..end, rendered from the page's own block tokens."""
    parts: list[str] = []
    first = bisect.bisect_right(page.block_ends, start)
    for position in range(first, len(page.top_level)):
        index = page.top_level[position]
        if page.tokens[index].map[0] > end:  # type: ignore[index]
            break
        _render(page, index, start, end, parts)
    return cleanup.tidy("".join(parts))


def _render(page: _Page, index: int, start: int, end: int, parts: list[str]) -> None:
    token = page.tokens[index]
    first, after_last = token.map  # type: ignore[misc]
    if first >= start and after_last - 1 <= end:
        parts.append(cleanup.render_tokens(page.tokens[index : page.closing[index] + 1], page.env))
    elif token.type in _CONTAINERS:
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
        lines = inline.content.split("\n")[start - first : end - first + 1]
        return cleanup.inline_text("\n".join(lines), page.env)
    return cleanup.html_block_text("\n".join(page.source_lines[start : end + 1]), page.env)


def _plain_page(text: str, path: str, settings: ChunkerSettings) -> ParsedPage:
    """Last resort: the page as budget-sized runs of lines under its file name."""
    title = PurePosixPath(path).stem
    lines = cleanup.normalise_newlines(text).split("\n")
    chunks: list[Chunk] = []
    start, size = 0, 0
    for number, line in enumerate(lines):
        size += len(line) + 1
        if size >= settings.budget_chars or number == len(lines) - 1:
            body = "\n".join(lines[start : number + 1])
            if body.strip():
                chunks.append(Chunk([title], body, " ".join(body.split()), start + 1, number + 1))
            start, size = number + 1, 0
    return ParsedPage(title=title, chunks=chunks)


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


class _Page:
    """A page's lines, its block tokens and lookups over them.

    `lines` are the file's lines (front matter blanked), the source of chunk text;
    `source_lines` are the same lines without admonition markers and template tags, the
    input of the parser. Both have one entry per line of the file.
    """

    def __init__(self, lines: list[str], source_lines: list[str]):
        self.lines = lines
        self.source_lines = source_lines
        self.source = "\n".join(source_lines)
        self.env: dict[str, Any] = {}
        self.tokens = _BLOCK_PARSER.parse(self.source, self.env)
        self.closing = _closing_indexes(self.tokens)
        self.top_level = [
            i for i, t in enumerate(self.tokens) if t.level == 0 and t.nesting != -1 and t.map
        ]
        self.block_ends = [self.tokens[i].map[1] for i in self.top_level]  # type: ignore[index]
        self.line_offsets = _offsets(source_lines)
        self.size_offsets = _offsets(lines)

        self._children: dict[int, list[_Unit]] = {}
        self._children_ends: dict[int, list[int]] = {}

    def size(self, start: int, end: int) -> int:
        """Characters of lines start..end (0-based, inclusive), newlines included."""
        return self.size_offsets[end + 1] - self.size_offsets[start]

    def children(self, index: int) -> list[_Unit]:
        """The blocks directly inside the container token at index (cached)."""
        if index not in self._children:
            parent = self.tokens[index]
            self._children[index] = [
                _Unit(token.map[0], token.map[1] - 1, child)
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


@dataclass
class _Marker:
    line: int  # 0-based line where the section starts (for "close": where the outer resumes)
    kind: str  # "heading" | "open" (<details> with a summary) | "close" (</details>)
    level: int = 0
    text: str = ""


@dataclass
class _Details:
    open_line: int
    depth: int  # how many <details> enclose it
    close_line: int = -1
    summary: str = ""


@dataclass(frozen=True)
class _Section:
    start: int
    end: int
    headings: list[str]
    own_heading: str  # text of the heading or summary it starts with ("" if none)


@dataclass
class _Piece:
    """Lines start..end of a section, on their way to becoming a chunk."""

    start: int
    end: int
    embed_parts: list[str]
    alnum: int  # alphanumeric characters of its embed text, counted up to min_alnum

    def absorb(self, following: _Piece) -> None:
        self.end = following.end
        self.embed_parts.extend(following.embed_parts)
        self.alnum += following.alnum


@dataclass(frozen=True)
class _Unit:
    start: int
    end: int
    token: int  # index in the page's tokens, or _LINES

    def is_heading(self, page: _Page) -> bool:
        return self.token != _LINES and page.tokens[self.token].type == "heading_open"
