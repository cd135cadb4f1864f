"""Includes resolved: the text each include line of a page brings in (another file of the
repository: a page parsed as a page of its own, a code file as its lines) joins the embed
text of the chunk holding the line, and the chunk records what the line stands for in the
text a hit shows (`Inclusion`: the file's text, bounded, and its path). What an include
line is, and where its file is looked for: include_syntax.py."""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec

from docdex.index_format.records import Chunk, ChunkerSettings, Inclusion, ParsedPage

from . import include_syntax
from .include_syntax import FASTAPI, MARKER, IncludeLine, PathReader

PageParser = Callable[[str, str, ChunkerSettings, "Includes"], ParsedPage]

_PAGE_SUFFIXES = (".md", ".markdown", ".mdx", ".txt", "")  # included as markdown
_CODE_NAMES = {".py": "python", ".js": "javascript", ".ts": "typescript", ".sh": "bash"}


@dataclass(slots=True)
class Includes:
    """What a page's includes may still read: the reader, how deep, how many files; and the
    parser that reads them."""

    read: PathReader | None
    parse: PageParser  # an included file is parsed as a page of its own
    depth: int = 0
    left: int = include_syntax.MAX_INCLUDES
    # The files the page read, by path: a file is read (and embedded) once per page, and a
    # later line naming it again (another of its line ranges) shows it from here.
    seen: dict[str, str] = field(default_factory=dict)


class _Resolved(msgspec.Struct, frozen=True):
    embed_text: str  # what the including chunk embeds besides its own text
    shown: Inclusion


def with_includes(
    chunks: list[Chunk],
    include_at: dict[int, IncludeLine],
    lines: list[str],
    path: str,
    settings: ChunkerSettings,
    inc: Includes,
    title: str,
) -> list[Chunk]:
    """The chunks with each resolved include's text added to the embed text of the chunk
    holding its line (a line no chunk holds becomes a chunk of its own), and what the line
    shows in a hit recorded on that chunk (a marker line's: nothing)."""
    out = list(chunks)
    for index, include in sorted(include_at.items()):
        line = index + 1
        resolved = _resolved(include, line, path, settings, inc)
        if resolved is None:
            continue
        at = next((i for i, c in enumerate(out) if c.start_line <= line <= c.end_line), -1)
        if at >= 0:
            out[at] = _with(out[at], resolved)
        else:
            before = [c for c in out if c.end_line < line]
            headings = before[-1].headings if before else [title]
            own = Chunk(list(headings), lines[index], "", line, line)
            out.append(_with(own, resolved))
            out.sort(key=lambda c: (c.start_line, c.end_line))
    return out


def _with(chunk: Chunk, resolved: _Resolved) -> Chunk:
    embed = "\n".join(t for t in (chunk.embed_text, resolved.embed_text) if t)
    return msgspec.structs.replace(
        chunk, embed_text=embed, includes=[*chunk.includes, resolved.shown]
    )


def _resolved(
    include: IncludeLine, line: int, path: str, settings: ChunkerSettings, inc: Includes
) -> _Resolved | None:
    if include.kind == MARKER:
        return _Resolved("", Inclusion(line, ""))
    if inc.read is None or inc.depth >= include_syntax.MAX_DEPTH or inc.left <= 0:
        return None
    for candidate in include_syntax.candidates(include.kind, include.written, path):
        if candidate == path:
            continue
        again = candidate in inc.seen
        text = inc.seen.get(candidate) if again else inc.read(candidate)
        if text is None:
            continue
        inc.left -= 0 if again else 1
        inc.seen[candidate] = text
        text = include_syntax.selected_lines(text, include.lines)
        suffix = posixpath.splitext(candidate)[1].lower()
        bounded = cut_at_line(text, include_syntax.SHOWN_CHARS)
        more = text.count("\n", len(bounded)) + (not text.endswith("\n")) if bounded != text else 0
        shown = Inclusion(line, candidate, bounded, _fence(include.kind, suffix), more)
        if again or suffix not in _PAGE_SUFFIXES:  # code: its lines are its words
            return _Resolved("" if again else text, shown)
        nested = Includes(inc.read, inc.parse, inc.depth + 1, inc.left, inc.seen)
        # an included snippet is often one short line: keep all of its text
        every_piece = msgspec.structs.replace(settings, min_alnum=1)
        parsed = inc.parse(text, candidate, every_piece, nested)
        inc.left = nested.left
        embed = "\n".join(chunk.embed_text for chunk in parsed.chunks if chunk.embed_text)
        return _Resolved(embed, shown)
    return None


def _fence(kind: str, suffix: str) -> str:
    """The language a FastAPI include is shown fenced in (its hook writes the code block);
    "" for the others, whose pages write the fence around the line themselves."""
    if kind != FASTAPI:
        return ""
    return _CODE_NAMES.get(suffix, suffix.lstrip(".") or "text")


def cut_at_line(text: str, limit: int) -> str:
    """At most `limit` characters of `text`, cut after a line (else anywhere)."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    return head[: head.rfind("\n") + 1] if "\n" in head else head
