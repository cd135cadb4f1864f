"""Every line served back (adr/0032): once a piece of a page is chunked, the lines no chunk
holds (a heading with nothing of its own, a fragment with almost no text, a line of spaces)
grow a neighbouring chunk or become chunks of their own, so that the chunks give the page
back whole."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import msgspec

from docdex.index_format.records import Chunk, ChunkerSettings

from .chunk_bound import line_parts
from .page_model import Lines, Span


def every_line_kept(
    chunks: list[Chunk],
    page: Lines,
    settings: ChunkerSettings,
    chunk_of: Callable[[Span], Chunk],
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


def _grows(page: Lines, chunk: Chunk, start: int, end: int, limit: int) -> bool:
    """Whether the chunk, lines and not a part of one, can span lines start..end."""
    whole = len(chunk.text) == page.size(chunk.start_line - 1, chunk.end_line - 1) - 1
    return whole and page.size(start, end) - 1 <= limit


def _spanning(page: Lines, chunk: Chunk, start: int, end: int) -> Chunk:
    text = page.text(start, end, None)
    return msgspec.structs.replace(chunk, text=text, start_line=start + 1, end_line=end + 1)


def _runs(page: Lines, start: int, end: int, budget: int, limit: int) -> Iterator[Span]:
    """Lines start..end as runs within the limit, each from and to a line that is not
    empty; a line over the limit as its parts."""
    run: tuple[int, int] | None = None  # its first and last line
    for line in range(start, end + 1):
        if not page.lines[line]:
            continue
        long_line = page.size(line, line) > limit
        if run and (long_line or page.size(run[0], line) - 1 > limit):
            yield Span(*run)
            run = None
        if long_line:
            yield from (Span(line, line, c) for c in line_parts(page.lines[line], budget, limit))
        else:
            run = (run[0] if run else line, line)
    if run:
        yield Span(*run)
