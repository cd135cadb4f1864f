"""The clean text of a span of a page, what its chunk embeds and the full-text index reads:
rendered from the page's own block tokens (cleanup.py says what a reader sees), a block
cut at lines read from those lines, a part of a line on its own."""

from __future__ import annotations

import bisect

from . import cleanup
from .page_model import CONTAINERS, Page, Span, lines_of

_TABLE_PARTS = {"table_open", "thead_open", "tbody_open"}
_CODE = {"fence", "code_block"}


def span_text(page: Page, span: Span) -> str:
    if span.columns is not None:
        return _line_part_text(page, span.start, *span.columns)
    return _lines_text(page, span.start, span.end)


def _lines_text(page: Page, start: int, end: int) -> str:
    """Clean text of lines start..end, rendered from the page's own block tokens."""
    parts: list[str] = []
    first = bisect.bisect_right(page.block_ends, start)
    for position in range(first, len(page.top_level)):
        index = page.top_level[position]
        if lines_of(page.tokens[index])[0] > end:
            break
        _render(page, index, start, end, parts)
    return cleanup.tidy("".join(parts))


def _render(page: Page, index: int, start: int, end: int, parts: list[str]) -> None:
    token = page.tokens[index]
    first, after_last = lines_of(token)
    if first >= start and after_last - 1 <= end:
        parts.append(cleanup.render_tokens(page.tokens[index : page.closing[index] + 1], page.env))
    elif token.type in CONTAINERS or token.type in _TABLE_PARTS:
        for child in page.children_overlapping(index, start, end):
            _render(page, child.token, start, end, parts)
    else:
        parts.append(_partial_text(page, index, max(first, start), min(after_last - 1, end)))
        parts.append("\n")


def _partial_text(page: Page, index: int, start: int, end: int) -> str:
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


def _line_part_text(page: Page, line: int, begin: int, stop: int) -> str:
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
