"""One index version as the engine reads it: opened once, never changed afterwards.

Page tables are decoded into memory; chunk records are read with `pread` and decoded when a
search touches them (only their offsets are kept); a small segment's vectors are read once
into a float32 copy for exact search, a large one's HNSW graph is loaded at its first
search; token vectors are memory-mapped (docs/architecture.md, "Serving").

A version opened beside the one before it takes over what did not change (adr/0028): a
segment whose tombstones are the same is the same `LoadedSegment`; one with more takes its
chunk table and its graph, whose answers it cleans of the rows that died since; a page
whose record has the same bytes is the same `ServedPage`.
"""

from __future__ import annotations

import ctypes
import glob
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import hnswlib
import numpy as np
import tantivy

from docdex.index_format.layout import DataDir, IndexFormatError
from docdex.index_format.records import ChunkRecord, EmbedderInfo, Manifest, SegmentRef, ServedPage
from docdex.index_format.ref_names import split_key
from docdex.index_format.store import (
    HNSW_FILE,
    Segment,
    current_version,
    load_manifest,
    load_segment,
    load_served_pages,
)
from docdex.index_format.text import TextAnalysis, text_analysis
from docdex.index_format.token_vectors import TokenArrays, load_token_vectors
from docdex.index_format.verify import CHECKSUMS_MINOR

from .derived import Derived
from .settings import EngineSettings

PageTables = dict[str, dict[bytes, ServedPage]]  # manifest entry -> its pages by digest


@dataclass(frozen=True)
class Graph:
    """A segment's HNSW graph, the rows marked deleted in it when it was loaded, and the
    version that loaded it."""

    index: hnswlib.Index
    marked: np.ndarray  # (windows,) bool
    version: int


class LoadedSegment:
    """A dense segment of one version: which of its chunks are live there, and what is
    read from its files at first use (its float32 vectors, its HNSW graph)."""

    def __init__(
        self,
        segment: Segment,
        live: np.ndarray,
        tokens: TokenArrays | None,
        version: int,
        settings: EngineSettings,
    ) -> None:
        self.segment = segment
        self.live = live  # (chunks,) bool
        owners = segment.owners
        self.live_rows = live[owners] if len(owners) else np.zeros(0, dtype=bool)  # (windows,)
        self.live_row_count = int(self.live_rows.sum())
        self.tokens = tokens  # late-interaction token vectors, when the indexer wrote them
        self.version = version
        self.opened_by = version  # the version that read the segment's files
        self.exact = len(self.live_rows) <= settings.exact_dense_max_rows
        self._hnsw_ef = settings.hnsw_ef
        self._lock = threading.Lock()
        self._graph: Graph | None = None
        self._stale_rows = 0  # a graph loaded here marks every dead row
        self._vectors32: np.ndarray | None = None
        self._window_starts: np.ndarray | None = None

    @property
    def id(self) -> str:
        return self.segment.id

    @property
    def chunks(self) -> Sequence[ChunkRecord]:
        return self.segment.chunks

    def graph(self) -> Graph | None:
        """The HNSW graph with dead rows marked deleted, loaded at its first use: a segment
        searched exactly never loads it (the graph holds its own float32 copy of every
        vector). None when the segment has no windows."""
        if not len(self.live_rows):
            return None
        with self._lock:
            if self._graph is None:
                self._graph = self._load_graph()
            return self._graph

    @property
    def graph_loaded(self) -> Graph | None:
        """The graph if it is loaded already (never loads it)."""
        return self._graph

    def _load_graph(self) -> Graph:
        path = self.segment.path / HNSW_FILE
        index = _load_hnsw(path, self.segment.dim, len(self.live_rows), self._hnsw_ef)
        dead = ~self.live_rows
        # Dead rows are skipped inside hnswlib (C++), cheaper than a Python filter per visit.
        for row in np.flatnonzero(dead):
            index.mark_deleted(int(row))
        return Graph(index, dead, self.version)

    @property
    def stale_rows(self) -> int:
        """Rows dead in this version that its (shared) graph still returns."""
        return self._stale_rows

    def inherit(self, before: LoadedSegment, max_stale_rows: int) -> None:
        """Take over what `before`, the same segment in another version, has read that does
        not depend on which chunks are live, and its graph when this version's dead rows
        include the graph's marked ones and at most `max_stale_rows` more."""
        self.opened_by = before.opened_by
        self._vectors32, self._window_starts = before._vectors32, before._window_starts
        graph = before._graph
        if graph is None or np.any(graph.marked & self.live_rows):
            return
        stale = _unmarked_dead(self.live_rows, graph)
        if stale <= max_stale_rows:
            self._graph, self._stale_rows = graph, stale

    def vectors32(self) -> np.ndarray:
        """float32 copy of the window vectors, for exact search over small segments, read
        with pread so that the float16 file is not mapped into this process as well."""
        with self._lock:
            if self._vectors32 is None:
                self._vectors32 = self.segment.vector_rows.read(0, len(self.live_rows))
            return self._vectors32

    def window_starts(self) -> np.ndarray:
        """(chunks + 1,) the first window row of each chunk, and the row count at the end:
        a chunk's rows without decoding its record (rows are in chunk order)."""
        with self._lock:
            if self._window_starts is None:
                chunks = np.arange(len(self.live) + 1)
                self._window_starts = np.searchsorted(self.segment.owners, chunks)
            return self._window_starts

    def window_vectors_of(self, indexes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(windows, dim) float32 vectors of the chunks `indexes`, one after the other, and
        each chunk's window count: from the float32 copy of a segment searched exactly, else
        read from vectors.npy with pread, so that the file is not paged into this process."""
        starts_of = self.window_starts()
        starts = starts_of[indexes]
        counts = starts_of[indexes + 1] - starts
        if self.exact:
            placed = np.cumsum(counts) - counts  # where each chunk's rows go in the result
            rows = np.repeat(starts - placed, counts) + np.arange(counts.sum())
            return self.vectors32()[rows], counts
        return self.segment.vector_rows.read_ranges(starts, counts), counts

    def open_files(self) -> None:
        """Read or open now every file a search of this segment uses (a later GC may delete
        them; what is read or open survives)."""
        if self.exact:
            self.vectors32()
        else:
            self.graph()
            _ = self.segment.vector_rows
        self.window_starts()


class LoadedVersion:
    """Everything a search reads of one published version, and what is derived from it."""

    def __init__(
        self,
        data: DataDir,
        manifest: Manifest,
        segments: list[LoadedSegment],
        page_tables: PageTables,
        text_index: tantivy.Index,
        settings: EngineSettings,
    ) -> None:
        self.data = data
        self.manifest = manifest
        self.segments = segments
        self.page_tables = page_tables
        # doc_id -> page (its chunks name its live chunks)
        self.pages = {
            page.doc_id: page for table in page_tables.values() for page in table.values()
        }
        self.positions = {seg.id: s for s, seg in enumerate(segments)}  # segment id -> position
        self.text_index = text_index
        self.searcher = text_index.searcher()
        self.analysis: TextAnalysis = text_analysis(manifest.text_analysis)
        self.derived = Derived(self.searcher, self.analysis, settings.section_terms_kept)
        self._lock = threading.Lock()
        self._closed = False

    @classmethod
    def load(
        cls,
        data: DataDir,
        version: int | None,
        settings: EngineSettings,
        before: LoadedVersion | None = None,
    ) -> LoadedVersion:
        """Open `version` (None: the one CURRENT names). `before`: a version still open,
        whose unchanged segments and pages this one shares."""
        data.check()
        limit_blas_threads()
        if version is None:
            version = current_version(data)
            if version is None:
                raise IndexFormatError(
                    f"{data.root} has no published version yet; run `docdex index` first"
                )
        manifest = load_manifest(data, version)
        # With checksums the holder has checked (or is about to hash) every byte (adr/0019)
        decode_all = manifest.format_minor < CHECKSUMS_MINOR
        known = {seg.id: seg for seg in before.segments} if before is not None else {}
        segments = [
            _load_segment(data, manifest, ref, decode_all, known.get(ref.id), settings)
            for ref in manifest.segments
        ]
        tables = _page_tables(data, manifest, before)
        return cls(data, manifest, segments, tables, _open_text_index(data, manifest), settings)

    @property
    def version(self) -> int:
        return self.manifest.version

    @property
    def sources(self) -> list[str]:
        return sorted(self.manifest.sources)

    def ref_of(self, entry: str) -> str:
        """The branch or tag a manifest entry (a source, or "source@ref") indexes."""
        state = self.manifest.sources.get(entry)
        return (state.ref or state.branch) if state else split_key(entry)[1]

    def locate(self, chunk_id: str) -> tuple[int, int] | None:
        """(segment position, chunk index) of the live chunk `doc_id#chunkN`, or None: the
        Nth ChunkRef of its page says where it is."""
        doc_id, _, n = chunk_id.rpartition("#chunk")
        page = self.pages.get(doc_id)
        canonical = n.isascii() and n.isdigit() and str(int(n)) == n
        if page is None or not canonical or int(n) >= len(page.chunks):
            return None
        ref = page.chunks[int(n)]
        return self.positions[ref.segment], ref.index

    def chunk(self, chunk_id: str) -> ChunkRecord | None:
        """The live chunk with this id, or None."""
        where = self.locate(chunk_id)
        if where is None:
            return None
        return self.segments[where[0]].chunks[where[1]]

    def page_chunks(self, page: ServedPage) -> list[ChunkRecord]:
        """The page's chunks, in order."""
        out = []
        for ref in page.chunks:
            position = self.positions.get(ref.segment)
            if position is not None and 0 <= ref.index < len(self.segments[position].chunks):
                out.append(self.segments[position].chunks[ref.index])
        return out

    @property
    def has_token_vectors(self) -> bool:
        return bool(self.segments) and all(
            s.tokens is not None for s in self.segments if s.live_row_count
        )

    def close(self) -> None:
        """Drop this version's references to its segments and its Tantivy index: what no
        newer version shares (graphs, token vectors' mmaps) is freed with them."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self.segments = []
            self.pages, self.page_tables = {}, {}
            del self.searcher, self.text_index


@cache
def limit_blas_threads() -> bool:
    """One OpenBLAS thread for this process: multi-threaded OpenBLAS beside onnxruntime makes
    a search's small products many times slower (adr/0008, "Threads"). numpy's OpenBLAS
    reads OPENBLAS_NUM_THREADS only at import, so the library's setter is called directly.
    Returns whether it was found."""
    libdir = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs")
    names = (
        "scipy_openblas_set_num_threads64_",
        "openblas_set_num_threads64_",
        "openblas_set_num_threads",
    )
    for path in glob.glob(os.path.join(libdir, "*openblas*.so*")):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in names:
            setter = getattr(lib, name, None)
            if setter is not None:
                setter(1)
                return True
    return False


def check_model(manifest: Manifest, model: EmbedderInfo) -> None:
    """Refuse vectors another model made (load_manifest has refused other formats)."""
    theirs = manifest.embedder
    if model.id != theirs.id or model.dim != theirs.dim:
        raise IndexFormatError(
            f"version {manifest.version} was built with embedder {theirs.id!r} "
            f"(dim {theirs.dim}), but this docdex loads {model.id!r} (dim {model.dim}); "
            "re-index with `docdex index --full` or install the matching model"
        )
    mixed = sorted({s.model for s in manifest.foreign_segments()})
    if mixed:
        raise IndexFormatError(
            f"version {manifest.version} records embedder {theirs.id!r} but holds segments "
            f"of {', '.join(mixed)}: `docdex verify` names them, `docdex index --full` "
            "embeds them again"
        )


def _load_segment(
    data: DataDir,
    manifest: Manifest,
    ref: SegmentRef,
    decode_all: bool,
    before: LoadedSegment | None,
    settings: EngineSettings,
) -> LoadedSegment:
    if before is not None:
        segment = before.segment
    else:
        segment = load_segment(data, ref.id, manifest.embedder.dim, decode_all)
    live = np.ones(len(segment.chunks), dtype=bool)
    dead = [i for i in ref.tombstones if 0 <= i < len(live)]
    live[dead] = False
    if before is not None and np.array_equal(before.live, live):
        return before
    tokens = before.tokens if before is not None else load_token_vectors(segment.path, len(live))
    loaded = LoadedSegment(segment, live, tokens, manifest.version, settings)
    if before is not None:
        loaded.inherit(before, settings.max_stale_rows)
    return loaded


def _unmarked_dead(live_rows: np.ndarray, graph: Graph) -> int:
    """Rows dead in a version that `graph` does not mark deleted."""
    return int(np.count_nonzero(~live_rows & ~graph.marked))


def _load_hnsw(path: Path, dim: int, rows: int, ef: int) -> hnswlib.Index:
    if not path.is_file():
        raise IndexFormatError(f"segment file {path} is missing")
    index = hnswlib.Index(space="cosine", dim=dim)
    try:
        index.load_index(str(path), max_elements=rows)
    except RuntimeError as exc:
        raise IndexFormatError(f"HNSW index {path} cannot be read: {exc}") from None
    index.set_ef(ef)
    index.set_num_threads(1)
    return index


def _page_tables(data: DataDir, manifest: Manifest, before: LoadedVersion | None) -> PageTables:
    """Each source's pages; a table `before` has read is not read again, and a source's new
    table decodes only the records that changed."""
    tables: PageTables = {}
    for name, state in manifest.sources.items():
        old_state = before.manifest.sources.get(name) if before is not None else None
        old_table = before.page_tables.get(name, {}) if before is not None else {}
        if old_state is not None and old_state.pages_file == state.pages_file and old_table:
            tables[name] = old_table
        else:
            tables[name] = load_served_pages(data, state.pages_file, old_table)
    return tables


def _open_text_index(data: DataDir, manifest: Manifest) -> tantivy.Index:
    text_analysis(manifest.text_analysis)  # refuses an analysis this code does not know
    path = data.text_index(manifest.text_index)
    if not path.is_dir():
        raise IndexFormatError(f"text index {path} of version {manifest.version} is missing")
    try:
        return tantivy.Index.open(str(path))
    except ValueError as exc:
        raise IndexFormatError(f"text index {path} cannot be opened: {exc}") from None
