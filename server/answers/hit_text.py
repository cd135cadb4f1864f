"""What a hit shows: its lines as the built site shows them, where the markdown holds
something other than the text a reader sees (adr/0018, adr/0033).

- An include line (FastAPI's `{* path *}`, pymdownx's `--8<--`, markdown-include's `{!path!}`,
  indexer/chunking/include_syntax.py) becomes the text of the file it names, as the chunker
  recorded it (`Inclusion`: bounded, the lines it selects), indented as the line is, fenced
  when the site fences it; the hit's `included` names the file. An include whose text would
  take the hit past its room keeps its line, which names the file. A line of the syntax that
  names no file (a snippet block's `--8<--`) shows nothing.
- An MDX page's `import`/`export` lines and component tags (`<Tabs>`, `<Since v="4.2" />`) show
  nothing; a component's children stay.
- Terminal colour markup (`<font color="#4E9A06">INFO</font>`, and inside fenced code the
  `<span style>`, `<u>`, `<b>` of FastAPI's console blocks) is its text.

A chunk's stored text stays the file's exact text (index-format/reassembly.py): get_document
and the page view read that; only a hit's `text` is derived here, after its widening.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import msgspec

from docdex.index_format.records import ChunkRecord, Inclusion
from docdex.markdown import jsx
from docdex.markdown.fences import in_fences
from docdex.server.engine import Hit

from .budget import cut

_FONT_TAG = re.compile(r"</?font\b[^<>\n]*+>", re.IGNORECASE)
# In fenced code, where no tag is rendered, the rest of a terminal's markup too (FastAPI's
# console blocks: `<span style="background-color:...">`, `<u>`, `<b>`).
_TERMINAL_TAG = re.compile(r"</?(?:font|span|u|b|i)\b[^<>\n]*+>", re.IGNORECASE)
_INDENT = re.compile(r"^[ \t]*")
_SPACE_RUNS = re.compile(r"(?<=\S) {2,}(?=\S)")
SHOWN_AT_LEAST = 200  # of an included text, or its line stays
NOTE_CHARS = 80  # room kept for the line saying what a cut included text leaves out
# What a text needs before it can differ from what it shows: without any, nothing is read.
_SIGNS = ("{*", "{!", "--8<--", "<font", "<FONT")


def shown(hit: Hit, chunks: Callable[[], Sequence[ChunkRecord]], room: int) -> Hit:
    """`hit` with its text as a reader of the site sees it, included text taking it to at
    most `room` characters (an include that would pass it is left as its line).
    `chunks`: the chunk records its lines come from (read only when an include may be)."""
    lines = hit.text.split("\n")
    mdx = jsx.is_mdx(hit.path, lines)
    if not mdx and not any(sign in hit.text for sign in _SIGNS):
        return hit
    includes = _includes_by_line(hit, chunks()) if _may_include(hit.text) else {}
    visible = jsx.without_jsx(lines) if mdx else lines
    waiting = sum(1 for inclusion in includes.values() if inclusion.path)
    out, included = _Shown(room - len(hit.text), waiting), []
    rows = zip(lines, visible, in_fences(lines), strict=True)
    for number, (line, seen, code) in enumerate(rows, hit.start_line):
        inclusion = includes.get(number)
        if inclusion is not None and out.include(line, inclusion):
            included += [inclusion.path] if inclusion.path else []
        elif seen != line and not seen.strip():
            out.drop()
        else:
            markup = _TERMINAL_TAG if code else _FONT_TAG
            out.add(markup.sub("", _tidy(seen) if seen != line else line))
    text = out.text()
    if text == hit.text:
        return hit
    return msgspec.structs.replace(hit, text=text, included=list(dict.fromkeys(included)))


def _may_include(text: str) -> bool:
    return "{*" in text or "{!" in text or "--8<--" in text


def _includes_by_line(hit: Hit, chunks: Sequence[ChunkRecord]) -> dict[int, Inclusion]:
    return {
        inclusion.line: inclusion
        for chunk in chunks
        for inclusion in chunk.includes
        if hit.start_line <= inclusion.line <= hit.end_line
    }


def _tidy(line: str) -> str:
    """A line whose tags were blanked: its words one space apart, its indentation kept."""
    return _SPACE_RUNS.sub(" ", line).rstrip()


class _Shown:
    """The shown text's lines as they are added, included texts taking at most `spare`
    characters more than the lines they stand for, each its share of what is left: a line
    left out takes a blank line beside it along, so that no gap of two blank lines remains."""

    def __init__(self, spare: int, waiting: int):
        self.lines: list[str] = []
        self.spare = spare
        self.waiting = waiting  # included texts still to come, which share `spare`
        self._dropped = False

    def add(self, line: str) -> None:
        if self._dropped and not line.strip() and (not self.lines or not self.lines[-1].strip()):
            return
        self._dropped = False
        self.lines.append(line)

    def drop(self) -> None:
        self._dropped = True

    def include(self, line: str, inclusion: Inclusion) -> bool:
        """Add what `line` stands for, cut to what is left of `spare` (False: not even
        SHOWN_AT_LEAST of it fits; the line stays)."""
        if not inclusion.path:
            self.drop()
            return True
        indent = _INDENT.match(line).group(0)  # type: ignore[union-attr]  # always matches
        share = self.spare // max(self.waiting, 1)  # a long one leaves the others their part
        self.waiting -= 1
        block = _block(inclusion, indent, share + len(line))
        if block is None:
            return False
        self.spare -= len(block) - len(line)
        self.add(block)
        return True

    def text(self) -> str:
        return "\n".join(self.lines)


def _block(inclusion: Inclusion, indent: str, limit: int) -> str | None:
    """The included text as it stands in the page, in at most `limit` characters: indented
    as its line, fenced when the site fences it; what does not fit left out, and a line
    saying how much of which file. None when not SHOWN_AT_LEAST of it would fit."""
    body = inclusion.text.rstrip("\n")
    fence = "`" * max(3, _longest_fence(body.split("\n")) + 1) if inclusion.code else ""
    frame = 2 * (len(fence) + len(indent) + 1) + len(inclusion.code)
    frame += (body.count("\n") + 1) * len(indent)  # at most: the lines cut away take none
    if len(body) + frame <= limit and not inclusion.more:
        shown = body
    elif limit - frame - NOTE_CHARS >= SHOWN_AT_LEAST:
        shown = cut(body, limit - frame - NOTE_CHARS)
    else:
        return None
    rows = shown.split("\n")
    if fence:
        rows = [f"{fence}{inclusion.code}", *rows, fence]
    left = body.count("\n") - shown.count("\n") + inclusion.more
    if shown != body or inclusion.more:
        rows.append(f"… ({left} more lines of {inclusion.path})")
    return "\n".join(f"{indent}{row}" if row else row for row in rows)


def _longest_fence(lines: list[str]) -> int:
    """The longest run of backticks opening a line of `lines` (0: none)."""
    opening = (line.lstrip(" \t") for line in lines)
    return max((len(line) - len(line.lstrip("`")) for line in opening), default=0)
