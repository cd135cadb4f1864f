"""A run's parsed pages, streamed into dense segments of bounded size.

The pipeline hands pages over as it parses them. Whenever `segment_chunks` chunks are
pending, they get vectors (reused by content hash where any segment has them, this run's
included, else embedded), are written as one immutable segment, go to the text index, and
are dropped: a run holds one batch of chunks at a time, whatever the size of the corpus.
A page is never split across segments; what is left at the end is one smaller segment.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

import msgspec
import numpy as np

from docdex.index_format.config import Settings
from docdex.index_format.layout import DataDir
from docdex.index_format.records import ChunkRecord, ChunkRef, EmbedderInfo, PageRecord, SegmentRef
from docdex.index_format.store import VECTORS_FILE
from docdex.index_format.token_vectors import (
    TokenArrays,
    TokenPacker,
    chunk_tokens,
    load_token_vectors,
)
from docdex.model.embedder import Embedder
from docdex.model.late_interaction import Tokens, embed_with_tokens
from docdex.model.protocol import TextEmbedder
from docdex.runtime.progress import Progress

from .segments import new_segment_id, write_segment

EMBED_GROUP_TEXTS = 512  # texts tokenised at once: bounds the memory of token windows

TextSink = Callable[[ChunkRecord, str], None]  # takes a written chunk and its BM25 body


@dataclass
class PendingChunk:
    """A chunk parsed in this run, waiting for vectors."""

    record: ChunkRecord
    embed_input: str
    body: str  # cleaned text for the BM25 body field


@dataclass
class PendingPage:
    record: PageRecord  # its chunk refs are filled in once its segment is written
    chunks: list[PendingChunk]


@dataclass
class ChunkCounts:
    embedded: int = 0
    reused: int = 0


@dataclass
class VectorPlan:
    """Where a batch's vectors come from: old chunks to copy, texts to embed."""

    reuse: dict[str, ChunkRef] = field(default_factory=dict)  # content hash -> chunk to copy
    embed: dict[str, str] = field(default_factory=dict)  # content hash -> embed input
    uses: dict[str, int] = field(default_factory=dict)  # fresh hash -> chunks still to take it


class SegmentStream:
    """Writes the pages it is given as segments of about `segment_chunks` chunks.

    `reusable` maps content hashes to chunks whose vectors may be copied (the pages this
    run removed); the stream adds every chunk it writes, so a text seen again later in
    the run is copied from this run's segment rather than embedded twice. `library`
    gives every chunk of the version the run starts from, by content hash, once a ref
    read whole has called `reuse_any_source`: a source holding what another already
    holds (a checkout of an indexed bare repository, a mirror, a new source over the
    same files) copies their vectors. `segment_chunks` holds an old segment's chunk
    count (for its token arrays) by segment id. The model is loaded (`load_model`) only
    when a text has to be embedded.
    """

    def __init__(
        self,
        data: DataDir,
        version: int,
        settings: Settings,
        *,
        model: EmbedderInfo,
        load_model: Callable[[], TextEmbedder],
        reusable: dict[str, ChunkRef],
        segment_chunks: dict[str, int],
        text_sink: TextSink,
        damaged: frozenset[str] = frozenset(),
        library: Callable[[], dict[str, ChunkRef]] = dict,
        keywords_first: int = 0,
        kept: Callable[[], dict[str, ChunkRef]] = dict,
    ) -> None:
        self.data = data
        self.version = version
        self.settings = settings
        self.model = model
        self.load_model = load_model
        self.reusable = reusable
        self.text_sink = text_sink
        self.damaged = damaged  # segments whose files failed verification: never copied from
        self.library = _Library(library)
        self.kept = _Library(kept, wanted=True)  # older kept versions': read at a first miss
        # a batch with more texts to embed than this is written keywords-only (0: never)
        self.keywords_first = keywords_first
        self.old_vectors = _OldVectors(data)
        self.old_tokens = _OldTokens(data, segment_chunks) if settings.late_interaction else None
        self.batch: list[PendingPage] = []
        self.batch_chunks = 0
        self.segments: list[SegmentRef] = []  # written by this run, in order
        self.pages: dict[str, list[PageRecord]] = {}  # per source, pages written so far
        self.counts: dict[str, ChunkCounts] = {}  # per source
        self.windows = 0  # windows embedded
        self.busy_s = 0.0  # embedding and writing

    def add(self, page: PendingPage) -> None:
        self.batch.append(page)
        self.batch_chunks += len(page.chunks)
        if self.batch_chunks >= self.settings.segment_chunks:
            self.flush()

    def reuse_any_source(self) -> None:
        """From now on, texts that no nearer reuse covers are looked up in every chunk of
        the version the run starts from."""
        self.library.want()

    def flush(self, keywords_only: bool = False) -> None:
        """Write what is pending (the pipeline calls it once more at the end of a run);
        `keywords_only`: what has to be embedded waits for vectors whatever its size (a
        version is about to be published while the run still reads its pages)."""
        started = time.monotonic()
        chunks = [c for page in self.batch for c in page.chunks]
        refs = self._write_segment(chunks, keywords_only) if chunks else []
        for chunk, ref in zip(chunks, refs, strict=True):
            if ref.has_vectors:
                self.reusable.setdefault(ref.content_hash, ref)
            self.text_sink(chunk.record, chunk.body)
        position = 0
        for page in self.batch:
            own = refs[position : position + len(page.chunks)]
            position += len(page.chunks)
            written = msgspec.structs.replace(page.record, chunks=own)
            self.pages.setdefault(page.record.source, []).append(written)
        self.batch = []
        self.batch_chunks = 0
        self.busy_s += time.monotonic() - started

    # --- one segment -----------------------------------------------------------------------

    def _plan(self, chunks: list[PendingChunk]) -> VectorPlan:
        plan = VectorPlan()
        for chunk in chunks:
            key = chunk.record.content_hash
            ref = self._reusable(key)
            if ref is not None:
                plan.reuse[key] = ref
            else:
                plan.embed.setdefault(key, chunk.embed_input)
                plan.uses[key] = plan.uses.get(key, 0) + 1
        self._count(chunks, plan)
        return plan

    def _reusable(self, key: str) -> ChunkRef | None:
        """The nearest copyable chunk of this text: this run's removed or written chunks,
        the version the run starts from (once wanted), then the older kept versions."""
        for lookup in (self.reusable.get, self.library.get, self.kept.get):
            ref = lookup(key)
            if ref is not None and self._copyable(ref):
                return ref
        return None

    def _copyable(self, ref: ChunkRef) -> bool:
        """Whether a reusable chunk has what a copy needs: intact vectors, and token rows
        when they are stored."""
        if not ref.has_vectors or ref.segment in self.damaged:
            return False
        return self.old_tokens is None or self.old_tokens.get(ref.segment) is not None

    def _count(self, chunks: list[PendingChunk], plan: VectorPlan) -> None:
        """A chunk counts as embedded when it is the first of its text to be embedded."""
        first = set(plan.embed)
        for chunk in chunks:
            counts = self.counts.setdefault(chunk.record.source, ChunkCounts())
            if chunk.record.content_hash in first:
                first.discard(chunk.record.content_hash)
                counts.embedded += 1
            else:
                counts.reused += 1

    def _write_segment(self, chunks: list[PendingChunk], keywords_only: bool) -> list[ChunkRef]:
        """The batch as one segment with vectors; or, with more texts to embed than
        `keywords_first` (or any, when `keywords_only`), the chunks whose vectors are copied
        as one and the others as a keywords-only segment, which the run embeds after
        publishing (backlog.py)."""
        plan = self._plan(chunks)
        waits = len(plan.embed) > self.keywords_first if self.keywords_first else False
        if not plan.embed or not (waits or keywords_only):
            return self._write_embedded(chunks, plan)
        refs: dict[int, ChunkRef] = {}
        copied = [i for i, c in enumerate(chunks) if c.record.content_hash in plan.reuse]
        waiting = [i for i, c in enumerate(chunks) if c.record.content_hash not in plan.reuse]
        if copied:
            only_copies = VectorPlan(reuse=plan.reuse)
            written = self._write_embedded([chunks[i] for i in copied], only_copies)
            refs.update(zip(copied, written, strict=True))
        written = self._write_keywords_only([chunks[i] for i in waiting])
        refs.update(zip(waiting, written, strict=True))
        return [refs[i] for i in range(len(chunks))]

    def _write_keywords_only(self, chunks: list[PendingChunk]) -> list[ChunkRef]:
        segment_id = new_segment_id(self.version)
        records = [
            msgspec.structs.replace(c.record, window_start=0, window_count=0) for c in chunks
        ]
        no_rows = np.zeros((0, self.model.dim), dtype=np.float16)
        inputs = [c.embed_input for c in chunks]
        segment = write_segment(self.data, segment_id, records, no_rows, 1, embed_inputs=inputs)
        self.segments.append(segment)
        return [ChunkRef(segment_id, i, 0, 0, r.content_hash) for i, r in enumerate(records)]

    def _write_embedded(self, chunks: list[PendingChunk], plan: VectorPlan) -> list[ChunkRef]:
        late = self.old_tokens is not None
        label = f"embedding chunks (segment {len(self.segments) + 1})"
        fresh = FreshEmbeddings(self.load_model, plan.embed, late, label)
        packer = TokenPacker(self.model.dim) if late else None
        segment_id = new_segment_id(self.version)
        records: list[ChunkRecord] = []
        blocks: list[np.ndarray] = []
        row = 0
        for chunk in chunks:
            vectors, tokens = self._vectors(chunk.record.content_hash, plan, fresh)
            if packer is not None:
                assert tokens is not None  # with a packer, every chunk has its token rows
                packer.add(*tokens)
            records.append(
                msgspec.structs.replace(chunk.record, window_start=row, window_count=len(vectors))
            )
            blocks.append(vectors)
            row += len(vectors)
        fresh.close()
        self.windows += fresh.windows
        token_arrays = packer.finish() if packer is not None else None
        segment = write_segment(
            self.data,
            segment_id,
            records,
            np.concatenate(blocks),
            self.settings.cores(),
            token_arrays,
        )
        self.segments.append(segment)
        if self.old_tokens is not None:
            self.old_tokens.chunks[segment_id] = segment.chunks
        return [
            ChunkRef(segment_id, index, r.window_start, r.window_count, r.content_hash)
            for index, r in enumerate(records)
        ]

    def _vectors(
        self, key: str, plan: VectorPlan, fresh: FreshEmbeddings
    ) -> tuple[np.ndarray, Tokens | None]:
        old = plan.reuse.get(key)
        if old is not None:
            arrays = self.old_tokens.get(old.segment) if self.old_tokens is not None else None
            tokens = chunk_tokens(arrays, old.index) if arrays is not None else None
            return self.old_vectors.get(old), tokens
        vectors, tokens = fresh.get(key)
        plan.uses[key] -= 1
        if not plan.uses[key]:
            fresh.tokens.pop(key, None)  # its last chunk: the rows are packed by the caller
        return vectors, tokens


class _Library:
    """The chunks of the version a run starts from, by content hash. Read once, after a
    ref read whole asks for it (`reuse_any_source`): an incremental run finds its vectors
    in the touched pages and never decodes every segment's chunk records (adr/0003)."""

    def __init__(self, load: Callable[[], dict[str, ChunkRef]], wanted: bool = False) -> None:
        self._load = load
        self._wanted = wanted
        self._refs: dict[str, ChunkRef] | None = None

    def want(self) -> None:
        self._wanted = True

    def get(self, key: str) -> ChunkRef | None:
        if not self._wanted:
            return None
        if self._refs is None:
            self._refs = self._load()
        return self._refs.get(key)


class FreshEmbeddings:
    """float16 window vectors (and, with tokens, per-text token rows) of the texts to embed,
    made group by group as the segment loop asks for them. Texts go in groups of
    EMBED_GROUP_TEXTS, so a batch holds the token windows (and token rows) of about one
    group at a time; each group is batched by length inside. Texts are asked for in their
    order (first occurrence in segment order), so at most one group is ahead."""

    def __init__(
        self,
        load_model: Callable[[], TextEmbedder],
        texts: dict[str, str],
        with_tokens: bool,
        label: str,
    ) -> None:
        self.load_model = load_model
        self.keys = list(texts)
        self.texts = list(texts.values())
        self.with_tokens = with_tokens
        self.done = 0  # texts embedded so far
        self.windows = 0
        self.vectors: dict[str, np.ndarray] = {}
        self.tokens: dict[str, Tokens] = {}
        self.progress = Progress(label, len(self.texts))

    def get(self, key: str) -> tuple[np.ndarray, Tokens | None]:
        while key not in self.vectors:
            self._next_group()
        return self.vectors[key], self.tokens.get(key)

    def _next_group(self) -> None:
        if self.done >= len(self.texts):
            raise KeyError("asked for a text that is not to be embedded")
        start, end = self.done, self.done + EMBED_GROUP_TEXTS
        group = self.texts[start:end]
        embedder = self.load_model()
        if self.with_tokens:  # the shipped model only (config.py checks it)
            vectors, owners, per_text = embed_with_tokens(cast(Embedder, embedder), group)
            self.tokens.update(zip(self.keys[start:end], per_text, strict=True))
        else:
            vectors, owners = embedder.embed_texts(group)
        vectors = vectors.astype(np.float16)
        bounds = np.searchsorted(owners, np.arange(len(group) + 1))
        for i, key in enumerate(self.keys[start:end]):
            self.vectors[key] = vectors[bounds[i] : bounds[i + 1]]
        self.windows += len(vectors)
        self.done += len(group)
        self.progress.advance(len(group))

    def close(self) -> None:
        self.progress.close()


class _OldVectors:
    """Vectors of chunks in segments on disk, read through memory maps."""

    def __init__(self, data: DataDir) -> None:
        self.data = data
        self.maps: dict[str, np.ndarray] = {}

    def get(self, ref: ChunkRef) -> np.ndarray:
        if ref.segment not in self.maps:
            self.maps[ref.segment] = np.load(
                self.data.segment(ref.segment) / VECTORS_FILE, mmap_mode="r"
            )
        rows = self.maps[ref.segment][ref.window_start : ref.window_start + ref.window_count]
        return np.asarray(rows, dtype=np.float16)


class _OldTokens:
    """Token arrays of segments on disk (memory-mapped), None for a segment without them."""

    def __init__(self, data: DataDir, chunks: dict[str, int]) -> None:
        self.data = data
        self.chunks = dict(chunks)  # segment id -> chunk count
        self.arrays: dict[str, TokenArrays | None] = {}

    def get(self, segment: str) -> TokenArrays | None:
        if segment not in self.arrays:
            self.arrays[segment] = load_token_vectors(
                self.data.segment(segment), self.chunks.get(segment)
            )
        return self.arrays[segment]
