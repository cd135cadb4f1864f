"""The Tantivy side of a new version: copy-on-write from the previous version's directory."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path

import tantivy

from docdex.index_format.layout import DataDir, publish_dir
from docdex.index_format.model import ChunkRecord
from docdex.index_format.text import identifier_terms, text_schema

WRITER_HEAP_BYTES = 64_000_000
_LOCK_PREFIX = ".tantivy-"


def link_or_copy_tree(src: Path, dst: Path) -> None:
    """Hard-link every index file of `src` into `dst` (Tantivy never rewrites a file in
    place, so the source stays intact); copy where the filesystem refuses links."""
    dst.mkdir(parents=True)
    for entry in os.scandir(src):
        if entry.name.startswith(_LOCK_PREFIX) or not entry.is_file():
            continue
        target = dst / entry.name
        try:
            os.link(entry.path, target)
        except OSError:
            shutil.copy2(entry.path, target)


def chunk_document(chunk: ChunkRecord, embed_text: str) -> tantivy.Document:
    doc = tantivy.Document()
    doc.add_text("chunk_id", chunk.chunk_id)
    doc.add_text("doc_id", chunk.doc_id)
    doc.add_text("source", chunk.source)
    doc.add_text("path", chunk.path)
    doc.add_text("title", chunk.title)
    doc.add_text("headings", " ".join(chunk.headings[1:]))
    doc.add_text("body", embed_text)
    for term in identifier_terms(chunk.text):
        doc.add_text("ident", term)
    return doc


def write_text_index(
    data: DataDir,
    name: str,
    previous: str | None,
    deleted_pages: Iterable[str],
    deleted_sources: Iterable[str],
    added: Iterable[tuple[ChunkRecord, str]],
) -> None:
    """Build text/<name> from text/<previous> minus deleted pages/sources plus `added`."""
    tmp = data.text / f".tmp-{name}"
    shutil.rmtree(tmp, ignore_errors=True)
    if previous:
        link_or_copy_tree(data.text_index(previous), tmp)
    else:
        tmp.mkdir(parents=True)
    index = tantivy.Index(text_schema(), path=str(tmp), reuse=bool(previous))
    writer = index.writer(WRITER_HEAP_BYTES, 1)
    for doc_id in deleted_pages:
        writer.delete_documents_by_term("doc_id", doc_id)
    for source in deleted_sources:
        writer.delete_documents_by_term("source", source)
    for chunk, embed_text in added:
        writer.add_document(chunk_document(chunk, embed_text))
    writer.commit()
    writer.wait_merging_threads()
    del writer, index
    for lock in tmp.glob(_LOCK_PREFIX + "*"):
        lock.unlink()
    publish_dir(tmp, data.text_index(name))
