"""MDX: the markdown a page shows, without its JavaScript (adr/0018).

`without_jsx` blanks, outside fenced code and inline code spans, what MDX reads as code:
ESM blocks (`import` / `export` statements at the start of a line, over as many lines as
their brackets span), JSX tags (`<Tabs>`, `<TabItem value="x">`, `</Tabs>`, `<Foo />`,
fragments `<>`, tags over several lines, attributes with `{...}` and `>` inside) and
`{expressions}` (`{/* comments */}` too). A component's children are kept. Newlines stay,
so lines still match the file (a removed tag leaves one space between words, nothing at a
line's start, so children do not turn into indented code): the result is parser input only,
never a chunk's text.
"""

from __future__ import annotations

import re

_ESM_START = re.compile(r"^(?:import|export)(?=[\s{*])")
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_MAX_ESM_LINES = 200  # an unbalanced statement blanks at most this many lines


def without_jsx(lines: list[str]) -> list[str]:
    """The page's lines with ESM, JSX tags and expressions blanked (same count)."""
    out = list(lines)
    prose: list[int] = []  # indexes of lines outside fences and ESM blocks
    fence = ""
    index = 0
    while index < len(lines):
        line = lines[index]
        if fence:
            if line.strip() and set(line.strip()) == {fence[0]} and len(line.strip()) >= len(fence):
                fence = ""
            index += 1
            continue
        opening = _FENCE.match(line)
        if opening:
            fence = opening.group(1)
            index += 1
            continue
        if _ESM_START.match(line):
            index = _blank_esm(lines, out, index)
            continue
        prose.append(index)
        index += 1
    _blank_jsx(out, prose)
    return out


def _blank_esm(lines: list[str], out: list[str], start: int) -> int:
    """Blank the statement starting at `start`; the index of the line after it."""
    depth = 0
    index = start
    while index < len(lines) and index - start < _MAX_ESM_LINES:
        line = lines[index]
        depth += sum(line.count(c) for c in "{([") - sum(line.count(c) for c in "})]")
        out[index] = " " * len(line)
        index += 1
        stripped = line.rstrip()
        if depth <= 0 and not stripped.endswith((",", "=", "=>", "(", "{", "[")):
            break
    return index


def _blank_jsx(out: list[str], prose: list[int]) -> None:
    """Blank tags and expressions on the prose lines (a tag may span several of them)."""
    # Work on runs of consecutive prose lines joined, so a tag can span lines.
    runs: list[list[int]] = []
    for index in prose:
        if runs and runs[-1][-1] == index - 1:
            runs[-1].append(index)
        else:
            runs.append([index])
    for run in runs:
        text = "\n".join(out[i] for i in run)
        if "<" not in text and "{" not in text:
            continue
        cleaned = _scan(text).split("\n")
        for i, line in zip(run, cleaned, strict=True):
            out[i] = line


def _scan(text: str) -> str:
    removed: list[tuple[int, int]] = []
    n = len(text)
    i = 0
    while i < n:
        c = text[i]
        if c == "`":
            i = _skip_code_span(text, i)
        elif c == "\\":
            i += 2
        elif c == "<" and _starts_tag(text, i):
            end = _tag_end(text, i)
            removed.append((i, end))
            i = end
        elif c == "{":
            end = _brace_end(text, i)
            removed.append((i, end))
            i = end
        else:
            i += 1
    return _without(text, removed)


def _starts_tag(text: str, i: int) -> bool:
    after = text[i + 1 : i + 3]
    if after[:1] == ">" or after == "/>":  # fragments
        return True
    if after[:1] == "/":
        after = after[1:]
    return bool(after[:1]) and (after[0].isalpha())


def _tag_end(text: str, i: int) -> int:
    """Index after the `>` closing the tag at i (quotes and braces skipped)."""
    j = i + 1
    quote = ""
    while j < len(text):
        c = text[j]
        if quote:
            if c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c == "{":
            j = _brace_end(text, j)
            continue
        elif c == ">":
            return j + 1
        elif c == "\n" and text[j + 1 : j + 2] == "\n":
            return j  # a blank line ends an unclosed tag: it was prose after all
        j += 1
    return j


def _brace_end(text: str, i: int) -> int:
    depth = 0
    quote = ""
    for j in range(i, len(text)):
        c = text[j]
        if quote:
            if c == quote:
                quote = ""
            elif c == "\\":
                continue
        elif c in "\"'`":
            quote = c
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return j + 1
        elif c == "\n" and text[j + 1 : j + 2] == "\n" and depth > 0:
            return j  # unbalanced: stop at the paragraph's end
    return len(text)


def _skip_code_span(text: str, i: int) -> int:
    run = len(text[i:]) - len(text[i:].lstrip("`"))
    close = text.find("`" * run, i + run)
    return i + run if close < 0 else close + run


def _without(text: str, removed: list[tuple[int, int]]) -> str:
    """`text` without the ranges: each becomes its newlines, or one space between words."""
    parts: list[str] = []
    position = 0
    last = "\n"  # the last character written
    for start, end in removed:
        kept = text[position:start]
        if kept:
            parts.append(kept)
            last = kept[-1]
        newlines = text.count("\n", start, end)
        if newlines:
            parts.append("\n" * newlines)
            last = "\n"
        elif not last.isspace():
            parts.append(" ")
            last = " "
        position = end
    parts.append(text[position:])
    return "".join(parts)
