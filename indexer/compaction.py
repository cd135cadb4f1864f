"""Compaction: keep the number of dense segments small without rewriting big ones.

Two tiers. A segment written with at least `full_chunks` chunks (the `segment_chunks`
setting: what a large run writes per segment) is full: it is rewritten only when more than
MAX_DEAD_SHARE of its chunks are dead, to drop them. The other segments form the small tier,
LSM-style: when there are more than `max_segments` of them, all but the largest are merged
(all of them when the largest is MAX_DEAD_SHARE dead). Merging reuses stored vectors
(nothing is embedded again) and writes segments of at most `full_chunks` chunks, so neither
a first run's bulk segments nor a compaction ever make one segment the size of the corpus.
"""

from __future__ import annotations

import msgspec

from docdex.index_format.layout import DataDir
from docdex.index_format.model import IndexedPage, SegmentRef, SourceState, StoredPage, with_refs
from docdex.index_format.store import load_pages

from .segments import Moves, merge_segments

MAX_DEAD_SHARE = 0.3

PagesBySource = dict[str, list[IndexedPage] | None]


class CompactionPolicy(msgspec.Struct, frozen=True):
    max_segments: int  # small-tier segments allowed before they are merged
    full_chunks: int  # a segment written with this many chunks or more is full


def choose_victims(segments: list[SegmentRef], policy: CompactionPolicy) -> list[SegmentRef]:
    """The segments to rewrite, in their order in the version."""
    full = [s for s in segments if s.chunks >= policy.full_chunks]
    small = [s for s in segments if s.chunks < policy.full_chunks]
    chosen = {s.id for s in full if _mostly_dead(s)}
    if len(small) > policy.max_segments:
        largest = max(small, key=_live)
        chosen.update(s.id for s in small if s is not largest or _mostly_dead(s))
    return [s for s in segments if s.id in chosen]


def compact(
    data: DataDir,
    version: int,
    segments: list[SegmentRef],
    pages_by_source: PagesBySource,
    states: dict[str, SourceState],
    policy: CompactionPolicy,
    dim: int,
    threads: int,
) -> tuple[list[SegmentRef], PagesBySource, bool]:
    victims = choose_victims(segments, policy)
    if not victims:
        return segments, pages_by_source, False
    merged, moves = merge_segments(data, version, victims, dim, threads, policy.full_chunks)
    victim_ids = {v.id for v in victims}
    remaining = [s for s in segments if s.id not in victim_ids] + merged
    pages = {
        source: _repoint(pages, moves, victim_ids)
        for source, pages in _all_pages(data, pages_by_source, states).items()
    }
    return remaining, pages, True


def _live(segment: SegmentRef) -> int:
    return segment.chunks - len(segment.tombstones)


def _mostly_dead(segment: SegmentRef) -> bool:
    return len(segment.tombstones) > MAX_DEAD_SHARE * segment.chunks


def _all_pages(data: DataDir, pages_by_source: PagesBySource, states) -> PagesBySource:
    """Page lists of every source: compaction moves chunks that untouched sources name."""
    return {
        source: load_pages(data, states[source].pages_file, StoredPage) if pages is None else pages
        for source, pages in pages_by_source.items()
    }


def _repoint(pages: list[IndexedPage], moves: Moves, victim_ids: set[str]) -> list[IndexedPage]:
    out = []
    for page in pages:
        refs = page.refs()
        if any(ref.segment in victim_ids for ref in refs):
            moved = [moves[(r.segment, r.index)] if r.segment in victim_ids else r for r in refs]
            page = with_refs(page, moved)
        out.append(page)
    return out
