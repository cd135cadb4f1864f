"""A page's text rebuilt from its chunks: the index keeps no other copy of a page.

The chunker (indexer/markdown.py) and the server (server/pages.py) share this rule, so it
lives in the format: line N of the result is line N of the file wherever a chunk covers it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class LineSpan(Protocol):
    text: str
    start_line: int
    end_line: int


def reassemble(chunks: Sequence[LineSpan]) -> str:
    """The page's markdown rebuilt from its chunks, line-aligned with the file: line N of the
    result is line N of the file wherever a chunk covers it; other lines (front matter, blank
    separators, dropped near-empty fragments) are empty."""
    lines: list[str] = []
    for chunk in sorted(chunks, key=lambda c: c.start_line):
        first = chunk.start_line - 1
        if first > len(lines):
            lines += [""] * (first - len(lines))
        lines += chunk.text.split("\n")[len(lines) - first :]
    return "\n".join(lines)
