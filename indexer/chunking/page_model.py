"""The page model: a page's lines (as stored and as the parser reads them), the block
tokens of a piece of it with lookups over them, and the sections, spans, pieces and units
its chunks are cut from, as data.

Line numbers here are 0-based lines of the file as stored (a chunk's are 1-based).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.parser_block import RuleFuncBlockType
from markdown_it.rules_block import StateBlock
from markdown_it.token import Token

from docdex.markdown.deep_blocks import DeepBlocksAsText

from .pieces import line_offsets

# What a line must start with (after its indentation) for each of these block rules to
# match it. markdown-it asks every rule in turn at each line, and each paragraph line asks
# most of them whether they interrupt it; a rule refuses any other line, so it is not asked.
_FIRST_CHARACTERS = {
    "fence": "`~",
    "blockquote": ">",
    "hr": "*-_",
    "list": "*-+0123456789",
    "reference": "[",
    "html_block": "<",
    "heading": "#",
}


def _starting_with(characters: str, rule: RuleFuncBlockType) -> RuleFuncBlockType:
    def refusing_early(state: StateBlock, start: int, end: int, silent: bool) -> bool:
        first = state.bMarks[start] + state.tShift[start]
        if first < state.eMarks[start] and state.src[first] not in characters:
            return False
        return rule(state, start, end, silent)

    return refusing_early


def _table_below(rule: RuleFuncBlockType) -> RuleFuncBlockType:
    """The table rule, asked only when the next line may be a delimiter row (`|`, `-`, `:`
    first)."""

    def refusing_early(state: StateBlock, start: int, end: int, silent: bool) -> bool:
        below = start + 1
        first = state.bMarks[below] + state.tShift[below] if below < end else -1
        if first < 0 or (first < state.eMarks[below] and state.src[first] not in "|-:"):
            return False
        return rule(state, start, end, silent)

    return refusing_early


def _block_parser() -> MarkdownIt:
    """Structure only (inline content is parsed on demand, for the text that needs it),
    too-deep blocks as text, the same tokens with fewer rules asked."""
    parser = MarkdownIt("commonmark").enable("table").disable(["inline", "text_join"])
    parser.block = DeepBlocksAsText(parser)
    ruler = parser.block.ruler
    for rule in list(ruler.__rules__):
        if rule.name in _FIRST_CHARACTERS:
            quick = _starting_with(_FIRST_CHARACTERS[rule.name], rule.fn)
            ruler.at(rule.name, quick, {"alt": rule.alt})
        elif rule.name == "table":
            ruler.at(rule.name, _table_below(rule.fn), {"alt": rule.alt})
    return parser


_BLOCK_PARSER = _block_parser()

CONTAINERS = {"bullet_list_open", "ordered_list_open", "list_item_open", "blockquote_open"}
LINES = -1  # Unit.token for a plain range of lines


def lines_of(token: Token) -> tuple[int, int]:
    """(first line, line after the last) of a block token, 0-based: markdown-it maps every
    block token to its lines (only inline tokens have no map)."""
    assert token.map is not None, token.type
    first, after_last = token.map
    return first, after_last


def alnum_count(text: str, stop_at: int = -1) -> int:
    """Alphanumeric characters of `text`, counted up to `stop_at` when it is positive."""
    if stop_at <= 0:
        return sum(map(str.isalnum, text))
    count = 0
    step = 4 * stop_at  # a long text is counted a slice at a time, so it may stop early
    for start in range(0, len(text), step):
        count += sum(map(str.isalnum, text[start : start + step]))
        if count >= stop_at:
            return stop_at
    return count


def _closing_indexes(tokens: list[Token]) -> list[int]:
    """For each opening token, the index of its closing token (others map to themselves)."""
    closing = list(range(len(tokens)))
    opened: list[int] = []
    for index, token in enumerate(tokens):
        if token.nesting == 1:
            opened.append(index)
        elif token.nesting == -1 and opened:
            closing[opened.pop()] = index
    return closing


class Lines:
    """A page's lines as stored (front matter blanked): the text chunks are cut from."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        self.size_offsets = line_offsets(lines)
        self._alnum: dict[tuple[int, int], int] = {}

    def size(self, start: int, end: int) -> int:
        """Characters of lines start..end (0-based, inclusive), newlines included."""
        return self.size_offsets[end + 1] - self.size_offsets[start]

    def text(self, start: int, end: int, columns: tuple[int, int] | None) -> str:
        if columns is not None:
            return self.lines[start][columns[0] : columns[1]]
        return "\n".join(self.lines[start : end + 1])

    def alnum(self, line: int, stop_at: int) -> int:
        """Alphanumeric characters of a line, counted up to stop_at (cached: every part of a
        long line asks)."""
        if (line, stop_at) not in self._alnum:
            self._alnum[line, stop_at] = alnum_count(self.lines[line], stop_at)
        return self._alnum[line, stop_at]


class PageText(Lines):
    """A page's lines and the parser's.

    `lines` are the file's lines (front matter blanked), the source of chunk text;
    `source_lines` are the same lines without admonition markers and template tags, the
    input of the parser. Both have one entry per line of the file.
    """

    def __init__(self, lines: list[str], source_lines: list[str]):
        super().__init__(lines)
        self.source_lines = source_lines
        self.source = "\n".join(source_lines)
        self.line_offsets = line_offsets(source_lines)


class Page(Lines):
    """The block tokens of a piece of a page (lines first..after - 1, pieces.py; the whole
    page when it is small) and lookups over them, in the page's line numbers."""

    def __init__(self, text: PageText, first: int, after: int, env: dict[str, Any]):
        self.lines, self.size_offsets, self._alnum = text.lines, text.size_offsets, text._alnum
        self.source_lines, self.source = text.source_lines, text.source
        self.line_offsets = text.line_offsets
        self.env = env
        whole = first == 0 and after == len(text.source_lines)
        piece = text.source if whole else "\n".join(text.source_lines[first:after])
        self.tokens = _BLOCK_PARSER.parse(piece, env)
        if first:
            for token in self.tokens:
                if token.map:
                    token.map = [token.map[0] + first, token.map[1] + first]
        self.closing = _closing_indexes(self.tokens)
        self.top_level = [
            i for i, t in enumerate(self.tokens) if t.level == 0 and t.nesting != -1 and t.map
        ]
        self.block_ends = [lines_of(self.tokens[i])[1] for i in self.top_level]

        self._children: dict[int, list[Unit]] = {}
        self._children_ends: dict[int, list[int]] = {}
        self._content_lines: dict[int, list[str]] = {}

    def block_unit(self, index: int) -> Unit:
        token = self.tokens[index]
        first, after_last = lines_of(token)
        return Unit(first, after_last - 1, index, heading=token.type == "heading_open")

    def children(self, index: int) -> list[Unit]:
        """The blocks directly inside the container token at index (cached)."""
        if index not in self._children:
            parent = self.tokens[index]
            self._children[index] = [
                self.block_unit(child)
                for child in range(index + 1, self.closing[index])
                if (token := self.tokens[child]).level == parent.level + 1
                and token.nesting != -1
                and token.map
            ]
            self._children_ends[index] = [unit.end for unit in self._children[index]]
        return self._children[index]

    def children_overlapping(self, index: int, start: int, end: int) -> Iterator[Unit]:
        children = self.children(index)
        for position in range(bisect.bisect_left(self._children_ends[index], start), len(children)):
            if children[position].start > end:
                break
            yield children[position]

    def content_lines(self, index: int) -> list[str]:
        """The lines of a token's content (cached: each piece of a long block asks)."""
        if index not in self._content_lines:
            self._content_lines[index] = self.tokens[index].content.split("\n")
        return self._content_lines[index]

    def block_kind_at(self, line: int) -> str:
        """The type of the innermost block that holds the line ("" if none)."""
        position = bisect.bisect_right(self.block_ends, line)
        if position == len(self.top_level):
            return ""
        index = self.top_level[position]
        while lines_of(self.tokens[index])[0] <= line:
            if self.tokens[index].type not in CONTAINERS:
                return self.tokens[index].type
            inner = next(self.children_overlapping(index, line, line), None)
            if inner is None:
                return self.tokens[index].type
            index = inner.token
        return ""


@dataclass(frozen=True, slots=True)
class Section:
    start: int
    end: int
    headings: list[str]
    own_heading: str  # text of the heading or summary it starts with ("" if none)


@dataclass(frozen=True, slots=True)
class Span:
    """Lines start..end (0-based, inclusive), or with columns the part [begin, stop) of the
    line start (== end)."""

    start: int
    end: int
    columns: tuple[int, int] | None = None


@dataclass(slots=True)
class Piece:
    """A span of a section on its way to becoming a chunk."""

    start: int
    end: int
    columns: tuple[int, int] | None
    embed_parts: list[str]
    alnum: int  # alphanumeric characters of its embed text, counted up to min_alnum
    stranded: bool = False  # residue the bound kept from joining a neighbour

    def fits_with(self, following: Piece, page: Lines, limit: int) -> bool:
        """Whether the following piece can join this one: whole lines within the limit, or
        adjacent parts of one line within the limit."""
        if self.columns is None and following.columns is None:
            return page.size(self.start, following.end) <= limit
        if self.columns is None or following.columns is None or self.end != following.start:
            return False
        return self.columns[1] == following.columns[0] and (
            following.columns[1] - self.columns[0] <= limit
        )

    def absorb(self, following: Piece) -> None:
        self.end = following.end
        if self.columns is not None and following.columns is not None:
            self.columns = (self.columns[0], following.columns[1])
        self.embed_parts.extend(following.embed_parts)
        self.alnum += following.alnum


@dataclass(frozen=True, slots=True)
class Unit:
    start: int
    end: int
    token: int  # index in the page's tokens, or LINES
    heading: bool = False
    columns: tuple[int, int] | None = None  # a part [begin, stop) of the line start (== end)
