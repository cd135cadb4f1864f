"""The scan that blanks tags in prose: in MDX every JSX tag and `{expression}`, elsewhere
component tags; HTML comments in both (jsx.py). Code spans and escapes are skipped, and the
scan is linear in the text: what was once found unclosed is not looked for again past the
same point. A blanked span leaves its newlines, or one space between words and nothing at a
line's start, so positions still match the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


def blank_runs(out: list[str], prose: list[int], mdx: bool) -> None:
    """Blank what the scan finds on the prose lines of `out` (by index); consecutive prose
    lines are scanned as one text, so a tag or a comment may span them."""
    scanner = _Scanner(mdx)
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
        cleaned = _without(text, scanner.spans(text)).split("\n")
        for i, line in zip(run, cleaned, strict=True):
            out[i] = line


@dataclass(frozen=True)
class _Scanner:
    """Finds the spans to blank: in MDX every tag and expression, elsewhere component tags;
    HTML comments in both. Linear in the text: what was once found unclosed is not looked
    for again past the same point."""

    mdx: bool

    def spans(self, text: str) -> list[tuple[int, int]]:
        removed: list[tuple[int, int]] = []
        seen = _Unclosed()
        special = _MDX_SPECIAL if self.mdx else _MARKDOWN_SPECIAL
        i = 0
        while found := special.search(text, i):
            i, c = found.start(), found.group()
            if c == "`":
                i = _skip_code_span(text, i, seen)
            elif c == "\\":
                i += 2
            elif c == "{":
                end = _brace_end(text, i)
                removed.append((i, end))
                i = end
            elif end := _comment_end(text, i, seen) or self._tag_end(text, i, seen):
                removed.append((i, end))
                i = end
            else:
                i += 1
        return removed

    def _tag_end(self, text: str, i: int, seen: _Unclosed) -> int:
        """Where the tag starting at i ends (0: no tag starts there)."""
        if self.mdx:
            return _tag_end(text, i) if _starts_jsx_tag(text, i) else 0
        if i < seen.tags_before or not _COMPONENT_TAG.match(text, i):
            return 0
        end = _tag_end(text, i)
        if text[end - 1 : end] == ">":
            return end
        seen.tags_before = end  # a component's tag left open: nothing closes before `end`
        return 0


@dataclass
class _Unclosed:
    """What a scan found left open, so that it never looks for its end again."""

    comments: bool = False  # an HTML comment runs to the end
    code_runs: set[int] = field(default_factory=set)  # backtick runs no run of closes
    tags_before: int = -1  # no component tag closes before this index


_MDX_SPECIAL = re.compile(r"[`\\<{]")
_MARKDOWN_SPECIAL = re.compile(r"[`\\<]")
_COMPONENT_TAG = re.compile(r"</?(?:[A-Z][\w]*|[a-z][\w]*(?:[.-][\w]+)+)(?=[\s/>])")


def _comment_end(text: str, i: int, seen: _Unclosed) -> int:
    """Where the HTML comment starting at i ends (0: none starts, or it never ends)."""
    if seen.comments or not text.startswith("<!--", i):
        return 0
    end = text.find("-->", i + 4)
    seen.comments = end < 0
    return 0 if end < 0 else end + 3


def _starts_jsx_tag(text: str, i: int) -> bool:
    after = text[i + 1 : i + 3]
    if after[:1] == ">" or after == "/>":  # fragments
        return True
    if after[:1] == "/":
        after = after[1:]
    return bool(after[:1]) and after[0].isalpha()


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


def _skip_code_span(text: str, i: int, seen: _Unclosed) -> int:
    run = 1
    while text[i + run : i + run + 1] == "`":
        run += 1
    close = -1 if run in seen.code_runs else text.find("`" * run, i + run)
    if close < 0:
        seen.code_runs.add(run)
        return i + run
    return close + run


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
