"""Markdown chunker: a page's text -> ParsedPage (metadata and breadcrumbed chunks).

Block boundaries come from markdown-it's block parser, given a large page a piece at a time
(pieces.py): one pass over the pieces finds the sections (sections.py), a second chunks each
piece from its own tokens (page_model.py). Sections start at headings h1..h{section_levels}
and at `<details>` blocks that have a `<summary>`. A section longer than the budget is cut
at block boundaries, and no chunk's text exceeds the hard bound (chunk_bound.py, adr/0014).
Short sections stay chunks of their own; a piece with almost no text joins a neighbour.

A chunk's text is the file's text of its lines, exactly: lines start..end, or a part of one
line (start == end), the parts of a line being consecutive chunks that join back into it
(index_format.reassembly). Every line that is not empty lies in some chunk, front matter
aside (it is the page's metadata: its lines are empty here), so the chunks give the page
back whole (line_coverage.py). What a chunk embeds is the clean text of its lines
(span_text.py), with the text its include lines bring in (included_text.py).

markdown-it stops parsing blocks nested deeper than its limit (a list ten levels deep) and
skips the rest of the page; here the too-deep lines are a plain paragraph instead, and the
blocks after them parse as usual.

Line numbers are 1-based lines of the file as stored; a lone CR counts as a line break, as
it does for markdown-it and editors.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Any

import msgspec

from docdex.index_format.records import Chunk, ChunkerSettings, ParsedPage

from . import cleanup, include_syntax, mdx
from .chunk_bound import line_units, packed, piece_chunk, section_chunks
from .frontmatter import read_front_matter
from .include_syntax import PathReader
from .included_text import Includes, with_includes
from .line_coverage import every_line_kept
from .page_model import Lines, Page, PageText, Piece, Section, Span
from .pieces import piece_bounds
from .sections import (
    Marker,
    Tag,
    details_tags,
    heading_text,
    headings_of,
    page_sections,
    page_title,
    section_at,
)
from .span_text import span_text

_log = logging.getLogger(__name__)


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
        return _parse_page(text, path, settings, Includes(read, _parse_page))
    except Exception:  # one odd page must not stop an index run; keep its text searchable
        _log.exception("markdown parse failed for %s; indexing it as plain lines", path)
        return _plain_page(text, path, settings)


def _parse_page(text: str, path: str, settings: ChunkerSettings, inc: Includes) -> ParsedPage:
    lines = cleanup.normalise_newlines(text).split("\n")
    front_matter_lines, meta = read_front_matter(lines)
    front_matter = "\n".join(lines[:front_matter_lines])
    lines[:front_matter_lines] = [""] * front_matter_lines
    parser_lines = mdx.parser_lines(path, lines)
    include_at = include_syntax.include_lines(parser_lines)
    for index in include_at:  # the line itself is no content; what it includes is
        parser_lines[index] = ""
    text_of_page = PageText(lines, cleanup.without_markers(parser_lines))
    bounds = piece_bounds(text_of_page.source_lines)
    env: dict[str, Any] = {}  # shared by the pieces: a reference is defined once per page
    headings: list[Marker] = []
    tags: list[Tag] = []
    kept: Page | None = None  # a page of one piece keeps the tokens of the first pass
    for first, after in bounds:  # the first pass: what sections need, tokens dropped
        page = Page(text_of_page, first, after, env)
        headings += headings_of(page)
        tags += details_tags(page)
        kept = page if len(bounds) == 1 else None
    for heading in headings:  # now that every reference definition is known
        heading.text = heading_text(heading.text, env)
    title = page_title(meta.title, headings, path, env)
    levels = min(max(settings.section_levels, 1), 6)
    sections = page_sections(headings, tags, text_of_page, env, levels, title)
    section_starts = [s.start for s in sections]
    chunks: list[Chunk] = []
    for first, after in bounds:  # the second pass: a piece's chunks from its tokens alone
        page = kept if kept is not None else Page(text_of_page, first, after, env)
        mine = _piece_chunks(page, sections, section_starts, settings, first, after)
        if include_at and inc.read is not None:
            here = {i: v for i, v in include_at.items() if first <= i < after}
            mine = with_includes(mine, here, lines, path, settings, inc, title)
        chunk_of = _chunk_of(page, sections, section_starts)
        chunks += every_line_kept(mine, page, settings, chunk_of, first, after)
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
    page: Page,
    sections: list[Section],
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
            section = Section(start, end, section.headings, own)
        out += section_chunks(page, section, settings)
    return out


def _chunk_of(page: Page, sections: list[Section], starts: list[int]) -> Callable[[Span], Chunk]:
    """A chunk of its own for lines no chunk holds, under the breadcrumb of their section."""

    def chunk_of(span: Span) -> Chunk:
        headings = section_at(sections, starts, span.start).headings
        embed_text = span_text(page, span)
        return piece_chunk(
            page, headings, Piece(span.start, span.end, span.columns, [embed_text], 0)
        )

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


def _plain_page(text: str, path: str, settings: ChunkerSettings) -> ParsedPage:
    """Last resort: the page as budget-sized runs of lines under its file name (a line over
    the bound in parts, as in a page that parses)."""
    title = PurePosixPath(path).stem
    page = Lines(cleanup.normalise_newlines(text).split("\n"))
    budget, limit = max(settings.budget_chars, 1), settings.max_chars
    last = len(page.lines) - 1
    spans = packed(page, line_units(page, 0, last, budget, limit), 0, last, budget, limit)
    chunks = [_plain_chunk(page, title, span) for span in spans]
    covered = every_line_kept(chunks, page, settings, lambda span: _plain_chunk(page, title, span))
    return ParsedPage(title=title, chunks=covered)


def _plain_chunk(page: Lines, title: str, span: Span) -> Chunk:
    text = page.text(span.start, span.end, span.columns)
    return Chunk([title], text, " ".join(text.split()), span.start + 1, span.end + 1)
