"""Publishing a run: the segments and page tables of the new version, compacted, its text
index and manifest written, then CURRENT moved to it; a crash before the last step leaves
the previous version serving."""

from __future__ import annotations

import msgspec

from docdex.index_format.layout import version_name
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
    point_current,
    write_manifest,
    write_pages,
)
from docdex.runtime.times import iso_utc

from .context import RunContext, RunState
from .storage.compaction import CompactionPolicy, PagesBySource, compact


def publish(ctx: RunContext, run: RunState) -> Manifest:
    segments = _live_segments(ctx, run)
    pages_by_source = _final_pages(run)
    policy = CompactionPolicy(ctx.settings.max_segments, ctx.settings.full_segment_chunks())
    segments, pages_by_source, run.compacted = compact(
        ctx.data,
        ctx.version,
        segments,
        pages_by_source,
        run.states,
        policy,
        ctx.model.dim,
        ctx.settings.cores(),
    )
    segments = _with_model(ctx, segments)
    states = _final_states(ctx, run, pages_by_source)
    run.text.publish()
    manifest = Manifest(
        format_major=FORMAT_MAJOR,
        format_minor=FORMAT_MINOR,
        version=ctx.version,
        created_at=iso_utc(),
        embedder=ctx.model,
        chunker=ctx.settings.chunker(),
        text_index=run.text.name,
        text_analysis=run.text.analysis.version,
        segments=segments,
        sources=states,
        chunks=sum(s.chunks - len(s.tombstones) for s in segments),
        windows=sum(s.windows for s in segments),
        text_files=_text_sums(ctx, run.text.name),
    )
    write_manifest(ctx.data, manifest)
    point_current(ctx.data, ctx.version)
    return manifest


def _text_sums(ctx: RunContext, name: str) -> list[FileSum]:
    """Checksums of the new text index: the files linked from the previous version's keep
    the sums it recorded, so only what this run's Tantivy writer wrote is hashed."""
    previous = ctx.previous
    if previous is None or not previous.text_index:
        return directory_sums(ctx.data.text_index(name))
    old = ctx.data.text_index(previous.text_index)
    return directory_sums(ctx.data.text_index(name), old, previous.text_files)


def _with_model(ctx: RunContext, segments: list[SegmentRef]) -> list[SegmentRef]:
    """Each segment records the model of its vectors: this run's for the segments it wrote
    (streamed or merged), the previous version's for one that recorded none."""
    previous = ctx.previous
    before = {s.id for s in previous.segments} if previous else set()
    out = []
    for s in segments:
        if s.id not in before:
            s = msgspec.structs.replace(s, model=ctx.model.id)
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


def _final_states(
    ctx: RunContext, run: RunState, pages_by_source: PagesBySource
) -> dict[str, SourceState]:
    states = {}
    for name, state in run.states.items():
        pages = pages_by_source.get(name)
        if pages is None:
            states[name] = state
            continue
        pages_file = f"{file_stem(name)}-{version_name(ctx.version)}.msgpack" if pages else ""
        states[name] = msgspec.structs.replace(
            state,
            pages_file=pages_file,
            pages_sum=write_pages(ctx.data, pages_file, pages) if pages else None,
            files=len(pages),
            chunks=sum(p.chunk_count for p in pages),
        )
    return states
