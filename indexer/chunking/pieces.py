"""A large page's lines as pieces that markdown-it parses one at a time.

markdown-it holds a token object per block of the text it is given, and some of its rules
rescan what follows them: given a whole heading-dense page of 2 MB it built half a million
tokens (about 400 MB). The chunker gives it at most PIECE_CHARS at once (a page under that
size is one piece, parsed as before), so its memory is bounded by the piece and its time is
linear in the page.

A piece ends where a block cannot continue, before a heading if it can (so that a section's
heading stays with what follows it), and never right after a heading: before a line that
starts in the first column after a blank line, outside a fenced code block and a raw HTML
block (`<pre>`, `<script>`, `<style>`, `<textarea>`, a comment), which may hold blank
lines. When no such boundary lies within PIECE_CHARS (a table, a blockquote or a list with
no blank line), the piece ends at the last line outside a fence or raw HTML block instead; a
fence or raw block longer than a piece (cheap to parse: one token) is never cut.
"""

from __future__ import annotations

import re
from itertools import accumulate

PIECE_CHARS = 64_000  # the most markdown-it is given at once, in characters of the page

_ATX = re.compile(r" {0,3}#{1,6}(\s|$)")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_RAW_OPEN = re.compile(r" {0,3}<(?:(script|pre|style|textarea)(?=[\s>]|$)|(!--))", re.IGNORECASE)


def line_offsets(lines: list[str]) -> list[int]:
    """Where each line starts in the lines joined by newlines (one extra entry at the end)."""
    return list(accumulate([len(line) + 1 for line in lines], initial=0))


def piece_bounds(lines: list[str], piece_chars: int = PIECE_CHARS) -> list[tuple[int, int]]:
    """(first line, line after the last) of each piece of `lines`, 0-based, in order,
    covering them all; one piece when they fit in `piece_chars`."""
    if sum(map(len, lines)) + len(lines) <= piece_chars:  # with a newline after each line
        return [(0, len(lines))]
    offsets = line_offsets(lines)
    bounds: list[tuple[int, int]] = []
    start = 0
    # the last boundaries seen: a section's, a block's, a heading's with no blank line
    # before it, a line's; never a line right after a heading (it would lose its section)
    heading = safe = bare = forced = -1
    fence, raw = "", ""  # the open fence's marker, the open raw block's closing tag
    after_heading = False  # the last line with text before this one is a heading
    for index, line in enumerate(lines):
        if index > start and not fence and not raw:
            blank_before = not lines[index - 1].strip()
            if line.startswith("#") and _ATX.match(line) is not None:  # not in a list item
                heading, bare = (index, bare) if blank_before else (heading, index)
            if not after_heading:
                forced = index
                if blank_before and line[:1] not in ("", " ", "\t"):
                    safe = index
        if line.strip() and not fence and not raw:
            after_heading = _ATX.match(line) is not None
        if offsets[index + 1] - offsets[start] > piece_chars:
            cut = next((c for c in (heading, safe, bare, forced) if c > start), -1)
            if cut > start:
                bounds.append((start, cut))
                start, heading, safe, bare, forced = cut, -1, -1, -1, -1
        fence, raw = _block_state(line, fence, raw)
    bounds.append((start, len(lines)))
    return bounds


def _block_state(line: str, fence: str, raw: str) -> tuple[str, str]:
    """The open fence and raw HTML block after `line`."""
    if fence:
        match = _FENCE.match(line)
        closes = match is not None and match[1][0] == fence[0] and len(match[1]) >= len(fence)
        return ("" if closes and match is not None and not match[2].strip() else fence), ""
    if raw:
        return "", ("" if raw in line.lower() else raw)
    fenced = _FENCE.match(line)
    if fenced is not None and not (fenced[1][0] == "`" and "`" in fenced[2]):
        return fenced[1], ""
    opened = _RAW_OPEN.match(line)
    if opened is None:
        return "", ""
    closing = f"</{opened[1].lower()}>" if opened[1] else "-->"
    after = line[opened.end() :].lower()
    return "", ("" if closing in after else closing)
