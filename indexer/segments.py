"""Writing dense segments: new ones from embedded chunks, merged ones from live chunks."""

from __future__ import annotations

import secrets
import shutil

import hnswlib
import numpy as np

from docdex.index_format.layout import DataDir, publish_dir
from docdex.index_format.model import ChunkRecord, SegmentRef
from docdex.index_format.store import (
    HNSW_FILE,
    Segment,
    directory_bytes,
    write_segment_files,
)
from docdex.server.late_interaction import (
    TokenArrays,
    concat_chunks,
    load_token_vectors,
    write_token_arrays,
)

HNSW_M = 16
HNSW_EF_CONSTRUCTION = 200


def new_segment_id(version: int) -> str:
    return f"{version:08d}-{secrets.token_hex(4)}"


def write_segment(
    data: DataDir,
    segment_id: str,
    chunks: list[ChunkRecord],
    vectors: np.ndarray,
    threads: int,
    tokens: TokenArrays | None = None,
) -> SegmentRef:
    """Write a complete segment (with its token vectors, when given) under a temporary name
    and rename it into place."""
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
    publish_dir(tmp, final)
    return SegmentRef(
        id=segment_id, chunks=len(chunks), windows=len(vectors), bytes=directory_bytes(final)
    )


def build_hnsw(vectors: np.ndarray, threads: int) -> hnswlib.Index:
    index = hnswlib.Index(space="cosine", dim=vectors.shape[1])
    index.init_index(
        max_elements=max(1, len(vectors)), ef_construction=HNSW_EF_CONSTRUCTION, M=HNSW_M
    )
    if len(vectors):
        index.add_items(
            np.asarray(vectors, dtype=np.float32), np.arange(len(vectors)), num_threads=threads
        )
    return index


def relocate(chunk: ChunkRecord, window_start: int) -> ChunkRecord:
    """The same chunk at another row of another segment's vectors."""
    return ChunkRecord(
        **{f: getattr(chunk, f) for f in chunk.__struct_fields__ if f != "window_start"},
        window_start=window_start,
    )


def merge_segments(
    data: DataDir,
    segment_id: str,
    segments: list[tuple[Segment, list[int]]],
    threads: int,
) -> tuple[SegmentRef, dict[tuple[str, int], int]]:
    """One segment from the live chunks of several, reusing their vectors (no embedding),
    and their token vectors when every one of them has some.

    Returns the new segment and where each (old segment, old index) went.
    """
    chunks: list[ChunkRecord] = []
    blocks: list[np.ndarray] = []
    moved: dict[tuple[str, int], int] = {}
    row = 0
    for segment, live in segments:
        for index in live:
            chunk = segment.chunks[index]
            moved[(segment.id, index)] = len(chunks)
            chunks.append(relocate(chunk, row))
            blocks.append(segment.chunk_vectors(index))
            row += chunk.window_count
    dim = segments[0][0].dim
    vectors = np.concatenate(blocks) if blocks else np.zeros((0, dim), np.float16)
    tokens = _merged_tokens(segments, dim)
    return write_segment(data, segment_id, chunks, vectors, threads, tokens), moved


def _merged_tokens(segments: list[tuple[Segment, list[int]]], dim: int) -> TokenArrays | None:
    """Token arrays of the merged chunks in merged order; None unless all segments have them."""
    loaded = [load_token_vectors(s.path, len(s.chunks)) for s, _ in segments]
    if any(arrays is None for arrays in loaded):
        return None
    parts = [(arrays, i) for arrays, (_, live) in zip(loaded, segments, strict=True) for i in live]
    return concat_chunks(parts, dim)
