"""The JSON shapes the tools answer with: page summaries, whole pages, chunks and sources.

A page is served as it was indexed: its text is reassembled from its chunks (the index
keeps no other copy), line-aligned with the file at the indexed commit.
"""

from __future__ import annotations

import re
from typing import Any

from docdex.index_format.model import ChunkRecord, ServedPage, SourceState
from docdex.index_format.reassembly import reassemble

from .snapshot import Snapshot

CHUNK_ID = re.compile(r"#chunk(\d+)$")
TEXT_KIND = (
    "reassembled from the indexed chunks, line-aligned with the file (lines outside every "
    "chunk, such as front matter, are blank)"
)


def page_summary(page: ServedPage) -> dict[str, Any]:
    return {
        "doc_id": page.doc_id,
        "source": page.source,
        "path": page.path,
        "title": page.title,
        "description": page.description,
        "tags": list(page.tags),
        "created": page.created,
        "modified": page.modified,
        "commit": page.commit,
        "chunks": len(page.chunks),
    }


def page_chunks(snapshot: Snapshot, page: ServedPage) -> list[ChunkRecord]:
    by_id = {seg.id: seg for seg in snapshot.segments}
    out = []
    for ref in page.chunks:
        seg = by_id.get(ref.segment)
        if seg is not None and 0 <= ref.index < len(seg.chunks):
            out.append(seg.chunks[ref.index])
    return out


def page_document(snapshot: Snapshot, page: ServedPage) -> dict[str, Any]:
    chunks = page_chunks(snapshot, page)
    return {
        "kind": "page",
        **page_summary(page),
        "size": page.size,
        "index_version": snapshot.version,
        "text": reassemble(chunks),
        "text_kind": TEXT_KIND,
        "sections": [
            {
                "chunk_id": c.chunk_id,
                "heading": " › ".join(c.headings),
                "start_line": c.start_line,
                "end_line": c.end_line,
            }
            for c in chunks
        ],
    }


def chunk_document(snapshot: Snapshot, chunk: ChunkRecord) -> dict[str, Any]:
    page = snapshot.pages.get(chunk.doc_id)
    number = int(CHUNK_ID.search(chunk.chunk_id).group(1))  # type: ignore[union-attr]

    def neighbour(n: int) -> str | None:
        chunk_id = f"{chunk.doc_id}#chunk{n}"
        return chunk_id if n >= 0 and snapshot.chunk(chunk_id) is not None else None

    return {
        "kind": "chunk",
        "chunk_id": chunk.chunk_id,
        "doc_id": chunk.doc_id,
        "source": chunk.source,
        "path": chunk.path,
        "title": chunk.title,
        "headings": list(chunk.headings),
        "heading": " › ".join(chunk.headings),
        "text": chunk.text,
        "start_line": chunk.start_line,
        "end_line": chunk.end_line,
        "commit": page.commit if page else "",
        "previous_chunk_id": neighbour(number - 1),
        "next_chunk_id": neighbour(number + 1),
        "index_version": snapshot.version,
    }


def source_info(state: SourceState) -> dict[str, Any]:
    return {
        "name": state.name,
        "indexed": bool(state.commit),
        "kind": state.kind,
        "branch": state.branch,
        "commit": state.commit,
        "files": state.files,
        "chunks": state.chunks,
        "indexed_at": state.indexed_at,
        "last_error": state.last_error,
        "problems": len(state.problems),
    }
