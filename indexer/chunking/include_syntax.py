"""Includes: MkDocs snippets and Hugo/Jekyll include tags, resolved inside the repository
(adr/0018).

Recognised, one per line, outside fenced code:

    --8<-- "path"                      MkDocs (pymdownx.snippets), also 'path' or bare path
    {% include path %}                 Jekyll, from _includes/ (parameters after it ignored)
    {% include_relative path %}        Jekyll, beside the page
    {{< include "path" >}}             Hugo include / readfile shortcodes, {{% ... %}} too
    {{< readfile file="path" >}}

A path is looked for, in order, beside the page, at the repository root and under the
conventional folders (`docs/`, `snippets/`, `includes/`, `_includes/`, `content/`); the
first file that exists is read. A path that is absolute, has a `..` that leaves the
repository, or names no file is left alone (the line stays as written). Files are read
through a `PathReader` that sees only the tree being indexed (the commit's tree, or the
working tree with symlinks leaving it refused: indexer/sources/include_files.py), at most
`MAX_INCLUDES` per page, nested `MAX_DEPTH` deep.

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

PathReader = Callable[[str], "str | None"]  # repository path -> text, None if unreadable

MAX_INCLUDES = 32  # per page, nested ones counted
MAX_DEPTH = 3
INCLUDED_BYTES_PER_PAGE = 1_000_000
INCLUDED_BYTES_PER_RUN = 32_000_000  # per source

_SNIPPET = re.compile(r"""^[ \t]*--8<--[ \t]+(?:"([^"\n]+)"|'([^'\n]+)'|(\S+))[ \t]*$""")
_JEKYLL = re.compile(
    r"^[ \t]*\{%-?[ \t]*(include|include_relative)[ \t]+([^\s%]+)[^%]*-?%\}[ \t]*$"
)
_HUGO = re.compile(
    r"""^[ \t]*\{\{[<%][ \t]*(?:include|readfile)[ \t]+(?:file[ \t]*=[ \t]*)?"""
    r"""(?:"([^"\n]+)"|'([^'\n]+)'|([^\s>%]+))[^>%]*[>%]\}\}[ \t]*$"""
)
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_FOLDERS = ("", "docs", "snippets", "includes", "_includes", "content")


def include_lines(lines: list[str]) -> dict[int, tuple[str, list[str]]]:
    """Line index -> (kind, candidate paths as written) of each include line outside fences."""
    found: dict[int, tuple[str, list[str]]] = {}
    fence = ""
    for index, line in enumerate(lines):
        if fence:
            stripped = line.strip()
            if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
                fence = ""
            continue
        opening = _FENCE.match(line)
        if opening:
            fence = opening.group(1)
            continue
        if "--8<--" in line and (m := _SNIPPET.match(line)):
            found[index] = ("snippet", [_first(m)])
        elif "{%" in line and (m := _JEKYLL.match(line)):
            found[index] = (m.group(1), [m.group(2).strip("\"'")])
        elif "{{" in line and (m := _HUGO.match(line)):
            found[index] = ("hugo", [_first(m)])
    return found


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
    else:
        bases = [here, *_FOLDERS]
    paths = [written]
    if kind == "snippet" and ":" in written:  # "file.md:section" / "file.md:1:5"
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
