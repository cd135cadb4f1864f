"""One indexing run: from each source's branch head (or, in watch mode, a checkout's working
tree) to a newly published version.

The run reads the current version, works out per source which files changed since the
state it indexed (sources/: a tree diff between commits, so force-pushes are fine, or blob
ids for a working tree), parses and chunks only those, embeds only chunks whose text it has
no vectors for, and streams them into new dense segments of bounded size (stream.py)
and a copy-on-write text index. It then compacts the segments (compaction.py), publishes a
manifest naming all of it, and collects garbage.
"""

from __future__ import annotations

import logging
import resource
import time
from collections.abc import Callable

from docdex.index_format.config import (
    Config,
    ConfigError,
    Settings,
    SourceConfig,
)
from docdex.index_format.layout import DataDir, version_name
from docdex.index_format.records import (
    ChunkRef,
    Manifest,
)
from docdex.index_format.refs import base_of
from docdex.index_format.store import (
    list_versions,
    load_current,
)
from docdex.model.embedder import Embedder
from docdex.model.files import model_info

from .context import Dirty, IndexingError, RunContext, RunState
from .gc import collect_garbage
from .lock import writer_lock
from .nospace import disk_full_is_an_error
from .passage_model import LazyModel
from .publish import publish
from .recovery import FullRunBase, drop_versions, full_run_base
from .report import RunReport, log_run
from .source_runs import drop_entry, index_source
from .stream import SegmentStream
from .textindex import TextIndexBuilder, reusable_text_index, text_outdated

log = logging.getLogger("docdex.pipeline")


def index_sources(
    data: DataDir,
    config: Config,
    names: list[str] | None = None,
    full: bool = False,
    embedder: Embedder | None = None,
    on_wait: Callable[[str], None] | None = None,
    worktree: bool = False,
    dirty: Dirty | None = None,
) -> RunReport:
    """Index the named sources (all when None) and publish a version if anything changed.

    With `worktree`, checkout sources are indexed from their working tree (uncommitted
    edits included) and `dirty` (source -> repo-relative paths) limits what is looked at
    (a source missing from it: only what a HEAD move changed; mapped to None: everything);
    other sources are indexed from their branch head as always. `embedder`: a model already
    loaded (else one is loaded when a text needs embedding).
    """
    selected = _select(config, names)
    data.ensure()
    with writer_lock(data, on_wait=on_wait):
        started = time.monotonic()
        collect_garbage(data, config.settings.keep_versions)  # debris of a crashed run first
        base = full_run_base(data) if full else None  # nothing damaged is reused (adr/0019)
        if base is not None and base.salvaged:
            selected = list(config.sources)  # a salvage leaves nothing of any source behind
        ctx = _context(data, config.settings, full, embedder, worktree, dirty, base)
        if ctx.text_outdated:
            selected = list(config.sources)
        with disk_full_is_an_error(data, config.settings.keep_versions):
            report = _run(ctx, config, selected, started)
    log_run(report)
    return report


def _select(config: Config, names: list[str] | None) -> list[SourceConfig]:
    try:
        return [config.source(n) for n in names] if names else list(config.sources)
    except ConfigError as exc:
        raise IndexingError(str(exc)) from None


def _context(
    data: DataDir,
    settings: Settings,
    full: bool,
    embedder: Embedder | None,
    worktree: bool,
    dirty: Dirty | None,
    base: FullRunBase | None = None,
) -> RunContext:
    previous = base.previous if base else load_current(data)
    return RunContext(
        data=data,
        settings=settings,
        previous=previous,
        version=_next_version(data),
        model=embedder.info
        if embedder
        else model_info(settings.window_tokens, settings.window_overlap),
        passage_model=LazyModel(settings, embedder),
        rebuild=full
        or previous is None
        or previous.chunker != settings.chunker()
        or text_outdated(previous),
        worktree=worktree,
        dirty=dirty,
        damaged_segments=base.damaged_segments if base else frozenset(),
        damaged_versions=tuple(base.damaged_versions) if base else (),
        salvaged=base.salvaged if base else False,
        salvaged_vectors=base.vectors if base else {},
    )


def _run(
    ctx: RunContext, config: Config, selected: list[SourceConfig], started: float
) -> RunReport:
    run = _start(ctx)
    try:
        _drop_removed_sources(ctx, run, config)
        for source in selected:
            index_source(ctx, run, source)
        changed = bool(run.deleted_pages or run.kept_pages or run.removed_sources)
        if not changed and not _states_changed(ctx, run):
            return run_report(ctx, run, started)
        run.stream.flush()
        ctx.passage_model.release()  # nothing is embedded after the last segment
        manifest = publish(ctx, run)
        drop_versions(ctx.data, list(ctx.damaged_versions))
    finally:
        run.text.discard()  # a no-op once the text index is published
    report = run_report(ctx, run, started, manifest)
    report.gc = collect_garbage(ctx.data, ctx.settings.keep_versions)
    return report


def _start(ctx: RunContext) -> RunState:
    previous = ctx.previous
    text = TextIndexBuilder(ctx.data, version_name(ctx.version), reusable_text_index(previous))
    reusable: dict[str, ChunkRef] = dict(ctx.salvaged_vectors)
    stream = SegmentStream(
        ctx.data,
        ctx.version,
        ctx.settings,
        model=ctx.model,
        load_model=ctx.passage_model,
        reusable=reusable,
        segment_chunks={s.id: s.chunks for s in previous.segments} if previous else {},
        text_sink=text.add,
        damaged=ctx.damaged_segments,
    )
    return RunState(
        text=text,
        stream=stream,
        tombstones={s.id: set(s.tombstones) for s in previous.segments} if previous else {},
        reusable=reusable,
        states=dict(previous.sources) if previous else {},
        salvaged=ctx.salvaged,
    )


def _next_version(data: DataDir) -> int:
    versions = list_versions(data)
    return (versions[-1] + 1) if versions else 1


def _drop_removed_sources(ctx: RunContext, run: RunState, config: Config) -> None:
    configured = {s.name for s in config.sources}
    for key in [k for k, state in run.states.items() if base_of(k, state) not in configured]:
        drop_entry(ctx, run, key)


def _states_changed(ctx: RunContext, run: RunState) -> bool:
    return ctx.previous is None or run.states != ctx.previous.sources


def run_report(
    ctx: RunContext, run: RunState, started: float, manifest: Manifest | None = None
) -> RunReport:
    """What the run did; without a manifest, it published nothing."""
    _count_chunks(run)
    stream, previous = run.stream, ctx.previous
    return RunReport(
        version=manifest.version if manifest else (previous.version if previous else None),
        previous_version=previous.version if previous else None,
        published=manifest is not None,
        sources=run.reports,
        chunks=manifest.chunks if manifest else (previous.chunks if previous else 0),
        windows_embedded=stream.windows,
        segments=len(manifest.segments) if manifest else 0,
        compacted=run.compacted,
        took_s=round(time.monotonic() - started, 3),
        embed_s=round(stream.busy_s, 3),
        peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        segments_written=len(stream.segments),
    )


def _count_chunks(run: RunState) -> None:
    for report in run.reports:
        counts = run.stream.counts.get(report.name)
        if counts is not None:
            report.chunks_embedded, report.chunks_reused = counts.embedded, counts.reused
