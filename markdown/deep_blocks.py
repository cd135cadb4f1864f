"""Blocks nested deeper than markdown-it's limit, kept rather than lost.

markdown-it stops parsing blocks past `maxNesting` (a list about ten levels deep): every
line after such a block would be skipped, headings included. `DeepBlocks` is markdown-it's
block parser, except there: the too-deep lines, up to the first line indented less than
their container's content (or the container's end), go to `emit`, and the page goes on after
them. The chunker makes them one paragraph of text, the page view preformatted text; both
need the same lines, so the rule lives here (FORMAT.md, "Page text"). Imported only by the
code that parses pages: markdown-it's import is not for a server's start-up.
"""

from __future__ import annotations

from markdown_it import MarkdownIt
from markdown_it.parser_block import ParserBlock
from markdown_it.rules_block import StateBlock


class DeepBlocks(ParserBlock):
    """The block parser of `parser` with too-deep blocks handed to `emit`."""

    def __init__(self, parser: MarkdownIt):
        super().__init__()
        self.ruler = parser.block.ruler  # the rules the preset enabled

    def tokenize(self, state: StateBlock, startLine: int, endLine: int) -> None:
        if state.level < state.md.options.maxNesting:
            super().tokenize(state, startLine, endLine)
            return
        state.line = first = state.skipEmptyLines(startLine)
        end = first
        while end < endLine and _inside(state, end):
            end += 1
        last = end
        while last > first and state.isEmpty(last - 1):
            last -= 1
        if last > first:
            self.emit(state, first, last)
            state.line = end

    def emit(self, state: StateBlock, first: int, last: int) -> None:
        """Push the tokens of lines first..last - 1 (0-based), the too-deep block."""
        raise NotImplementedError


def _inside(state: StateBlock, line: int) -> bool:
    """Whether a line belongs to the too-deep block: empty, indented to its container's
    content, or a blockquote's lazy continuation (which markdown-it marks with a negative
    indent). Stopping at a lazy line would make every deeper `>` line open a blockquote
    that scans the rest of its container again: quadratic in the page's lines."""
    return state.isEmpty(line) or state.sCount[line] >= state.blkIndent or state.sCount[line] < 0


class DeepBlocksAsText(DeepBlocks):
    """Too-deep blocks as one paragraph (the chunker: their words stay text)."""

    def emit(self, state: StateBlock, first: int, last: int) -> None:
        state.push("paragraph_open", "p", 1).map = [first, last]
        inline = state.push("inline", "", 0)
        inline.map, inline.children = [first, last], []
        inline.content = state.getLines(first, last, state.blkIndent, False).strip()
        state.push("paragraph_close", "p", -1)


class DeepBlocksAsCode(DeepBlocks):
    """Too-deep blocks as preformatted text (the page view: shown as written)."""

    def emit(self, state: StateBlock, first: int, last: int) -> None:
        token = state.push("code_block", "code", 0)
        token.content = state.getLines(first, last, state.blkIndent, True).rstrip("\n") + "\n"
        token.map = [first, last]
