"""Writing dense segments: new ones from embedded chunks, merged ones from live chunks."""

from __future__ import annotations

import secrets
import shutil
from collections.abc import Sequence

import hnswlib
import numpy as np

from docdex.index_format.layout import DataDir, publish_dir, version_name
from docdex.index_format.records import ChunkRecord, ChunkRef, SegmentRef
from docdex.index_format.store import (
    HNSW_FILE,
    Segment,
    directory_sums,
    load_segment,
    write_embed_inputs,
    write_segment_files,
)
from docdex.index_format.token_vectors import (
    TokenArrays,
    concat_chunks,
    load_token_vectors,
    write_token_arrays,
)

HNSW_M = 16
HNSW_EF_CONSTRUCTION = 200
HNSW_ADD_ROWS = 4096  # rows given to hnswlib at a time


def new_segment_id(version: int) -> str:
    return f"{version_name(version)}-{secrets.token_hex(4)}"


def write_segment(
    data: DataDir,
    segment_id: str,
    chunks: list[ChunkRecord],
    vectors: np.ndarray,
    threads: int,
    tokens: TokenArrays | None = None,
    embed_inputs: Sequence[str] | None = None,
) -> SegmentRef:
    """Write a complete segment (with its token vectors, when given) under a temporary name
    and rename it into place. With `embed_inputs` (one per chunk) it is keywords-only: its
    chunks have no windows yet, and the texts their vectors will be made from are kept."""
    owners = np.repeat(np.arange(len(chunks), dtype=np.int32), [c.window_count for c in chunks])
    if len(owners) != len(vectors):
        raise ValueError(f"{len(vectors)} vectors for {len(owners)} windows")
    if tokens is not None and len(tokens.offsets) != len(chunks) + 1:
        raise ValueError(f"token offsets for {len(tokens.offsets) - 1} chunks, not {len(chunks)}")
    final = data.segment(segment_id)
    tmp = data.segments / f".tmp-{segment_id}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    write_segment_files(tmp, chunks, vectors, owners)
    build_hnsw(vectors, threads).save_index(str(tmp / HNSW_FILE))
    if tokens is not None:
        write_token_arrays(tmp, tokens)
    if embed_inputs is not None:
        write_embed_inputs(tmp, embed_inputs)
    files = directory_sums(tmp)  # read back from the page cache, just written
    publish_dir(tmp, final)
    return SegmentRef(
        id=segment_id,
        chunks=len(chunks),
        windows=len(vectors),
        bytes=sum(f.size for f in files),
        files=files,
        keywords_only=embed_inputs is not None,
    )


def build_hnsw(vectors: np.ndarray, threads: int) -> hnswlib.Index:
    """The graph of `vectors` (float16 or float32), added a slice at a time: the float32
    copy hnswlib is given is one slice, not the whole segment (a merged segment's is 100 MB)."""
    index = hnswlib.Index(space="cosine", dim=vectors.shape[1])
    index.init_index(
        max_elements=max(1, len(vectors)), ef_construction=HNSW_EF_CONSTRUCTION, M=HNSW_M
    )
    for start in range(0, len(vectors), HNSW_ADD_ROWS):
        rows = np.asarray(vectors[start : start + HNSW_ADD_ROWS], dtype=np.float32)
        index.add_items(rows, np.arange(start, start + len(rows)), num_threads=threads)
    return index


def relocate(chunk: ChunkRecord, window_start: int) -> ChunkRecord:
    """The same chunk at another row of another segment's vectors."""
    return ChunkRecord(
        **{f: getattr(chunk, f) for f in chunk.__struct_fields__ if f != "window_start"},
        window_start=window_start,
    )


def live_indexes(ref: SegmentRef) -> list[int]:
    dead = set(ref.tombstones)
    return [i for i in range(ref.chunks) if i not in dead]


Moves = dict[tuple[str, int], ChunkRef]  # (old segment, old index) -> where the chunk went


def merge_segments(
    data: DataDir,
    version: int,
    olds: list[SegmentRef],
    dim: int,
    threads: int,
    max_chunks: int,
) -> tuple[list[SegmentRef], Moves, dict[str, set[str]]]:
    """New segments of at most `max_chunks` chunks each from the live chunks of `olds`,
    reusing their vectors (no embedding), and their token vectors when every one of them has
    some. The old segments are read one at a time, so memory follows `max_chunks`, not the
    size of what is merged.

    Returns the new segments, where each live chunk went, and per source the doc ids of the
    pages those chunks belong to (the only pages whose refs change)."""
    with_tokens = all(load_token_vectors(data.segment(o.id), o.chunks) is not None for o in olds)
    buffer = _MergeBuffer(dim)
    written: list[SegmentRef] = []
    moves: Moves = {}

    def flush() -> None:
        if buffer.chunks:
            segment, moved = buffer.write(data, new_segment_id(version), threads)
            written.append(segment)
            moves.update(moved)

    for old in olds:
        segment = load_segment(data, old.id, dim)
        tokens = load_token_vectors(segment.path, old.chunks) if with_tokens else None
        for index in live_indexes(old):
            buffer.add(segment, index, tokens)
            if len(buffer.chunks) >= max_chunks:
                flush()
    flush()
    return written, moves, buffer.moved_pages


class _MergeBuffer:
    """Chunks on their way into one merged segment, with their vectors and token rows."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.moved_pages: dict[str, set[str]] = {}  # source -> doc ids, across flushes
        self.clear()

    def clear(self) -> None:
        self.chunks: list[ChunkRecord] = []
        self.blocks: list[np.ndarray] = []
        self.origins: list[tuple[str, int]] = []
        self.token_parts: list[tuple[TokenArrays, int]] | None = []
        self.rows = 0

    def add(self, segment: Segment, index: int, tokens: TokenArrays | None) -> None:
        chunk = segment.chunks[index]
        self.moved_pages.setdefault(chunk.source, set()).add(chunk.doc_id)
        self.chunks.append(relocate(chunk, self.rows))
        self.blocks.append(segment.chunk_vectors(index))
        self.origins.append((segment.id, index))
        self.rows += chunk.window_count
        if tokens is None:
            self.token_parts = None
        elif self.token_parts is not None:
            self.token_parts.append((tokens, index))

    def write(self, data: DataDir, segment_id: str, threads: int) -> tuple[SegmentRef, Moves]:
        tokens = concat_chunks(self.token_parts, self.dim) if self.token_parts else None
        vectors, self.blocks = np.concatenate(self.blocks), []
        segment = write_segment(data, segment_id, self.chunks, vectors, threads, tokens)
        moved = {
            origin: ChunkRef(
                segment_id, index, chunk.window_start, chunk.window_count, chunk.content_hash
            )
            for index, (origin, chunk) in enumerate(zip(self.origins, self.chunks, strict=True))
        }
        self.clear()
        return segment, moved
