"""The chunks a published version holds without vectors, embedded a slice at a time, each
slice published as a version of its own (keywords first, docs/adr/0042-keywords-first.md).

A run that had many texts to embed wrote them as keywords-only segments (storage/stream.py)
and published: BM25 finds them at once. Then, still under the writer lock, it takes the
waiting chunks a slice of `keywords_first` distinct texts at a time in segment order (the
setting that sent them there: as many texts as a run embeds before it publishes), embeds each
text once, writes its chunks as one segment with vectors, tombstones them in their
keywords-only segments (one that has none left leaves the version), repoints their pages and
publishes: the text index is the same, only page tables and the manifest are new. A crash
loses the slice being embedded at most; the next run finds what still waits in the version
CURRENT names and goes on from there.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import msgspec
import numpy as np

from docdex.index_format.records import (
    ChunkRecord,
    ChunkRef,
    IndexedPage,
    Manifest,
    SegmentRef,
    StoredPage,
)
from docdex.index_format.run_progress import waiting_chunks
from docdex.index_format.store import (
    CHUNKS_FILE,
    ChunkTable,
    load_current,
    load_embed_inputs,
    load_pages,
)
from docdex.index_format.token_vectors import TokenPacker
from docdex.runtime.logs import log_event

from .context import RunContext
from .publishing import (
    compact_segments,
    final_states,
    next_version,
    with_model,
    write_version,
)
from .storage.compaction import PagesBySource, repoint
from .storage.garbage_collection import collect_garbage
from .storage.segments import Moves, new_segment_id, write_segment
from .storage.stream import EMBED_GROUP_TEXTS, FreshEmbeddings
from .storage.text_index import TextIndexRef

log = logging.getLogger("docdex.pipeline")

SLICE_TEXTS = EMBED_GROUP_TEXTS  # texts between two versions when keywords_first is 0

EmbedWhile = Callable[[], bool]  # asked before each slice: go on?


def always() -> bool:
    return True


@dataclass
class BacklogReport:
    versions: list[int] = field(default_factory=list)  # published, oldest first
    chunks: int = 0  # given vectors
    windows: int = 0  # embedded
    waiting: int = 0  # chunks still without vectors when it stopped


@dataclass
class Waiting:
    """The live chunks of keywords-only segments, grouped by text in segment order."""

    order: list[str] = field(default_factory=list)  # content hashes, first occurrence first
    chunks: dict[str, list[tuple[str, int]]] = field(default_factory=dict)  # -> (segment, index)
    inputs: dict[str, str] = field(default_factory=dict)  # content hash -> embed input

    @property
    def count(self) -> int:
        return sum(len(places) for places in self.chunks.values())

    def add(self, key: str, place: tuple[str, int], embed_input: str) -> None:
        if key not in self.chunks:
            self.order.append(key)
            self.chunks[key] = []
            self.inputs[key] = embed_input
        self.chunks[key].append(place)

    def slices(self, size: int) -> Iterator[list[str]]:
        for start in range(0, len(self.order), size):
            yield self.order[start : start + size]


def find_waiting(
    ctx: RunContext, manifest: Manifest | None
) -> tuple[Waiting, dict[str, ChunkTable]]:
    """What `manifest` holds without vectors, and the chunk tables of those segments."""
    waiting, tables = Waiting(), dict[str, ChunkTable]()
    for ref in manifest.segments if manifest else []:
        if not ref.keywords_only:
            continue
        folder = ctx.data.segment(ref.id)
        tables[ref.id] = ChunkTable(folder / CHUNKS_FILE, decode_all=False)
        inputs = load_embed_inputs(folder)
        dead = set(ref.tombstones)
        for index in range(ref.chunks):
            if index not in dead:
                chunk = tables[ref.id][index]
                waiting.add(chunk.content_hash, (ref.id, index), inputs[index])
    return waiting, tables


def embed_backlog(ctx: RunContext, embed_while: EmbedWhile = always) -> BacklogReport:
    """Give the current version's waiting chunks their vectors while `embed_while()` says
    so, publishing a version after each slice. Run under the writer lock."""
    manifest = load_current(ctx.data)
    report = BacklogReport(waiting=waiting_chunks(manifest))
    if not report.waiting or manifest is None or manifest.embedder.id != ctx.model.id:
        return report  # another model's version is embedded again by the next full run
    waiting, tables = find_waiting(ctx, manifest)
    total = waiting.count
    ctx.progress.embedding((0, total), 0)
    for keys in waiting.slices(ctx.settings.keywords_first or SLICE_TEXTS):
        if not embed_while():
            break
        manifest, chunks, windows = _embed_slice(ctx, manifest, waiting, keys, tables)
        report.versions.append(manifest.version)
        report.chunks += chunks
        report.windows += windows
        ctx.progress.published(manifest.version)
        ctx.progress.embedding((report.chunks, total), report.windows)
        collect_garbage(ctx.data, ctx.settings.keep_versions)
    report.waiting = waiting_chunks(manifest)
    if report.versions:
        log_event(
            log,
            "embedded after publishing",
            chunks=report.chunks,
            windows=report.windows,
            versions=len(report.versions),
            waiting=report.waiting,
        )
    ctx.passage_model.release()
    return report


def _embed_slice(
    ctx: RunContext,
    manifest: Manifest,
    waiting: Waiting,
    keys: list[str],
    tables: dict[str, ChunkTable],
) -> tuple[Manifest, int, int]:
    """One slice embedded and published: (its manifest, chunks moved, windows embedded)."""
    version = next_version(ctx.data)
    segment, moves = _write_slice(ctx, version, waiting, keys, tables)
    segments = _tombstoned(manifest.segments, moves) + [segment]
    pages = _repointed(ctx, manifest, moves, tables)
    segments, pages, _ = compact_segments(ctx, version, segments, pages, manifest.sources)
    segments = with_model(ctx.model.id, segments, manifest)
    states = final_states(ctx, version, manifest.sources, pages)
    text = TextIndexRef(manifest.text_index, manifest.text_analysis, manifest.text_files)
    published = write_version(ctx, version, segments, states, text)
    return published, len(moves), segment.windows


def _write_slice(
    ctx: RunContext,
    version: int,
    waiting: Waiting,
    keys: list[str],
    tables: dict[str, ChunkTable],
) -> tuple[SegmentRef, Moves]:
    """The slice's chunks as one segment with vectors, each text embedded once."""
    late = ctx.settings.late_interaction
    label = f"embedding chunks waiting for vectors (version {version})"
    fresh = FreshEmbeddings(ctx.passage_model, {k: waiting.inputs[k] for k in keys}, late, label)
    packer = TokenPacker(ctx.model.dim) if late else None
    segment_id = new_segment_id(version)
    records: list[ChunkRecord] = []
    blocks: list[np.ndarray] = []
    moves: Moves = {}
    row = 0
    for key in keys:
        vectors, tokens = fresh.get(key)
        for place in waiting.chunks[key]:
            record = tables[place[0]][place[1]]
            moved = msgspec.structs.replace(record, window_start=row, window_count=len(vectors))
            moves[place] = ChunkRef(segment_id, len(records), row, len(vectors), key)
            records.append(moved)
            blocks.append(vectors)
            if packer is not None:
                assert tokens is not None  # embedded with tokens
                packer.add(*tokens)
            row += len(vectors)
        fresh.tokens.pop(key, None)
        fresh.vectors.pop(key, None)
    fresh.close()
    arrays = packer.finish() if packer is not None else None
    vectors = np.concatenate(blocks)
    segment = write_segment(ctx.data, segment_id, records, vectors, ctx.settings.cores(), arrays)
    return segment, moves


def _tombstoned(segments: list[SegmentRef], moves: Moves) -> list[SegmentRef]:
    """The segments with the moved chunks dead where they were; one left empty goes."""
    gone: dict[str, set[int]] = {}
    for segment_id, index in moves:
        gone.setdefault(segment_id, set()).add(index)
    out = []
    for ref in segments:
        if ref.id in gone:
            dead = sorted(set(ref.tombstones) | gone[ref.id])
            if len(dead) >= ref.chunks:
                continue
            ref = msgspec.structs.replace(ref, tombstones=dead)
        out.append(ref)
    return out


def _repointed(
    ctx: RunContext, manifest: Manifest, moves: Moves, tables: dict[str, ChunkTable]
) -> PagesBySource:
    """Per entry, its page list with the moved chunks repointed (None: none of them moved)."""
    moved_pages: dict[str, set[str]] = {}
    for segment_id, index in moves:
        chunk = tables[segment_id][index]
        moved_pages.setdefault(chunk.source, set()).add(chunk.doc_id)
    pages: PagesBySource = {name: None for name in manifest.sources}
    from_ids = set(tables)
    for source, doc_ids in moved_pages.items():
        listed: list[IndexedPage] = [
            *load_pages(ctx.data, manifest.sources[source].pages_file, StoredPage)
        ]
        pages[source] = repoint(listed, moves, from_ids, doc_ids)
    return pages
