"""A changed file as records: its page and its chunks, each chunk with the text its vectors
are embedded from and the content hash that lets a later run copy them."""

from __future__ import annotations

import hashlib

import msgspec

from docdex.index_format.config import (
    Settings,
    SourceConfig,
)
from docdex.index_format.records import (
    ChunkRecord,
    EmbedderInfo,
    FileProblem,
    PageRecord,
    chunk_id,
)
from docdex.indexer.chunking import include_syntax
from docdex.indexer.chunking.page_parser import page_lead, parse_page
from docdex.indexer.git.diffs import FileEntry
from docdex.indexer.git.history import PageDates
from docdex.model.windows import embed_input

from ..context import RunContext
from ..storage.stream import PendingChunk, PendingPage


def parse_file(
    ctx: RunContext,
    config: SourceConfig,
    key: str,
    entry: FileEntry,
    content: str,
    dates: PageDates | None,
    read_path: include_syntax.PathReader | None = None,
) -> PendingPage | FileProblem:
    """The file's page and chunk records for the manifest entry `key` (one ref of the
    source `config`); a draft the source does not index is a problem instead."""
    parsed = parse_page(content, entry.path, ctx.settings.chunker(), read_path)
    if parsed.draft and not config.drafts:
        return FileProblem(entry.path, include_syntax.DRAFT_SKIPPED)
    source = key
    doc_id = f"{source}:{entry.path}"
    chunks = []
    for n, chunk in enumerate(parsed.chunks):
        text_in = embed_input(chunk.headings, chunk.embed_text)
        record = ChunkRecord(
            chunk_id=chunk_id(doc_id, n),
            doc_id=doc_id,
            source=source,
            path=entry.path,
            title=parsed.title,
            headings=chunk.headings,
            text=chunk.text,
            start_line=chunk.start_line,
            end_line=chunk.end_line,
            content_hash=_content_hash(ctx.model, text_in),
            window_start=0,
            window_count=0,
            includes=chunk.includes,
        )
        body = page_lead(parsed) + chunk.embed_text if n == 0 else chunk.embed_text
        chunks.append(PendingChunk(record, text_in, body))
    page = PageRecord(
        doc_id=doc_id,
        source=source,
        path=entry.path,
        blob=entry.blob,
        title=parsed.title,
        description=parsed.description,
        tags=parsed.tags,
        created=dates.created if dates else "",
        modified=dates.modified if dates else "",
        commit=dates.commit if dates else "",
        size=len(content.encode("utf-8")),
        chunks=[],
        front_matter=parsed.front_matter,
    )
    return PendingPage(page, chunks)


def config_hash(source: SourceConfig, settings: Settings, ref: str) -> str:
    """`ref`: the default ref's `branch` setting, or another ref's full name (`refs` itself
    is left out, so changing it never makes the default ref read every file again)."""
    parts: list[object] = [source.location, ref, source.include, source.exclude]
    parts.append(settings.max_file_bytes)
    if source.drafts:  # keeping drafts re-reads every page (left out when off: hashes stay)
        parts.append("drafts")
    if settings.late_interaction:  # turning it on re-reads every page (so chunks get tokens)
        parts.append("late_interaction")
    key = msgspec.json.encode(parts)
    return hashlib.sha256(key).hexdigest()[:16]


def _content_hash(info: EmbedderInfo, text: str) -> str:
    key = f"{info.id}\0{info.window_tokens}\0{info.window_overlap}\0{text}"
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]
