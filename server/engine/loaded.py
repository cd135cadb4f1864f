"""One loaded, immutable index version: everything a search reads, opened once.

A `Snapshot` follows one manifest and never changes afterwards; a new version is a new
snapshot (the server swaps its reference and closes the old one when no search holds it).
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
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path

import hnswlib
import numpy as np
import tantivy

from docdex.index_format.layout import DataDir, IndexFormatError
from docdex.index_format.records import ChunkRecord, Manifest, ServedPage
from docdex.index_format.refs import split_key
from docdex.index_format.store import (
    HNSW_FILE,
    Segment,
    current_version,
    load_manifest,
    load_segment,
    load_served_pages,
)
from docdex.index_format.text import text_analysis
from docdex.index_format.tokens import TokenArrays, load_token_vectors
from docdex.index_format.verify import CHECKSUMS_MINOR

# HNSW search breadth, set once at load (set_ef is index-wide, so not per query). Searches
# ask for k = 200 windows; ef = k + 100 is the breadth chosen against exact search in
# docs/retrieval.md, "HNSW breadth".
HNSW_EF = 300


# A graph shared with an older version answers for rows that have died since (it marks
# only those dead when it was loaded), so a search asks it for as many more. Up to this many
# the search is no wider than before (k = 200 windows, HNSW_EF = 300); past it, the newer
# version loads its own graph.
MAX_STALE_ROWS = 100


@dataclass
class Graph:
    """A segment's HNSW graph and the rows marked deleted in it when it was loaded."""

    index: hnswlib.Index
    marked: np.ndarray  # (windows,) bool


@dataclass
class LoadedSegment:
    """A dense segment with its HNSW graph and which of its chunks are live."""

    segment: Segment
    live: np.ndarray  # (chunks,) bool
    live_rows: np.ndarray  # (windows,) bool: the owner chunk is live
    live_row_count: int
    tokens: TokenArrays | None  # late-interaction token vectors, when the indexer wrote them

    @property
    def id(self) -> str:
        return self.segment.id

    @cached_property
    def graph(self) -> Graph | None:
        """The HNSW graph with dead rows marked deleted, loaded at its first use: a segment
        searched exactly never loads it (the graph holds its own float32 copy of every
        vector). None when the segment has no windows."""
        if not len(self.live_rows):
            return None
        index = _load_hnsw(self.segment.path / HNSW_FILE, self.segment.dim, len(self.live_rows))
        dead = ~self.live_rows
        # Dead rows are skipped inside hnswlib (C++), cheaper than a Python filter per visit.
        for row in np.flatnonzero(dead):
            index.mark_deleted(int(row))
        return Graph(index, dead)

    @cached_property
    def stale_rows(self) -> int:
        """Rows dead in this version that its (shared) graph still returns."""
        graph = self.graph
        return 0 if graph is None else _unmarked_dead(self.live_rows, graph)

    def inherit(self, before: LoadedSegment) -> None:
        """Take over what `before`, the same segment in another version, has loaded that
        does not depend on which chunks are live, and its graph when this version's dead
        rows include the graph's marked ones and few more."""
        for name in ("vectors32", "window_starts"):
            if name in before.__dict__:
                self.__dict__[name] = before.__dict__[name]
        graph = before.__dict__.get("graph")
        if graph is None or np.any(graph.marked & self.live_rows):
            return
        if _unmarked_dead(self.live_rows, graph) <= MAX_STALE_ROWS:
            self.__dict__["graph"] = graph

    @cached_property
    def vectors32(self) -> np.ndarray:
        """float32 copy of the window vectors, for exact search over small segments, read
        with pread so that the float16 file is not mapped into this process as well."""
        return self.segment.vector_rows.read(0, len(self.live_rows))

    @property
    def chunks(self) -> Sequence[ChunkRecord]:
        return self.segment.chunks

    @cached_property
    def window_starts(self) -> np.ndarray:
        """(chunks + 1,) the first window row of each chunk, and the row count at the end:
        a chunk's rows without decoding its record (rows are in chunk order)."""
        return np.searchsorted(self.segment.owners, np.arange(len(self.live) + 1))

    def window_vectors_of(self, indexes: np.ndarray, exact: bool) -> tuple[np.ndarray, np.ndarray]:
        """(windows, dim) float32 vectors of the chunks `indexes`, one after the other, and
        each chunk's window count: from the float32 copy of a segment searched exactly, else
        read from vectors.npy with pread, so that the file is not paged into this process."""
        starts = self.window_starts[indexes]
        counts = self.window_starts[indexes + 1] - starts
        if exact:
            placed = np.cumsum(counts) - counts  # where each chunk's rows go in the result
            rows = np.repeat(starts - placed, counts) + np.arange(counts.sum())
            return self.vectors32[rows], counts
        return self.segment.vector_rows.read_ranges(starts, counts), counts


@dataclass
class Snapshot:
    data: DataDir
    manifest: Manifest
    segments: list[LoadedSegment]
    pages: dict[str, ServedPage]  # doc_id -> page (its chunks name its live chunks)
    page_tables: dict[str, dict[bytes, ServedPage]]  # source entry -> its pages by digest
    segment_positions: dict[str, int]  # segment id -> position in `segments`
    text_index: tantivy.Index
    searcher: tantivy.Searcher
    cache: dict = field(default_factory=dict)  # derived data computed once (e.g. token IDF)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _closed: bool = False

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

    @classmethod
    def load(
        cls,
        data: DataDir,
        version: int | None = None,
        embedder=None,
        before: Snapshot | None = None,
    ) -> Snapshot:
        """Open `version` (None: the one CURRENT names). With an embedder, refuse a version
        whose vectors another model made. `before`: a version still open, whose unchanged
        segments and pages this one shares."""
        data.check()
        limit_blas_threads()
        if version is None:
            version = current_version(data)
            if version is None:
                raise IndexFormatError(
                    f"{data.root} has no published version yet; run `docdex index` first"
                )
        manifest = load_manifest(data, version)
        if embedder is not None:
            check_embedder(manifest, embedder)
        # With checksums the holder has checked (or is about to hash) every byte (adr/0019)
        decode_all = manifest.format_minor < CHECKSUMS_MINOR
        dim = manifest.embedder.dim
        known = {seg.id: seg for seg in before.segments} if before is not None else {}
        segments = [
            _load_segment(data, ref, dim, decode_all, known.get(ref.id))
            for ref in manifest.segments
        ]
        tables = _page_tables(data, manifest, before)
        text_index = _open_text_index(data, manifest)
        return cls(
            data=data,
            manifest=manifest,
            segments=segments,
            pages={page.doc_id: page for table in tables.values() for page in table.values()},
            page_tables=tables,
            segment_positions={seg.id: s for s, seg in enumerate(segments)},
            text_index=text_index,
            searcher=text_index.searcher(),
        )

    def check_embedder(self, embedder) -> None:
        """Raise IndexFormatError when another model made this version's vectors."""
        check_embedder(self.manifest, embedder)

    def locate(self, chunk_id: str) -> tuple[int, int] | None:
        """(segment position, chunk index) of the live chunk `doc_id#chunkN`, or None: the
        Nth ChunkRef of its page says where it is."""
        doc_id, _, n = chunk_id.rpartition("#chunk")
        page = self.pages.get(doc_id)
        canonical = n.isascii() and n.isdigit() and str(int(n)) == n
        if page is None or not canonical or int(n) >= len(page.chunks):
            return None
        ref = page.chunks[int(n)]
        return self.segment_positions[ref.segment], ref.index

    def chunk(self, chunk_id: str) -> ChunkRecord | None:
        """The live chunk with this id, or None."""
        where = self.locate(chunk_id)
        if where is None:
            return None
        return self.segments[where[0]].chunks[where[1]]

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


def check_embedder(manifest: Manifest, embedder) -> None:
    """Refuse vectors another model made (load_manifest has refused other formats)."""
    ours, theirs = embedder.info, manifest.embedder
    if ours.id != theirs.id or ours.dim != theirs.dim:
        raise IndexFormatError(
            f"version {manifest.version} was built with embedder {theirs.id!r} "
            f"(dim {theirs.dim}), but this docdex loads {ours.id!r} (dim {ours.dim}); "
            "re-index with `docdex index --full` or install the matching model"
        )


def _load_segment(
    data: DataDir, ref, dim: int, decode_all: bool, before: LoadedSegment | None
) -> LoadedSegment:
    segment = before.segment if before is not None else load_segment(data, ref.id, dim, decode_all)
    live = np.ones(len(segment.chunks), dtype=bool)
    dead = [i for i in ref.tombstones if 0 <= i < len(live)]
    live[dead] = False
    if before is not None and np.array_equal(before.live, live):
        return before
    owners = segment.owners
    live_rows = live[owners] if len(owners) else np.zeros(0, dtype=bool)
    loaded = LoadedSegment(
        segment=segment,
        live=live,
        live_rows=live_rows,
        live_row_count=int(live_rows.sum()),
        tokens=before.tokens if before is not None else load_token_vectors(segment.path, len(live)),
    )
    if before is not None:
        loaded.inherit(before)
    return loaded


def _unmarked_dead(live_rows: np.ndarray, graph: Graph) -> int:
    """Rows dead in a version that `graph` does not mark deleted."""
    return int(np.count_nonzero(~live_rows & ~graph.marked))


def _load_hnsw(path: Path, dim: int, rows: int) -> hnswlib.Index:
    if not path.is_file():
        raise IndexFormatError(f"segment file {path} is missing")
    index = hnswlib.Index(space="cosine", dim=dim)
    try:
        index.load_index(str(path), max_elements=rows)
    except RuntimeError as exc:
        raise IndexFormatError(f"HNSW index {path} cannot be read: {exc}") from None
    index.set_ef(HNSW_EF)
    index.set_num_threads(1)
    return index


def _page_tables(
    data: DataDir, manifest: Manifest, before: Snapshot | None
) -> dict[str, dict[bytes, ServedPage]]:
    """Each source's pages; a table `before` has read is not read again, and a source's new
    table decodes only the records that changed."""
    tables: dict[str, dict[bytes, ServedPage]] = {}
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
