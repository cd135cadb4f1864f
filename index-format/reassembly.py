"""A page's text rebuilt from its chunks: the index keeps no other copy of a page.

The chunker (indexer/chunking/page_parser.py) and the server (server/answers/documents.py) share
this rule, so it lives in the format: line N of the result is line N of the file. A page's
chunks hold every line of it that is not empty, its front matter's aside (FORMAT.md, "Page
text"), so the result is the page's text.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Protocol


class LineSpan(Protocol):
    """A chunk as reassembly reads it (a ChunkRecord, or the chunker's own)."""

    @property
    def text(self) -> str: ...

    @property
    def start_line(self) -> int: ...

    @property
    def end_line(self) -> int: ...


def served_text(decoded: str) -> str:
    """What `reassemble` gives back for a file whose decoded text is `decoded`: line breaks
    read as LF, a leading BOM dropped, no empty lines at the end (FORMAT.md, "Page text")."""
    text = decoded.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    return text.rstrip("\n")


def reassemble(chunks: Sequence[LineSpan], front_matter: str = "") -> str:
    """The page's markdown rebuilt from its chunks and its front matter (the page record's
    `front_matter`, which no chunk holds), line-aligned with the file: line N of the result
    is line N of the file; the lines no chunk covers are empty, and the result ends with
    the last chunk.

    A line too long for one chunk is cut into parts: consecutive chunks that start on the
    line the chunk before them ends on. Joined in page order, they give the line back."""
    lines: list[str] = front_matter.split("\n") if front_matter else []
    for start_line, text in _parts_joined(sorted(chunks, key=lambda c: c.start_line)):
        first = start_line - 1
        if first > len(lines):
            lines += [""] * (first - len(lines))
        lines += text.split("\n")[len(lines) - first :]
    return "\n".join(lines)


def _parts_joined(chunks: Iterable[LineSpan]) -> Iterator[tuple[int, str]]:
    """(start line, text) of each chunk, consecutive chunks that share a line joined."""
    run: list[str] = []
    start_line = end_line = 0
    for chunk in chunks:
        if run and chunk.start_line == end_line:
            run.append(chunk.text)
        else:
            if run:
                yield start_line, "".join(run)
            run, start_line = [chunk.text], chunk.start_line
        end_line = chunk.end_line
    if run:
        yield start_line, "".join(run)
