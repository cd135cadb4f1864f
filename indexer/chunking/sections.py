"""A page's sections: where they start (headings h1..h{section_levels}, and `<details>`
blocks that have a `<summary>`, matched open to close across blocks), the breadcrumb each
carries, and the page's title."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from . import cleanup
from .page_model import Page, PageText, Section, lines_of

_DETAILS_TAG = re.compile(r"<(/?)(details|summary)\b[^<>]*>", re.IGNORECASE)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_HEADING_MAX_CHARS = 2_000  # of the markdown a heading or summary is read from
_MAX_DETAILS_DEPTH = 6  # deeper <details> are content, not sections

Tag = tuple[str, int, int, int]  # (tag, line, start, end): a details or summary tag


def headings_of(page: Page) -> list[Marker]:
    return [
        Marker(
            line=lines_of(page.tokens[index])[0],
            kind="heading",
            level=int(page.tokens[index].tag[1:]),
            text=page.tokens[index + 1].content[:_HEADING_MAX_CHARS],  # read after parsing
        )
        for index in page.top_level
        if page.tokens[index].type == "heading_open"
    ]


def page_title(
    front_matter_title: str, headings: list[Marker], path: str, env: dict[str, Any]
) -> str:
    if front_matter_title:
        title = heading_text(front_matter_title, env)
        if title:
            return title
    first_h1 = next((h.text for h in headings if h.level == 1 and h.text), "")
    return first_h1 or PurePosixPath(path.replace("\\", "/")).stem


def heading_text(markdown: str, env: dict[str, Any]) -> str:
    """A heading as a reader sees it; a huge one is read from its start only, since every
    chunk of its section carries it in its breadcrumb."""
    return cleanup.heading_text(markdown[:_HEADING_MAX_CHARS], env)


def page_sections(
    headings: list[Marker],
    tags: Iterable[Tag],
    text: PageText,
    env: dict[str, Any],
    levels: int,
    title: str,
) -> list[Section]:
    """The page's sections in line order, covering it: from its headings h1..h{levels} and
    its `<details>` with a summary (`headings` and `tags` as the pieces gave them), each
    under its breadcrumb."""
    details = _details_spans(tags, text.source, env)
    markers = _markers([h for h in headings if h.level <= levels], details)
    return list(_sections(markers, len(text.lines), title))


def _fold(text: str) -> str:
    return " ".join(text.casefold().split())


def _details_spans(tags: Iterable[Tag], source: str, env: dict[str, Any]) -> list[_Details]:
    """`<details>` elements that have a `<summary>`, matched open to close across blocks
    (`tags` as details_tags finds them in `source`, the whole page)."""
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
            open_details[-1].summary = heading_text(raw, env)
            summary_start = -1
    spans.extend(open_details)
    return sorted((d for d in spans if d.summary), key=lambda d: d.open_line)


def _wants_summary(details: _Details) -> bool:
    return not details.summary and details.depth < _MAX_DETAILS_DEPTH


def details_tags(page: Page) -> Iterator[Tag]:
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


def _markers(headings: list[Marker], details: list[_Details]) -> list[Marker]:
    """Section boundaries in line order; a close comes before anything starting on its line."""
    markers = list(headings)
    heading_lines = [h.line for h in headings]
    for span in details:
        markers.append(Marker(line=span.open_line, kind="open", text=span.summary))
        close_at = span.close_line + 1 if span.close_line >= 0 else _next_after(heading_lines, span)
        if close_at >= 0:
            markers.append(Marker(line=close_at, kind="close"))
    order = {"close": 0, "open": 1, "heading": 1}
    return sorted(markers, key=lambda m: (m.line, order[m.kind]))


def _next_after(lines: list[int], span: _Details) -> int:
    """An unclosed <details> ends at the next section heading (or with the page)."""
    position = bisect.bisect_right(lines, span.open_line)
    return lines[position] if position < len(lines) else -1


def _sections(markers: list[Marker], line_count: int, title: str) -> Iterator[Section]:
    crumbs: list[Marker] = []
    start = 0
    own_heading = ""
    for marker in markers:
        if marker.line > start:
            yield Section(start, marker.line - 1, _breadcrumb(title, crumbs), own_heading)
            start = marker.line
            own_heading = ""
        _apply(crumbs, marker)
        own_heading = marker.text if marker.kind != "close" else ""
    if start < line_count:
        yield Section(start, line_count - 1, _breadcrumb(title, crumbs), own_heading)


def _apply(crumbs: list[Marker], marker: Marker) -> None:
    if marker.kind == "heading":
        while crumbs and crumbs[-1].kind == "heading" and crumbs[-1].level >= marker.level:
            crumbs.pop()
        crumbs.append(marker)
    elif marker.kind == "open":
        crumbs.append(marker)
    elif any(c.kind == "open" for c in crumbs):
        while crumbs.pop().kind != "open":
            pass


def section_at(sections: list[Section], starts: list[int], line: int) -> Section:
    """The section that holds the line (sections cover the page, in order; `starts` are
    their first lines)."""
    return sections[bisect.bisect_right(starts, line) - 1]


def _breadcrumb(title: str, crumbs: list[Marker]) -> list[str]:
    folded_title = _fold(title)
    return [title] + [
        c.text
        for c in crumbs
        if c.text and not (c.kind == "heading" and c.level == 1 and _fold(c.text) == folded_title)
    ]


@dataclass(slots=True)
class Marker:
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
