"""Compaction: merge small dense segments so a version never has more than a few.

Tiered, LSM-style: the largest segment stays as it is unless many of its chunks are dead;
every other segment is merged into one, reusing stored vectors (nothing is embedded again).
"""

from __future__ import annotations

import msgspec

from docdex.index_format.layout import DataDir
from docdex.index_format.model import ChunkRef, PageRecord, SegmentRef, SourceState
from docdex.index_format.store import load_pages, load_segment

from .segments import merge_segments, new_segment_id

MAX_DEAD_SHARE = 0.3

PagesBySource = dict[str, list[PageRecord] | None]


def choose_victims(segments: list[SegmentRef], max_segments: int) -> list[SegmentRef]:
    if len(segments) <= max_segments:
        return []
    largest = max(segments, key=_live)
    if len(largest.tombstones) > MAX_DEAD_SHARE * largest.chunks:
        return list(segments)
    return [s for s in segments if s is not largest]


def compact(
    data: DataDir,
    version: int,
    segments: list[SegmentRef],
    pages_by_source: PagesBySource,
    states: dict[str, SourceState],
    max_segments: int,
    dim: int,
    threads: int,
) -> tuple[list[SegmentRef], PagesBySource, bool]:
    victims = choose_victims(segments, max_segments)
    if not victims:
        return segments, pages_by_source, False
    loaded = [(load_segment(data, ref.id, dim), _live_indexes(ref)) for ref in victims]
    merged, moved = merge_segments(data, new_segment_id(version), loaded, threads)
    merged_chunks = load_segment(data, merged.id, dim).chunks
    victim_ids = {v.id for v in victims}
    remaining = [s for s in segments if s.id not in victim_ids] + [merged]
    pages = {
        source: _repoint(pages, moved, merged.id, merged_chunks, victim_ids)
        for source, pages in _all_pages(data, pages_by_source, states).items()
    }
    return remaining, pages, True


def _live(segment: SegmentRef) -> int:
    return segment.chunks - len(segment.tombstones)


def _live_indexes(ref: SegmentRef) -> list[int]:
    dead = set(ref.tombstones)
    return [i for i in range(ref.chunks) if i not in dead]


def _all_pages(data: DataDir, pages_by_source: PagesBySource, states) -> PagesBySource:
    """Page lists of every source: compaction moves chunks that untouched sources name."""
    return {
        source: pages if pages is not None else load_pages(data, states[source].pages_file)
        for source, pages in pages_by_source.items()
    }


def _repoint(pages, moved, segment_id, merged_chunks, victim_ids) -> list[PageRecord]:
    out = []
    for page in pages:
        if not any(ref.segment in victim_ids for ref in page.chunks):
            out.append(page)
            continue
        refs = []
        for ref in page.chunks:
            if ref.segment in victim_ids:
                index = moved[(ref.segment, ref.index)]
                chunk = merged_chunks[index]
                ref = ChunkRef(
                    segment_id, index, chunk.window_start, chunk.window_count, ref.content_hash
                )
            refs.append(ref)
        out.append(msgspec.structs.replace(page, chunks=refs))
    return out
