"""The answers about pages, chunks and sources, built from one leased version.

A page is served as it was indexed: its text is reassembled from its chunks (the index
keeps no other copy), line-aligned with the file at the indexed commit. Metadata that a
file controls (titles, headings, descriptions, tags) is clipped, so that no page can make
an answer large; text is paged (cursors.py).
"""

from __future__ import annotations

from typing import Any

import msgspec

from docdex.history import PageVersion
from docdex.index_format.reassembly import reassemble
from docdex.index_format.records import CHUNK_ID, ChunkRecord, ServedPage, SourceState, chunk_id
from docdex.server.engine import (
    TITLE_CHARS,
    VersionReader,
    breadcrumb,
    clip,
    clip_headings,
    resource_uri,
)

from .cursors import Cursor, Lines, Window, decode_cursor, encode_cursor
from .freshness import Freshness
from .shapes import Document, PageSummary, Section, SourceInfo

TEXT_KIND = (
    "the file's text, rebuilt from the indexed chunks and front matter, line for line (empty "
    "lines at its end left out)"
)
GIT_TEXT_KIND = "the file's text read from the repository's history (not the index) at commit"
DESCRIPTION_CHARS = 500
MAX_TAGS = 20
TAG_CHARS = 80
ERROR_CHARS = 500


def page_summary(page: ServedPage, ref: str = "") -> PageSummary:
    return PageSummary(
        ref=ref,
        doc_id=page.doc_id,
        source=page.source,
        path=page.path,
        uri=resource_uri(page.source, page.path),
        title=clip(page.title, TITLE_CHARS),
        description=clip(page.description, DESCRIPTION_CHARS),
        tags=[clip(tag, TAG_CHARS) for tag in page.tags[:MAX_TAGS]],
        created=page.created,
        modified=page.modified,
        commit=page.commit,
        chunks=len(page.chunks),
        dates_note=page.dates_note,
    )


def page_text(index: VersionReader, page: ServedPage) -> str:
    return reassemble(index.page_chunks(page), page.front_matter)


class Paging(msgspec.Struct, frozen=True):
    """What part of a text get_document answers with: lines, or a cursor, and a budget."""

    max_chars: int
    start_line: int = 0  # 0: from the first line
    end_line: int = 0  # 0: to the last line
    cursor: str = ""  # a next_cursor: continue there (the lines are then the cursor's)

    def window(self, lines: Lines, doc_id: str, content: str) -> tuple[Window, str]:
        """The window to answer with and the cursor that continues it ("" when none);
        `content` is the page's blob sha, which a cursor must have been made on."""
        if self.cursor:
            where = decode_cursor(self.cursor, doc_id, content, len(lines.text))
            begin, stop = where.offset, where.stop
        else:
            begin, stop = lines.span(self.start_line, self.end_line)
        window = lines.window(begin, stop, self.max_chars)
        if window.next_offset is None:
            return window, ""
        return window, encode_cursor(Cursor(doc_id, content, window.next_offset, stop))


def page_document(index: VersionReader, page: ServedPage, paging: Paging) -> Document:
    """A window of the page; its text and the list of the sections it overlaps share
    `max_chars` (the text keeps at least half), and sections past it are left out."""
    chunks = index.page_chunks(page)
    summary = page_summary(page, index.ref_of(page.source))
    lines = Lines(reassemble(chunks, page.front_matter))

    def window(budget: int) -> tuple[Document, list[Section]]:
        document = _window(
            "page",
            index,
            page,
            page,
            lines,
            msgspec.structs.replace(paging, max_chars=budget),
            description=summary.description,
            tags=summary.tags,
            created=page.created,
            modified=page.modified,
            size=page.size,
            chunks=len(chunks),
            text_kind=TEXT_KIND,
        )
        first, last = document.start_line, document.end_line
        sections = [
            Section(c.chunk_id, breadcrumb(c.headings), c.start_line, c.end_line)
            for c in chunks
            if c.end_line >= first and c.start_line <= last
        ]
        return document, sections

    document, sections = window(paging.max_chars)
    listed = sum(map(_section_chars, sections))
    if len(document.text) + listed > paging.max_chars:
        document, sections = window(max(paging.max_chars - listed, paging.max_chars // 2))
    kept = _within(sections, paging.max_chars - len(document.text))
    return msgspec.structs.replace(document, sections=kept, omitted=len(sections) - len(kept))


def _section_chars(section: Section) -> int:
    """About what a section takes in the answer's JSON."""
    return len(section.chunk_id) + len(section.heading) + 60


def _within(sections: list[Section], budget: int) -> list[Section]:
    kept = []
    for section in sections:
        budget -= _section_chars(section)
        if budget < 0:
            break
        kept.append(section)
    return kept


def chunk_document(index: VersionReader, chunk: ChunkRecord, paging: Paging) -> Document:
    page = index.pages.get(chunk.doc_id)
    found = CHUNK_ID.search(chunk.chunk_id)
    assert found is not None, chunk.chunk_id  # every chunk id ends in #chunkN
    number = int(found.group(1))

    def neighbour(n: int) -> str | None:
        neighbour_id = chunk_id(chunk.doc_id, n)
        return neighbour_id if n >= 0 and index.chunk(neighbour_id) is not None else None

    return _window(
        "chunk",
        index,
        chunk,
        page,
        Lines(chunk.text, first_line=chunk.start_line),
        paging,
        chunk_id=chunk.chunk_id,
        headings=clip_headings(chunk.headings),
        heading=breadcrumb(chunk.headings),
        previous_chunk_id=neighbour(number - 1),
        next_chunk_id=neighbour(number + 1),
    )


def _window(
    kind: str,
    index: VersionReader,
    of: ServedPage | ChunkRecord,
    page: ServedPage | None,
    lines: Lines,
    paging: Paging,
    **own: Any,
) -> Document:
    """The Document for the window `paging` picks in `lines`, the text of `of`, a part of
    `page` (whose commit it answers with, and whose blob its cursor is made on)."""
    window_of = of.chunk_id if isinstance(of, ChunkRecord) else of.doc_id
    commit = page.commit if page else ""
    window, cursor = paging.window(lines, window_of, page.blob if page else "")
    return Document(
        kind=kind,
        doc_id=of.doc_id,
        source=of.source,
        path=of.path,
        uri=resource_uri(of.source, of.path),
        title=clip(of.title, TITLE_CHARS),
        commit=commit,
        **_window_fields(window, lines, cursor),
        index_version=index.version,
        ref=index.ref_of(of.source),
        **own,
    )


def _window_fields(window: Window, lines: Lines, cursor: str) -> dict[str, Any]:
    """What every Document says of its window: its text, its lines, and how to read on."""
    return {
        "text": window.text,
        "start_line": window.start_line,
        "end_line": window.end_line,
        "last_line": lines.last_line,
        "truncated": bool(cursor),
        "next_cursor": cursor,
    }


def version_document(
    index: VersionReader, doc_id: str, version: PageVersion, ref: str, paging: Paging
) -> Document:
    """A window of a page as of a commit, read from git (`version`), not from the index:
    its whole file, with the same windows and cursors as an indexed page's."""
    lines = Lines(version.text)
    window, cursor = paging.window(lines, doc_id, version.blob)
    source = doc_id.partition(":")[0]
    return Document(
        kind="page",
        doc_id=doc_id,
        source=source,
        path=version.path,
        uri=resource_uri(source, version.path),
        title="",
        commit=version.at.commit,
        **_window_fields(window, lines, cursor),
        index_version=index.version,
        ref=ref,
        size=len(version.text.encode("utf-8", "surrogateescape")),
        text_kind=f"{GIT_TEXT_KIND} {version.at.commit[:12]}",
    )


def source_info(state: SourceState, description: str, fresh: Freshness) -> SourceInfo:
    return SourceInfo(
        name=state.name,
        indexed=bool(state.commit or state.reading),  # being read: searchable, in part
        description=description,
        ref=state.ref or state.branch,
        ref_kind=state.ref_kind,
        tip=fresh.tip,
        behind=fresh.behind,
        behind_since=fresh.behind_since,
        queued=fresh.queued,
        stale=fresh.stale,
        kind=state.kind,
        branch=state.branch,
        commit=state.commit,
        files=state.files,
        chunks=state.chunks,
        indexed_at=state.indexed_at,
        last_error=clip(state.last_error, ERROR_CHARS),
        failed=bool(state.last_error),
        failed_since=state.failed_since,
        problems=len(state.problems),
    )
