"""Publishing a run: the segments and page tables of the new version, compacted, its text
index and manifest written, then CURRENT moved to it; a crash before the last step leaves
the previous version serving."""

from __future__ import annotations

from typing import NamedTuple

import msgspec

from docdex.index_format.layout import DataDir, version_name
from docdex.index_format.records import (
    FORMAT_MAJOR,
    FORMAT_MINOR,
    FileSum,
    Manifest,
    SegmentRef,
    SourceState,
)
from docdex.index_format.ref_names import file_stem
from docdex.index_format.store import (
    directory_sums,
    list_versions,
    point_current,
    write_manifest,
    write_pages,
)
from docdex.runtime.times import iso_utc

from .context import RunContext, RunState
from .storage.compaction import CompactionPolicy, PagesBySource, compact


class TextIndexRef(NamedTuple):
    """The text index a version names: its directory, analysis and file sums."""

    name: str
    analysis: int
    files: list[FileSum]


def publish(ctx: RunContext, run: RunState) -> Manifest:
    pages_by_source = _final_pages(run)
    segments, pages_by_source, run.compacted = compact_segments(
        ctx, ctx.version, _live_segments(ctx, run), pages_by_source, run.states
    )
    segments = with_model(ctx.model.id, segments, ctx.previous)
    states = final_states(ctx, ctx.version, run.states, pages_by_source)
    run.text.publish()
    text = TextIndexRef(run.text.name, run.text.analysis.version, _text_sums(ctx, run.text.name))
    return write_version(ctx, ctx.version, segments, states, text)


def next_version(data: DataDir) -> int:
    """One more than the largest manifest on disk, published or not (FORMAT.md)."""
    versions = list_versions(data)
    return (versions[-1] + 1) if versions else 1


def compact_segments(
    ctx: RunContext,
    version: int,
    segments: list[SegmentRef],
    pages_by_source: PagesBySource,
    states: dict[str, SourceState],
) -> tuple[list[SegmentRef], PagesBySource, bool]:
    """The segments after compaction (compaction.py), with the page lists it repointed."""
    policy = CompactionPolicy(ctx.settings.max_segments, ctx.settings.full_segment_chunks())
    return compact(
        ctx.data,
        version,
        segments,
        pages_by_source,
        states,
        policy,
        ctx.model.dim,
        ctx.settings.cores(),
    )


def write_version(
    ctx: RunContext,
    version: int,
    segments: list[SegmentRef],
    states: dict[str, SourceState],
    text: TextIndexRef,
) -> Manifest:
    """Write the manifest of `version`, then move CURRENT to it: it is published."""
    manifest = Manifest(
        format_major=FORMAT_MAJOR,
        format_minor=FORMAT_MINOR,
        version=version,
        created_at=iso_utc(),
        embedder=ctx.model,
        chunker=ctx.settings.chunker(),
        text_index=text.name,
        text_analysis=text.analysis,
        segments=segments,
        sources=states,
        chunks=sum(s.chunks - len(s.tombstones) for s in segments),
        windows=sum(s.windows for s in segments),
        text_files=text.files,
    )
    write_manifest(ctx.data, manifest)
    point_current(ctx.data, version)
    return manifest


def _text_sums(ctx: RunContext, name: str) -> list[FileSum]:
    """Checksums of the new text index: the files linked from the previous version's keep
    the sums it recorded, so only what this run's Tantivy writer wrote is hashed."""
    previous = ctx.previous
    if previous is None or not previous.text_index:
        return directory_sums(ctx.data.text_index(name))
    old = ctx.data.text_index(previous.text_index)
    return directory_sums(ctx.data.text_index(name), old, previous.text_files)


def with_model(
    model: str, segments: list[SegmentRef], previous: Manifest | None
) -> list[SegmentRef]:
    """Each segment records the model of its vectors: this run's for the segments it wrote
    (streamed or merged), the previous version's for one that recorded none."""
    before = {s.id for s in previous.segments} if previous else set()
    out = []
    for s in segments:
        if s.id not in before:
            s = msgspec.structs.replace(s, model=model)
        elif not s.model and previous is not None:
            s = msgspec.structs.replace(s, model=previous.embedder.id)
        out.append(s)
    return out


def _live_segments(ctx: RunContext, run: RunState) -> list[SegmentRef]:
    previous = ctx.previous.segments if ctx.previous else []
    out = []
    for ref in previous:
        dead = sorted(run.tombstones.get(ref.id, ()))
        if len(dead) < ref.chunks:
            out.append(msgspec.structs.replace(ref, tombstones=dead))
    return out + run.stream.segments


def _final_pages(run: RunState) -> PagesBySource:
    """Per touched source its complete new page list; None for sources left as they were."""
    out: PagesBySource = {}
    for source in run.states:
        if source not in run.kept_pages:
            out[source] = None
            continue
        fresh = run.stream.pages.get(source, [])
        out[source] = sorted([*run.kept_pages[source], *fresh], key=lambda p: p.path)
    return out


def final_states(
    ctx: RunContext,
    version: int,
    states_before: dict[str, SourceState],
    pages_by_source: PagesBySource,
) -> dict[str, SourceState]:
    """The entries' states, each page list given written as the entry's table of `version`."""
    states = {}
    for name, state in states_before.items():
        pages = pages_by_source.get(name)
        if pages is None:
            states[name] = state
            continue
        pages_file = f"{file_stem(name)}-{version_name(version)}.msgpack" if pages else ""
        states[name] = msgspec.structs.replace(
            state,
            pages_file=pages_file,
            pages_sum=write_pages(ctx.data, pages_file, pages) if pages else None,
            files=len(pages),
            chunks=sum(p.chunk_count for p in pages),
        )
    return states
