"""Includes resolved: the text each include line of a page brings in (another file of the
repository, parsed as a page of its own) joins the embed text of the chunk holding the line.
What an include line is, and where its file is looked for: include_syntax.py."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import msgspec

from docdex.index_format.records import Chunk, ChunkerSettings, ParsedPage

from . import include_syntax
from .include_syntax import PathReader

PageParser = Callable[[str, str, ChunkerSettings, "Includes"], ParsedPage]


@dataclass(slots=True)
class Includes:
    """What a page's includes may still read: the reader, how deep, how many files; and the
    parser that reads them."""

    read: PathReader | None
    parse: PageParser  # an included file is parsed as a page of its own
    depth: int = 0
    left: int = include_syntax.MAX_INCLUDES


def with_includes(
    chunks: list[Chunk],
    include_at: dict[int, tuple[str, list[str]]],
    lines: list[str],
    path: str,
    settings: ChunkerSettings,
    inc: Includes,
    title: str,
) -> list[Chunk]:
    """The chunks with each resolved include's text added to the embed text of the chunk
    holding its line (a line no chunk holds becomes a chunk of its own)."""
    out = list(chunks)
    for index, (kind, written) in sorted(include_at.items()):
        text = _included_text(kind, written[0], path, settings, inc)
        if not text:
            continue
        line = index + 1
        at = next((i for i, c in enumerate(out) if c.start_line <= line <= c.end_line), -1)
        if at >= 0:
            chunk = out[at]
            out[at] = msgspec.structs.replace(chunk, embed_text=f"{chunk.embed_text}\n{text}")
            continue
        before = [c for c in out if c.end_line < line]
        headings = before[-1].headings if before else [title]
        out.append(Chunk(list(headings), lines[index], text, line, line))
        out.sort(key=lambda c: (c.start_line, c.end_line))
    return out


def _included_text(
    kind: str, written: str, path: str, settings: ChunkerSettings, inc: Includes
) -> str:
    if inc.read is None or inc.depth >= include_syntax.MAX_DEPTH or inc.left <= 0:
        return ""
    for candidate in include_syntax.candidates(kind, written, path):
        if candidate == path:
            continue
        text = inc.read(candidate)
        if text is None:
            continue
        inc.left -= 1
        nested = Includes(inc.read, inc.parse, inc.depth + 1, inc.left)
        # an included snippet is often one short line: keep all of its text
        every_piece = msgspec.structs.replace(settings, min_alnum=1)
        parsed = inc.parse(text, candidate, every_piece, nested)
        inc.left = nested.left
        return "\n".join(chunk.embed_text for chunk in parsed.chunks if chunk.embed_text)
    return ""
