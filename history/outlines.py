"""Which section each line of a page belongs to, from a light heading scan: ATX (`## Name`)
and setext (`Name` over `---`) headings outside fenced code, the front matter apart. A
section starts at a heading of level 1 to `levels` (the index's `section_levels`) and is
named by its breadcrumb, outermost first, joined like a search hit's `heading`; the lines
before the first heading are the section "". This is no parse: an HTML block or a list
item that looks like a heading counts as one, which only names one section too many.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator

from docdex.markdown.attribute_lists import HEADING_LINE, split_heading_id
from docdex.markdown.fences import closes_fence, fence_opening

BREADCRUMB_JOIN = " › "  # as the engine joins a hit's headings
HEADING_CHARS = 200  # of one heading: a page is text anyone can push
_FRONT_MATTER_LINES = 1_000  # a closing delimiter further down is no front matter
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*")
_NOT_PARAGRAPH = re.compile(r" {4}|\t|[ ]{0,3}(?:[-*+>|]|\d+[.)]|<)")
_MARKS = re.compile(r"`+|\*\*|__")
_FENCE_MARKS = ("`", "~")
_UNDERLINES = ("=", "-")


class Outline:
    """A page's sections: where each starts, its breadcrumb, and the front matter's end."""

    def __init__(self, lines: list[str], levels: int) -> None:
        self.front_matter_end = _front_matter_end(lines)
        self.starts = [0]
        self.names = [""]
        stack: list[tuple[int, str]] = []
        body = lines[self.front_matter_end :]
        for offset, (level, text) in _headings(body):
            if level > levels:
                continue
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, text))
            self.starts.append(self.front_matter_end + offset)
            self.names.append(BREADCRUMB_JOIN.join(name for _, name in stack))

    def sections(self, start: int, end: int) -> list[str]:
        """The sections lines [start, end) lie in, front matter left out; an empty range
        is the section of the line before it (a deletion's place)."""
        start = max(start, self.front_matter_end)
        if end <= start:
            end = start + 1
            start = max(start - 1, self.front_matter_end)
        first = bisect.bisect_right(self.starts, start) - 1
        last = bisect.bisect_right(self.starts, end - 1) - 1
        return self.names[first : last + 1]

    def touches_front_matter(self, start: int, end: int) -> bool:
        return start < self.front_matter_end and end > start


def _front_matter_end(lines: list[str]) -> int:
    if not lines or lines[0].rstrip() not in ("---", "+++"):
        return 0
    closers = ("---", "...") if lines[0].rstrip() == "---" else ("+++",)
    for end in range(1, min(len(lines), _FRONT_MATTER_LINES)):
        if lines[end].rstrip() in closers:
            return end + 1
    return 0


def _headings(lines: list[str]) -> Iterator[tuple[int, tuple[int, str]]]:
    """(line, (level, text)) of each heading outside fenced code: one pass in which only
    lines that can open or close a fence or be a heading are looked at closely."""
    fence = ""
    after_fence = False  # the line before was fenced code (an underline under it is none)
    for index, line in enumerate(lines):
        first = line.lstrip(" \t")[:1]
        if fence:
            if first == fence[0] and closes_fence(line, fence):
                fence = ""
            after_fence = True
            continue
        if first in _FENCE_MARKS and (fence := fence_opening(line)):
            after_fence = True
            continue
        if first == "#" and HEADING_LINE.match(line):
            yield index, _atx(line)
        elif (
            first in _UNDERLINES
            and index > 0
            and not after_fence
            and (underline := _SETEXT.fullmatch(line))
            and _is_setext_text(lines[index - 1])
        ):
            level = 1 if underline.group(1)[0] == "=" else 2
            yield index - 1, (level, _heading_text(lines[index - 1]))
        after_fence = False


def _is_setext_text(line: str) -> bool:
    return (
        bool(line.strip())
        and not _NOT_PARAGRAPH.match(line)
        and not HEADING_LINE.match(line)
        and not _SETEXT.fullmatch(line)
    )


def _atx(line: str) -> tuple[int, str]:
    """(level, text) of an ATX heading line: its marks, and a closing run of `#`, removed."""
    marked = line.lstrip(" ")
    level = len(marked) - len(marked.lstrip("#"))
    text = marked[level:].strip(" \t")
    unclosed = text.rstrip("#")
    if not unclosed or unclosed.endswith((" ", "\t")):
        text = unclosed
    return level, _heading_text(text)


def _heading_text(markdown: str) -> str:
    text, _id = split_heading_id(markdown.strip()[: 4 * HEADING_CHARS])
    text = _MARKS.sub("", text).strip()
    return text if len(text) <= HEADING_CHARS else text[: HEADING_CHARS - 1] + "…"
