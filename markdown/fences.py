"""Fenced code (```` ``` ```` and `~~~`, at any indentation): the lines every dialect's
rules leave as they are."""

from __future__ import annotations

import re

# Any indentation: fences sit inside list items and admonition bodies too.
_FENCE_OPEN = re.compile(r"^[ \t]*(`{3,}(?=[^`]*$)|~{3,})")


def fence_opening(line: str) -> str:
    """The run of backticks or tildes a line opens a fence with ("" if it opens none)."""
    if line.lstrip(" \t")[:1] not in ("`", "~"):
        return ""
    opening = _FENCE_OPEN.match(line)
    return opening.group(1) if opening else ""


def closes_fence(line: str, fence: str) -> bool:
    marks = line.strip()
    return len(marks) >= len(fence) and marks == fence[0] * len(marks)


def in_fences(lines: list[str]) -> list[bool]:
    """For each line, whether it belongs to fenced code (the fence lines included)."""
    inside: list[bool] = []
    fence = ""
    for line in lines:
        if fence:
            inside.append(True)
            fence = "" if closes_fence(line, fence) else fence
        else:
            fence = fence_opening(line)
            inside.append(bool(fence))
    return inside
