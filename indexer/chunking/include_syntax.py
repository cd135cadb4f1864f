"""Includes: MkDocs snippets and Hugo/Jekyll include tags, resolved inside the repository
(adr/0018).

Recognised, one per line, outside fenced code:

    --8<-- "path"                      MkDocs (pymdownx.snippets), also 'path', a bare path,
                                       path:FIRST:LAST (those lines of the file)
    --8<--                             pymdownx.snippets' block form: a file per line
    file.md                            between two lone `--8<--` lines
    --8<--
    {* path ln[1:10,20:25] hl[3] *}    FastAPI's docs (a code example; hl[] ignored)
    {% include path %}                 Jekyll, from _includes/ (parameters after it ignored)
    {% include_relative path %}        Jekyll, beside the page
    {{< include "path" >}}             Hugo include / readfile shortcodes, {{% ... %}} too
    {{< readfile file="path" >}}

and, inside fenced code too (where its pages mostly write it), markdown-include's
`{!path!}` and `{!path[ln:10-20]!}`.

A path is looked for, in order, beside the page, at the repository root and under the
conventional folders (`docs/`, `snippets/`, `includes/`, `_includes/`, `content/`); a
FastAPI or markdown-include path also from each folder above the page (their `../../`
climb out of the docs' language folder). The first file that exists is read. A path that
is absolute, has a `..` that leaves the repository, or names no file is left alone (the
line stays as written). Files are read through a `PathReader` that sees only the tree
being indexed (the commit's tree, or the working tree with symlinks leaving it refused:
indexer/sources/include_files.py), at most `MAX_INCLUDES` per page, nested `MAX_DEPTH`
deep. What a hit shows of each included file (`Inclusion`, index-format/records.py) is
at most `SHOWN_CHARS`.

What includes may add is bounded (`IncludeBudget`, `PageIncludes`): a page expands each
file once (a later line including it again stays as written), a page with what it includes
stays within `max_file_bytes` and `INCLUDED_BYTES_PER_PAGE`, and one source's pages include
at most `INCLUDED_BYTES_PER_RUN` in a run. An include past a budget stays as written, and
its page says so in a problem of its own.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

PathReader = Callable[[str], "str | None"]  # repository path -> text, None if unreadable

MAX_INCLUDES = 80  # per page, nested ones counted (sqlmodel's longest tutorial page has 75)
MAX_DEPTH = 3
INCLUDED_BYTES_PER_PAGE = 1_000_000
INCLUDED_BYTES_PER_RUN = 32_000_000  # per source
# What a hit may show of one included file in place of its line, cut at a line: about a
# screen of code, the size of one widened hit (server/answers/widening.py).
SHOWN_CHARS = 4_000

_SNIPPET = re.compile(r"""^[ \t]*--8<--[ \t]+(?:"([^"\n]+)"|'([^'\n]+)'|(\S+))[ \t]*$""")
_SNIPPET_BLOCK = re.compile(r"^[ \t]*--8<--[ \t]*$")
_SNIPPET_RANGE = re.compile(r"^(.+?):(\d+)(?::(\d+))?$")  # file.md:3:5, file.md:3
_FASTAPI = re.compile(
    r"^[ \t]*\{\*[ \t]*+([^\s*]++)((?:[ \t]++[a-z]+\[[^\]\n]*+\])*+)[ \t]*+\*\}[ \t]*$"
)
_FASTAPI_LINES = re.compile(r"\bln\[([^\]]*)\]")
_MARKDOWN_INCLUDE = re.compile(
    r"^[ \t]*\{![ \t]*+([^\s!\[]++)(?:\[ln:([^\]\n]*+)\])?[ \t]*+!\}[ \t]*$"
)
_RANGE = re.compile(r"^[ \t]*(\d+)[ \t]*(?:[-:][ \t]*(\d*)[ \t]*)?$")
_JEKYLL = re.compile(
    r"^[ \t]*\{%-?[ \t]*(include|include_relative)[ \t]+([^\s%]+)[^%]*-?%\}[ \t]*$"
)
_HUGO = re.compile(
    r"""^[ \t]*\{\{[<%][ \t]*(?:include|readfile)[ \t]+(?:file[ \t]*=[ \t]*)?"""
    r"""(?:"([^"\n]+)"|'([^'\n]+)'|([^\s>%]+))[^>%]*[>%]\}\}[ \t]*$"""
)
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_FOLDERS = ("", "docs", "snippets", "includes", "_includes", "content")
_INCLUDE_MARKERS = ("{!", "--8<--", "{*", "{%", "{{")  # each include syntax has one


Lines = tuple[tuple[int, int], ...]  # a file's line ranges, 1-based, inclusive (0: its end)

SNIPPET = "snippet"
FASTAPI = "fastapi"
MARKDOWN_INCLUDE = "markdown-include"
MARKER = "marker"  # a line of the include syntax that stands for nothing (`--8<--` alone)


class IncludeLine(NamedTuple):
    """One include line: its syntax, the path as written, the file's lines it takes."""

    kind: str
    written: str
    lines: Lines = ()  # () = the whole file


def include_lines(lines: list[str]) -> dict[int, IncludeLine]:
    """Line index -> the include each include line names (a MARKER: none, the line shows
    nothing), outside fences, and markdown-include's inside them too."""
    found: dict[int, IncludeLine] = {}
    if not _any_include_marker("\n".join(lines)):  # most pages: no line to look at
        return found
    fence = ""
    block = -1  # the opening line of a snippet block, while in one
    for index, line in enumerate(lines):
        if "{!" in line and (m := _MARKDOWN_INCLUDE.match(line)):
            found[index] = IncludeLine(MARKDOWN_INCLUDE, m.group(1), _ranges(m.group(2) or ""))
            continue
        if fence:
            stripped = line.strip()
            if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
                fence = ""
            continue
        if block >= 0:
            found[index] = _block_line(line)
            block = -1 if found[index].kind == MARKER else block
            continue
        opening = _FENCE.match(line)
        if opening:
            fence = opening.group(1)
        elif "--8<--" in line and _SNIPPET_BLOCK.match(line) and _block_closes(lines, index):
            found[index], block = IncludeLine(MARKER, ""), index
        elif include := _one_line_include(line):
            found[index] = include
    return found


def _any_include_marker(text: str) -> bool:
    return any(marker in text for marker in _INCLUDE_MARKERS)


def _one_line_include(line: str) -> IncludeLine | None:
    if "--8<--" in line and (m := _SNIPPET.match(line)):
        return _snippet(_first(m))
    if "{*" in line and (m := _FASTAPI.match(line)):
        lines = _FASTAPI_LINES.search(m.group(2))
        return IncludeLine(FASTAPI, m.group(1), _ranges(lines.group(1)) if lines else ())
    if "{%" in line and (m := _JEKYLL.match(line)):
        return IncludeLine(m.group(1), m.group(2).strip("\"'"))
    if "{{" in line and (m := _HUGO.match(line)):
        return IncludeLine("hugo", _first(m))
    return None


def _block_line(line: str) -> IncludeLine:
    """A line inside a snippet block: a file to include, the closing marker, or nothing."""
    if _SNIPPET_BLOCK.match(line):
        return IncludeLine(MARKER, "")
    written = line.strip()
    return _snippet(written) if written and not written.startswith(";") else IncludeLine(MARKER, "")


def _block_closes(lines: list[str], opening: int) -> bool:
    """Whether a lone `--8<--` at `opening` starts a block another one closes (within the
    includes a page may have)."""
    ahead = lines[opening + 1 : opening + 2 + MAX_INCLUDES]
    return any(_SNIPPET_BLOCK.match(line) for line in ahead)


def _snippet(written: str) -> IncludeLine:
    """A snippet's path, and the lines `file.md:FIRST:LAST` selects."""
    if (m := _SNIPPET_RANGE.match(written)) is not None:
        first = int(m.group(2))
        return IncludeLine(SNIPPET, written, ((first, int(m.group(3) or first)),))
    return IncludeLine(SNIPPET, written)


def _ranges(written: str) -> Lines:
    """`1-11`, `3`, `5-`, `1:4,13:20` as line ranges (what does not parse is left out)."""
    out = []
    for part in written.split(","):
        if (m := _RANGE.match(part)) is not None:
            first = int(m.group(1))
            last = first if m.group(2) is None else int(m.group(2) or 0)
            out.append((first, last))
    return tuple(out)


def selected_lines(text: str, lines: Lines) -> str:
    """The lines of `text` that `lines` selects (all of it for ())."""
    if not lines:
        return text
    rows = text.split("\n")
    return "\n".join(
        "\n".join(rows[max(first - 1, 0) : last or len(rows)]) for first, last in lines
    )


def _first(match: re.Match[str]) -> str:
    return next(group for group in match.groups() if group)


def candidates(kind: str, written: str, page_path: str) -> list[str]:
    """Repository paths to try for an include written as `written` in `page_path`, safe ones
    only (relative, inside the repository)."""
    if not written or written.startswith(("/", "\\")) or "\\" in written or "\0" in written:
        return []
    here = posixpath.dirname(page_path)
    if kind == "include_relative":
        bases = [here]
    elif kind == "include":
        bases = ["_includes", "", here]
    elif kind in (FASTAPI, MARKDOWN_INCLUDE):
        bases = [here, *_folders_above(here), *_FOLDERS]
    else:
        bases = [here, *_FOLDERS]
    paths = [written]
    if kind == SNIPPET and ":" in written:  # "file.md:section" / "file.md:1:5"
        paths.append(written.split(":", 1)[0])
    out: list[str] = []
    for path in paths:
        for base in bases:
            joined = posixpath.normpath(posixpath.join(base, path))
            if joined in (".", "..") or joined.startswith("../") or joined.startswith("/"):
                continue
            if joined not in out:
                out.append(joined)
    return out


def _folders_above(folder: str) -> list[str]:
    """The folders that hold `folder`, nearest first (the root last, as "")."""
    above = []
    while folder:
        folder = posixpath.dirname(folder)
        above.append(folder)
    return above


DRAFT_SKIPPED = "draft: true in its front matter; not indexed (drafts = true keeps drafts)"


# --- budgets -------------------------------------------------------------------------------


@dataclass
class IncludeBudget:
    """The bytes one source's pages may still include in this run."""

    left: int = INCLUDED_BYTES_PER_RUN

    def page(self, read: PathReader, page_bytes: int, max_file_bytes: int) -> PageIncludes:
        """The reader of one page's includes: it shares this budget with the source's other
        pages, and the page's own with its includes (`max_file_bytes` counts the page and
        what it includes)."""
        own = min(INCLUDED_BYTES_PER_PAGE, max(max_file_bytes - page_bytes, 0))
        return PageIncludes(read, self, own)


@dataclass
class PageIncludes:
    """A PathReader for one page's includes, within its budgets: a file it already
    expanded, or one past a budget, reads as nothing (its line stays as written)."""

    read: PathReader
    source: IncludeBudget
    left: int  # what the page may still include
    expanded: set[str] = field(default_factory=set)
    refused: list[str] = field(default_factory=list)  # paths left out over a budget

    def __call__(self, path: str) -> str | None:
        if path in self.expanded:
            return None
        text = self.read(path)
        if text is None:
            return None
        size = len(text.encode("utf-8"))
        if size > self.left or size > self.source.left:
            self.refused.append(path)
            return None
        self.expanded.add(path)
        self.left -= size
        self.source.left -= size
        return text

    def problem(self) -> str:
        """A sentence on the includes left out over a budget ("" when none was)."""
        if not self.refused:
            return ""
        names = ", ".join(sorted(set(self.refused))[:3])
        more = len(set(self.refused)) - 3
        return (
            f"indexed without {len(self.refused)} include(s) ({names}"
            + (f" and {more} more" if more > 0 else "")
            + f"): what a page includes is limited to {INCLUDED_BYTES_PER_PAGE:,} bytes, "
            f"max_file_bytes with the page itself, and {INCLUDED_BYTES_PER_RUN:,} bytes per "
            "source and run; those lines stay as written"
        )
