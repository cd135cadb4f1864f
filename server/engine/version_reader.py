"""The read side of one loaded version: what the answers read besides searches (`Engine.index`).

    index = engine.index
    index.pages["docs:guide/install.md"], index.chunk("docs:guide/install.md#chunk2")
    index.page_chunks(page), index.ref_of("docs@v2"), index.doc_id_at(doc_id, "v2")

It reads the version the engine was opened on and nothing else, so an answer built from one
`Engine` lease reads one version from start to end. Searching stays with `Engine`.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from docdex.index_format.layout import DataDir
from docdex.index_format.records import ChunkRecord, Manifest, ServedPage

from .loaded import LoadedVersion
from .scope import check_source, entry_doc_id


class SegmentStatus(msgspec.Struct, frozen=True):
    """One dense segment as the version holds it (`VersionReader.segments`)."""

    id: str
    chunks: int
    live_chunks: int
    windows: int
    live_windows: int
    exact: bool  # searched with exact products over a float32 copy, never with its graph
    graph_loaded: bool
    graph_version: int | None  # the version that loaded its graph (an older one: shared)
    stale_rows: int  # rows dead here that a graph shared with an older version returns
    opened_by: int  # the version that read the segment's files (an older one: shared)


class DerivedState(msgspec.Struct, frozen=True):
    """What the version has derived from its data so far (`VersionReader.derived`): the
    identifier vocabulary literal queries scan, the token IDF of MaxSim, the heading terms
    kept."""

    identifier_vocabulary: bool
    token_idf: bool
    section_terms: int
    heading_terms: int


class VersionReader:
    """One version's manifest, pages and chunks, its entries and refs, and what it holds in
    memory (see the module's docstring)."""

    def __init__(self, version: LoadedVersion) -> None:
        self._version = version

    @property
    def version(self) -> int:
        return self._version.version

    @property
    def data(self) -> DataDir:
        return self._version.data

    @property
    def manifest(self) -> Manifest:
        return self._version.manifest

    @property
    def sources(self) -> list[str]:
        """The manifest entries (a source, or "source@ref"), sorted."""
        return self._version.sources

    @property
    def pages(self) -> Mapping[str, ServedPage]:
        """doc_id -> page."""
        return self._version.pages

    @property
    def has_token_vectors(self) -> bool:
        return self._version.has_token_vectors

    def chunk(self, chunk_id: str) -> ChunkRecord | None:
        """The live chunk `doc_id#chunkN`, or None."""
        return self._version.chunk(chunk_id)

    def page_chunks(self, page: ServedPage) -> list[ChunkRecord]:
        """The page's chunks, in order."""
        return self._version.page_chunks(page)

    def ref_of(self, entry: str) -> str:
        """The branch or tag a manifest entry indexes."""
        return self._version.ref_of(entry)

    def doc_id_at(self, doc_id: str, ref: str) -> str:
        """`doc_id` as the id of the same path at `ref` (SOURCE:PATH -> SOURCE@REF:PATH)."""
        return entry_doc_id(self._version, doc_id, ref)

    def check_source(self, source: str) -> None:
        """InvalidArgument unless `source` is "" or an entry of this version."""
        check_source(self._version, source)

    def segments(self) -> list[SegmentStatus]:
        return [
            SegmentStatus(
                id=seg.id,
                chunks=len(seg.live),
                live_chunks=int(seg.live.sum()),
                windows=len(seg.live_rows),
                live_windows=seg.live_row_count,
                exact=seg.exact,
                graph_loaded=(graph := seg.graph_loaded) is not None,
                graph_version=graph.version if graph is not None else None,
                stale_rows=seg.stale_rows,
                opened_by=seg.opened_by,
            )
            for seg in self._version.segments
        ]

    def derived(self) -> DerivedState:
        derived = self._version.derived
        return DerivedState(
            identifier_vocabulary=derived.vocabulary_ready,
            token_idf=derived.token_idf_ready,
            section_terms=len(derived.section_terms),
            heading_terms=len(derived.heading_terms),
        )
