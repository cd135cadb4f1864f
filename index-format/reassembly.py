"""A page's text rebuilt from its chunks: the index keeps no other copy of a page.

The chunker (indexer/chunking/markdown.py) and the server (server/answers/pages.py) share
this rule, so it lives in the format: line N of the result is line N of the file wherever a
chunk covers it.
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


def reassemble(chunks: Sequence[LineSpan]) -> str:
    """The page's markdown rebuilt from its chunks, line-aligned with the file: line N of the
    result is line N of the file wherever a chunk covers it; other lines (front matter, blank
    separators, dropped near-empty fragments) are empty.

    A line too long for one chunk is cut into parts: consecutive chunks that start on the
    line the chunk before them ends on. Joined in page order, they give the line back."""
    lines: list[str] = []
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
