"""The Tantivy side of a new version: copy-on-write from the previous version's directory."""

from __future__ import annotations

import os
import shutil
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


class TextIndexBuilder:
    """text/<name>, built copy-on-write from text/<previous>: one Tantivy writer takes the
    run's deletes and adds as the run produces them (its heap, not the run's size, bounds
    its memory), and `publish` commits and renames the directory into place.

    Tantivy applies a delete to documents added before it, so a page's old chunks must be
    deleted before its new ones are added (the pipeline removes a source's old pages before
    it parses any of its files)."""

    def __init__(self, data: DataDir, name: str, previous: str | None) -> None:
        self.data = data
        self.name = name
        self.tmp = data.text / f".tmp-{name}"
        shutil.rmtree(self.tmp, ignore_errors=True)
        if previous:
            link_or_copy_tree(data.text_index(previous), self.tmp)
        else:
            self.tmp.mkdir(parents=True)
        self.index = tantivy.Index(text_schema(), path=str(self.tmp), reuse=bool(previous))
        self.writer = self.index.writer(WRITER_HEAP_BYTES, 1)

    def delete_page(self, doc_id: str) -> None:
        self.writer.delete_documents_by_term("doc_id", doc_id)

    def delete_source(self, source: str) -> None:
        self.writer.delete_documents_by_term("source", source)

    def add(self, chunk: ChunkRecord, embed_text: str) -> None:
        self.writer.add_document(chunk_document(chunk, embed_text))

    def publish(self) -> None:
        self.writer.commit()
        self.writer.wait_merging_threads()
        self._close()
        for lock in self.tmp.glob(_LOCK_PREFIX + "*"):
            lock.unlink()
        publish_dir(self.tmp, self.data.text_index(self.name))

    def discard(self) -> None:
        """A failed run: drop the writer and its temporary directory."""
        self._close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _close(self) -> None:
        if hasattr(self, "writer"):  # Tantivy lets go of the directory when both are gone
            del self.writer, self.index
