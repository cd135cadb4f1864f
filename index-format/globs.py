"""The include and exclude globs of a source: which repo-relative paths they select. Patterns
are anchored at the repository root, `*` and `?` stay within one path segment, `**` spans
directories and a trailing `/` selects everything below a directory; each set of patterns is
compiled once into a single regular expression. Whoever reads a source's pages selects them
here: the indexer the pages it indexes, the history package the pages whose changes it lists.
"""

from __future__ import annotations

import functools
import re


def matches(path: str, include: list[str], exclude: list[str]) -> bool:
    if not _glob_set(tuple(include)).fullmatch(path):
        return False
    return not exclude or not _glob_set(tuple(exclude)).fullmatch(path)


def selects_below(directory: str, include: list[str], exclude: list[str]) -> bool:
    """Whether the globs would select a page directly inside `directory`: a submodule
    there holds pages a source cannot read, which it reports."""
    return any(matches(f"{directory}/{name}", include, exclude) for name in _PAGE_NAMES)


_PAGE_NAMES = ("README.md", "index.md", "_index.md", "index.mdx")
_NEVER = re.compile(r"(?!)")


@functools.lru_cache(maxsize=256)
def _glob_set(patterns: tuple[str, ...]) -> re.Pattern[str]:
    if not patterns:
        return _NEVER
    return re.compile("|".join(f"(?:{_glob_regex(p)})" for p in patterns))


def _glob_regex(pattern: str) -> str:
    """Anchored at the repository root; `**` spans directories, a trailing `/` means
    everything below that directory."""
    pattern = pattern.lstrip("/")
    if pattern.endswith("/"):
        pattern += "**"
    parts = pattern.split("/")
    regex = []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            regex.append(".*" if last else "(?:[^/]*/)*")
        else:
            regex.append(_segment_regex(part) + ("" if last else "/"))
    return "".join(regex)


def _segment_regex(segment: str) -> str:
    regex = []
    i = 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            regex.append("[^/]*")
            while i + 1 < len(segment) and segment[i + 1] == "*":
                i += 1
        elif char == "?":
            regex.append("[^/]")
        elif char == "\\" and i + 1 < len(segment):
            i += 1
            regex.append(re.escape(segment[i]))
        elif char == "[" and (end := segment.find("]", i + 2)) != -1:
            regex.append(_bracket_regex(segment[i + 1 : end]))
            i = end
        else:
            regex.append(re.escape(char))
        i += 1
    return "".join(regex)


def _bracket_regex(body: str) -> str:
    negate = body[0] in "!^"
    chars = "".join(c if c == "-" else re.escape(c) for c in body[negate:])
    return f"[^/{chars}]" if negate else f"(?!/)[{chars}]"
