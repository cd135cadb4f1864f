"""Compaction: keep the number of dense segments small without rewriting big ones.

A segment with at least `full_chunks` chunks (Settings.full_segment_chunks: by default eight
of the segments a large run streams) is full: it is rewritten only when more than
MAX_DEAD_SHARE of its chunks are dead, to drop them. The other segments are size-tiered: a
segment's tier is its live chunk count's order of magnitude in base TIER_FACTOR, and when one
tier holds more than `max_segments` segments they are merged into one, which lands in a
higher tier. A push therefore merges with other pushes of its size, not with everything
pushed since the first run: each chunk is rewritten about once per tier, not once per merge
(adr/0012). The streamed segments of a large run are one more tier, so a corpus ends up in a
few large graphs rather than many (a search visits every graph; adr/0024). A small segment
more than MAX_DEAD_SHARE dead is rewritten too. A keywords-only segment is never merged: its
chunks leave it as they get their vectors (backlog.py), and it goes once the last has.
Merging reuses stored vectors (nothing is embedded again) and writes segments of at most
`full_chunks` chunks, so no compaction ever makes one segment the size of the corpus."""

from __future__ import annotations

from collections import Counter

import msgspec

from docdex.index_format.layout import DataDir
from docdex.index_format.records import IndexedPage, SegmentRef, SourceState, StoredPage, with_refs
from docdex.index_format.store import load_pages

from .segments import Moves, merge_segments

MAX_DEAD_SHARE = 0.3
TIER_FACTOR = 4

PagesBySource = dict[str, list[IndexedPage] | None]


class CompactionPolicy(msgspec.Struct, frozen=True):
    max_segments: int  # segments allowed in one size tier before they are merged
    full_chunks: int  # a segment written with this many chunks or more is full


def choose_victims(segments: list[SegmentRef], policy: CompactionPolicy) -> list[SegmentRef]:
    """The segments to rewrite, in their order in the version. All of them merge into one
    run of output segments, so the plan follows that output: a tier it would overflow joins
    the same merge (one rewrite, not one per run), and so does every segment of a lower tier
    than the merge's (a graph less for every search, for a rewrite of the smallest ones)."""
    with_vectors = [s for s in segments if not s.keywords_only]  # the others wait for theirs
    victims = [s for s in with_vectors if _mostly_dead(s)]
    others = [s for s in with_vectors if s.chunks < policy.full_chunks and not _mostly_dead(s)]
    while True:
        if victims:  # the segments of lower tiers come along: little to rewrite, one less
            low = min(size_tier(_live(v)) for v in victims)
            victims += [s for s in others if size_tier(_live(s)) < low]
            others = [s for s in others if size_tier(_live(s)) >= low]
        output = sum(_live(v) for v in victims) % policy.full_chunks  # its partial segment
        sizes = [_live(s) for s in others] + ([output] if output else [])
        tier = _overflowing(sizes, policy.max_segments)
        joining = [s for s in others if size_tier(_live(s)) == tier]
        if tier is None or not joining:
            break
        victims += joining
        others = [s for s in others if size_tier(_live(s)) != tier]
    chosen = {v.id for v in victims}
    return [s for s in segments if s.id in chosen]


def _overflowing(sizes: list[int], max_segments: int) -> int | None:
    """The lowest tier holding more than `max_segments` of these live chunk counts."""
    counts = Counter(size_tier(live) for live in sizes)
    return min((t for t, n in counts.items() if n > max_segments), default=None)


def size_tier(live_chunks: int) -> int:
    """0 for fewer than TIER_FACTOR live chunks, 1 below TIER_FACTOR², and so on."""
    tier = 0
    while live_chunks >= TIER_FACTOR:
        live_chunks //= TIER_FACTOR
        tier += 1
    return tier


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
    """The segments after compaction, and the page lists with moved chunks repointed: a
    source whose pages lost no chunk to a merge keeps its entry (None stays None)."""
    victims = choose_victims(segments, policy)
    if not victims:
        return segments, pages_by_source, False
    merged, moves, moved_pages = merge_segments(
        data, version, victims, dim, threads, policy.full_chunks
    )
    victim_ids = {v.id for v in victims}
    remaining = [s for s in segments if s.id not in victim_ids] + merged
    pages = dict(pages_by_source)
    for source in moved_pages.keys() & pages.keys():
        listed = pages[source]
        if listed is None:  # untouched by this run, but its chunks moved
            listed = load_pages(data, states[source].pages_file, StoredPage)
        pages[source] = repoint(listed, moves, victim_ids, moved_pages[source])
    return remaining, pages, True


def _live(segment: SegmentRef) -> int:
    return segment.chunks - len(segment.tombstones)


def _mostly_dead(segment: SegmentRef) -> bool:
    return len(segment.tombstones) > MAX_DEAD_SHARE * segment.chunks


def repoint(
    pages: list[IndexedPage], moves: Moves, victim_ids: set[str], moved_pages: set[str]
) -> list[IndexedPage]:
    """`pages` with the refs of `moved_pages` pointing where their chunks went; the others
    are kept as they are, their refs not even decoded."""
    out = []
    for page in pages:
        if page.doc_id in moved_pages:
            refs = page.refs()
            moved = [
                moves.get((r.segment, r.index), r) if r.segment in victim_ids else r for r in refs
            ]
            page = with_refs(page, moved)
        out.append(page)
    return out
