"""Publishing a run: the segments and page tables of the new version, compacted, its text
index and manifest written, then CURRENT moved to it; a crash before the last step leaves
the previous version serving."""

from __future__ import annotations

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
from .storage.garbage_collection import drop_superseded
from .storage.text_index import TextIndexRef


def publish(ctx: RunContext, run: RunState) -> Manifest:
    version = next_version(ctx.data)  # the run's first, unless it published partial ones
    pages_by_source = _final_pages(run, run.states)
    segments, pages_by_source, run.compacted = compact_segments(
        ctx, version, _live_segments(ctx, run), pages_by_source, run.states
    )
    segments = with_model(ctx.model.id, segments, ctx.previous)
    states = final_states(ctx, version, run.states, pages_by_source)
    name = version_name(version)
    run.text.publish(name)
    text = TextIndexRef(name, run.text.analysis.version, _text_sums(ctx, run, name))
    return write_version(ctx, version, segments, states, text)


def publish_partial(ctx: RunContext, run: RunState, reading: dict[str, SourceState]) -> Manifest:
    """A version of what the run did so far, while it still reads the entries of `reading`
    (their states say how far): the pages pending in the stream written (their new texts
    waiting for vectors), the text index committed and linked as the version's own, no
    compaction. The run goes on from where it was; its next version holds more, and the
    one `keep_versions` partial versions before it is dropped."""
    run.stream.flush(keywords_only=True)
    version = next_version(ctx.data)
    states = {**run.states, **reading}
    segments = with_model(ctx.model.id, _live_segments(ctx, run), ctx.previous)
    states = final_states(ctx, version, states, _final_pages(run, states))
    name = version_name(version)
    run.text.snapshot(name)
    text = TextIndexRef(name, run.text.analysis.version, _text_sums(ctx, run, name))
    manifest = write_version(ctx, version, segments, states, text)
    run.partial_text = text
    run.partial_versions.append(version)
    keep = max(1, ctx.settings.keep_versions)
    if len(run.partial_versions) > keep:  # a long read keeps no more than any other run
        drop_superseded(ctx.data, [run.partial_versions[-keep - 1]])
    return manifest


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


def _text_sums(ctx: RunContext, run: RunState, name: str) -> list[FileSum]:
    """Checksums of the text index text/<name> just published: the files linked from the
    run's last partial version, else from the previous version's, keep the sums it
    recorded, so only what the writer wrote since is hashed."""
    before = run.partial_text or _text_of(ctx.previous)
    if before is None:
        return directory_sums(ctx.data.text_index(name))
    old = ctx.data.text_index(before.name)
    return directory_sums(ctx.data.text_index(name), old, before.files)


def _text_of(manifest: Manifest | None) -> TextIndexRef | None:
    if manifest is None or not manifest.text_index:
        return None
    return TextIndexRef(manifest.text_index, manifest.text_analysis, manifest.text_files)


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


def _final_pages(run: RunState, states: dict[str, SourceState]) -> PagesBySource:
    """Per touched entry of `states` its new page list (complete, unless the entry is still
    being read); None for entries left as they were."""
    out: PagesBySource = {}
    for source in states:
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
