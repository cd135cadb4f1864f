"""The Tantivy side of a new version: copy-on-write from the previous version's directory."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import NamedTuple

import tantivy

from docdex.index_format.layout import DataDir, publish_dir
from docdex.index_format.records import ChunkRecord, FileSum, Manifest
from docdex.index_format.text import CJK_FIELD, TextAnalysis, identifier_terms, text_analysis

from .full_disk import text_writes

WRITER_HEAP_BYTES = 64_000_000
_LOCK_PREFIX = ".tantivy-"


class TextIndexRef(NamedTuple):
    """The text index a version names: its directory, analysis and file sums."""

    name: str
    analysis: int
    files: list[FileSum]


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


def text_document(
    chunk: ChunkRecord, embed_text: str, analysis: TextAnalysis | None = None
) -> tantivy.Document:
    analysis = analysis or text_analysis()
    doc = tantivy.Document()
    doc.add_text("chunk_id", chunk.chunk_id)
    doc.add_text("doc_id", chunk.doc_id)
    doc.add_text("source", chunk.source)
    doc.add_text("path", chunk.path)
    texts = {"title": chunk.title, "headings": " ".join(chunk.headings[1:]), "body": embed_text}
    for field, text in texts.items():
        doc.add_text(field, analysis.prepare(text))
    for value in analysis.cjk_values("\n".join(texts.values())):
        doc.add_text(CJK_FIELD, value)
    # Identifiers come from the raw text (markup included), except in MDX, where the raw
    # text's imports and JSX tags are code no reader sees (adr/0018).
    raw = embed_text if chunk.path.lower().endswith(".mdx") else chunk.text
    for term in identifier_terms(raw):
        doc.add_text("ident", term)
    return doc


def text_outdated(previous: Manifest | None) -> bool:
    """`previous` has a text index of another analysis than this code's."""
    return previous is not None and previous.text_analysis != text_analysis().version


def reusable_text_index(previous: Manifest | None) -> str | None:
    """The text index a run starts from: the previous version's, unless another analysis
    built it (then the run starts from an empty one and reads every file again)."""
    if previous is None or text_outdated(previous):
        return None
    return previous.text_index


class TextIndexBuilder:
    """text/<name>, built copy-on-write from text/<previous>: one Tantivy writer takes the
    run's deletes and adds as the run produces them (its heap, not the run's size, bounds
    its memory), and `publish` commits and renames the directory into place. Nothing is
    written before the first delete or add (or `publish`): a run that changes nothing
    leaves no directory behind.

    Tantivy applies a delete to documents added before it, so a page's old chunks must be
    deleted before its new ones are added (the pipeline removes a source's old pages before
    it parses any of its files)."""

    def __init__(self, data: DataDir, name: str, previous: str | None) -> None:
        """`previous`: the text index to start from (None: an empty one), built with this
        code's analysis (a run rebuilds the text index of an older analysis from empty)."""
        self.data = data
        self.name = name
        self.previous = previous
        self.analysis = text_analysis()
        self.tmp = data.text / f".tmp-{name}"
        self._index: tantivy.Index | None = None
        self._writer: tantivy.IndexWriter | None = None

    @text_writes
    def delete_page(self, doc_id: str) -> None:
        self._open().delete_documents_by_term("doc_id", doc_id)

    @text_writes
    def delete_source(self, source: str) -> None:
        self._open().delete_documents_by_term("source", source)

    @text_writes
    def add(self, chunk: ChunkRecord, embed_text: str) -> None:
        self._open().add_document(text_document(chunk, embed_text, self.analysis))

    @text_writes
    def publish(self, name: str | None = None) -> None:
        """Commit and move the directory into place, as text/<name> (default: the name it was
        made with; a run that published partial versions names it after its last)."""
        self._commit()
        self._close()
        self.name = name or self.name
        publish_dir(self.tmp, self.data.text_index(self.name))

    @text_writes
    def snapshot(self, name: str) -> None:
        """What was added and deleted so far, committed and published as text/<name> (hard
        links of the files committed), while the writer goes on in its own directory:
        Tantivy never rewrites a committed file, so the snapshot stays as it is."""
        self._commit()
        staging = self.data.text / f".tmp-snapshot-{name}"
        shutil.rmtree(staging, ignore_errors=True)
        link_or_copy_tree(self.tmp, staging)
        publish_dir(staging, self.data.text_index(name))

    def _commit(self) -> None:
        """Commit and wait for the merges, so that no merge deletes a committed file while
        it is linked; the next add or delete opens a new writer."""
        writer = self._open()
        writer.commit()
        writer.wait_merging_threads()
        self._writer = None
        for lock in self.tmp.glob(_LOCK_PREFIX + "*"):
            lock.unlink()

    def discard(self) -> None:
        """Drop the writer and its temporary directory, if any (after `publish`, the
        directory has its final name)."""
        self._close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _open(self) -> tantivy.IndexWriter:
        """The writer; the index is made at the first use from a copy of the previous
        version's files."""
        if self._index is None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            if self.previous:
                link_or_copy_tree(self.data.text_index(self.previous), self.tmp)
            else:
                self.tmp.mkdir(parents=True)
            self._index = tantivy.Index(
                self.analysis.schema(), path=str(self.tmp), reuse=bool(self.previous)
            )
            self.analysis.register(self._index)
        if self._writer is None:
            self._writer = self._index.writer(WRITER_HEAP_BYTES, 1)
        return self._writer

    def _close(self) -> None:
        # Tantivy lets go of the directory when both the writer and the index are gone.
        self._writer = self._index = None
