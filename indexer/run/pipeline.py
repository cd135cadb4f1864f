"""One indexing run: from each source's branch head (or, in watch mode, a checkout's working
tree) to a newly published version.

The run reads the current version, works out per source which files changed since the
state it indexed (sources/: a tree diff between commits, so force-pushes are fine, or blob
ids for a working tree), parses and chunks only those, embeds only chunks whose text it has
no vectors for, and streams them into new dense segments of bounded size
(storage/stream.py) and a copy-on-write text index. It then compacts the segments
(storage/compaction.py), publishes a manifest naming all of it, and collects garbage.

A source that fails after it began to change what the run publishes (source_run/) makes
the run throw its work away and start again without it; what the attempt embedded is kept
on disk and copied, never embedded twice, and garbage collection removes the rest.
"""

from __future__ import annotations

import logging
import resource
import time
from collections.abc import Callable

from docdex.errors import DocdexError
from docdex.index_format.config import (
    Config,
    ConfigError,
    Settings,
    SourceConfig,
)
from docdex.index_format.layout import DataDir, version_name
from docdex.index_format.metrics import record_failure
from docdex.index_format.records import (
    ChunkRef,
    Manifest,
)
from docdex.index_format.ref_names import base_of
from docdex.index_format.store import load_current
from docdex.model.model_environment import UNCONFIGURED, ModelEnvironment
from docdex.model.protocol import TextEmbedder
from docdex.runtime.logs import log_event

from .backlog import BacklogReport, EmbedWhile, always, embed_backlog
from .context import Dirty, IndexingError, RunContext, RunState, SourceAbandoned
from .lock import writer_lock
from .passage_model import LazyModel, passage_identity
from .progress_file import ProgressFile
from .publishing import next_version, publish
from .recovery import FullRunBase, drop_versions, full_run_base, intact_vectors
from .report import RunReport, log_run, record_run
from .source_budget import Spending
from .source_run.source_indexing import drop_entry, index_source
from .storage.full_disk import NoSpace, disk_full_is_an_error
from .storage.garbage_collection import collect_garbage
from .storage.kept_vectors import kept_vectors
from .storage.stream import SegmentStream
from .storage.text_index import TextIndexBuilder, reusable_text_index, text_outdated

log = logging.getLogger("docdex.pipeline")


def index_sources(
    data: DataDir,
    config: Config,
    names: list[str] | None = None,
    full: bool = False,
    embedder: TextEmbedder | None = None,
    on_wait: Callable[[str], None] | None = None,
    worktree: bool = False,
    dirty: Dirty | None = None,
    source_timeout_s: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    model_environment: ModelEnvironment = UNCONFIGURED,
    embed_while: EmbedWhile | None = always,
) -> RunReport:
    """Index the named sources (all when None) and publish a version if anything changed.

    With `worktree`, checkout sources are indexed from their working tree (uncommitted
    edits included) and `dirty` (source -> repo-relative paths) limits what is looked at
    (a source missing from it: only what a HEAD move changed; mapped to None: everything);
    other sources are indexed from their branch head as always. `embedder`: a model already
    loaded (else one is loaded when a text needs embedding, with `model_environment`).
    `source_timeout_s`: what one source may take on `clock` before it fails on its own
    (None: no limit). Chunks a version holds without vectors (keywords first) are then
    embedded, a version published at a time, while `embed_while()` says so (None: not at all).
    """
    selected = _select(config, names)
    data.ensure()
    with writer_lock(data, on_wait=on_wait):
        started = time.monotonic()
        collect_garbage(data, config.settings.keep_versions)  # debris of a crashed run first
        base = full_run_base(data) if full else None  # nothing damaged is reused (adr/0019)
        if base is not None and base.salvaged:
            selected = list(config.sources)  # a salvage leaves nothing of any source behind
        ctx = _context(
            data,
            config.settings,
            full,
            embedder,
            worktree,
            dirty,
            base,
            source_timeout_s=source_timeout_s,
            clock=clock,
            config=config,
            model_environment=model_environment,
            progress=ProgressFile(data, clock),
        )
        if ctx.text_outdated or ctx.model_changed:
            selected = list(config.sources)
        ctx.progress.start([s.name for s in selected])
        try:
            with disk_full_is_an_error(data, config.settings.keep_versions):
                report = _run(ctx, config, selected, started)
                if embed_while is not None:
                    _add_backlog(report, embed_backlog(ctx, embed_while), started)
        except NoSpace:
            raise  # nothing can be recorded on a full disk; the error says it all
        except DocdexError as exc:
            record_failure(data, str(exc), time.monotonic() - started)
            raise
        finally:
            ctx.progress.close()
        record_run(data, report)
    log_run(report)
    return report


def embed_waiting(
    data: DataDir,
    config: Config,
    embed_while: EmbedWhile = always,
    embedder: TextEmbedder | None = None,
    model_environment: ModelEnvironment = UNCONFIGURED,
) -> RunReport:
    """Only the chunks the current version holds without vectors, embedded while
    `embed_while()` says so (the worker's cycle when no request waits)."""
    data.ensure()
    with writer_lock(data):
        started = time.monotonic()
        ctx = _context(
            data,
            config.settings,
            False,
            embedder,
            False,
            None,
            config=config,
            model_environment=model_environment,
            progress=ProgressFile(data),
        )
        ctx.progress.start([])
        try:
            backlog = embed_backlog(ctx, embed_while)
        finally:
            ctx.progress.close()
    previous = ctx.previous
    report = RunReport(
        version=previous.version if previous else None,
        previous_version=previous.version if previous else None,
        published=False,
        sources=[],
        chunks=previous.chunks if previous else 0,
        windows_embedded=0,
        segments=len(previous.segments) if previous else 0,
        compacted=False,
        took_s=round(time.monotonic() - started, 3),
        embed_s=0.0,
        peak_rss_mb=0.0,
    )
    _add_backlog(report, backlog, started)
    return report


def _add_backlog(report: RunReport, backlog: BacklogReport, started: float) -> None:
    """The report of a run that went on embedding after it published."""
    report.took_s = round(time.monotonic() - started, 3)
    report.peak_rss_mb = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    report.embedded_versions = backlog.versions
    report.waiting_chunks = backlog.waiting
    report.windows_embedded += backlog.windows
    if backlog.versions:
        report.version, report.published = backlog.versions[-1], True


def _select(config: Config, names: list[str] | None) -> list[SourceConfig]:
    try:
        return [config.source(n) for n in names] if names else list(config.sources)
    except ConfigError as exc:
        raise IndexingError(str(exc)) from None


def _context(
    data: DataDir,
    settings: Settings,
    full: bool,
    embedder: TextEmbedder | None,
    worktree: bool,
    dirty: Dirty | None,
    base: FullRunBase | None = None,
    *,
    source_timeout_s: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    config: Config | None = None,
    model_environment: ModelEnvironment,
    progress: ProgressFile | None = None,
) -> RunContext:
    previous = base.previous if base else load_current(data)
    spec = config.embedder_spec() if config is not None else None
    model = (
        embedder.info if embedder else passage_identity(settings, spec, previous, model_environment)
    )
    return RunContext(
        data=data,
        settings=settings,
        previous=previous,
        version=next_version(data),
        model=model,
        passage_model=LazyModel(settings, embedder, spec, model, model_environment),
        rebuild=full
        or previous is None
        or previous.chunker != settings.chunker()
        or text_outdated(previous)
        or previous.embedder.id != model.id,
        worktree=worktree,
        dirty=dirty,
        damaged_segments=base.damaged_segments if base else frozenset(),
        damaged_versions=tuple(base.damaged_versions) if base else (),
        salvaged=base.salvaged if base else False,
        salvaged_vectors=base.vectors if base else {},
        source_timeout_s=source_timeout_s,
        clock=clock,
        progress=progress or ProgressFile(None),
    )


def _run(
    ctx: RunContext, config: Config, selected: list[SourceConfig], started: float
) -> RunReport:
    run, manifest, windows = _attempts(ctx, config, selected)
    report = run_report(ctx, run, started, manifest)
    report.windows_embedded += windows
    if manifest is not None:
        report.gc = collect_garbage(ctx.data, ctx.settings.keep_versions)
    return report


def _attempts(
    ctx: RunContext, config: Config, selected: list[SourceConfig]
) -> tuple[RunState, Manifest | None, int]:
    """The last attempt's state and manifest (None: nothing changed), and the windows the
    attempts before it embedded: each gives up on one source that failed mid-way."""
    given_up: dict[str, str] = {}  # sources an earlier attempt gave up on, and why
    embedded: dict[str, ChunkRef] = {}  # what earlier attempts embedded
    windows = 0
    while True:
        run = _start(ctx, given_up, embedded)
        try:
            return run, _attempt(ctx, run, config, selected), windows
        except SourceAbandoned as abandoned:
            log_event(
                log,
                "source given up",
                logging.WARNING,
                source=abandoned.source,
                error=abandoned.error,
                then="indexing the other sources again, copying what was embedded",
            )
            given_up[abandoned.source] = abandoned.error
            embedded.update(_embedded(run))
            windows += run.stream.windows
        finally:
            run.text.discard()  # a no-op once the text index is published


def _attempt(
    ctx: RunContext, run: RunState, config: Config, selected: list[SourceConfig]
) -> Manifest | None:
    """Index the selected sources and publish; None when nothing changed."""
    _drop_removed_sources(ctx, run, config)
    for source in selected:
        index_source(ctx, run, source)
    changed = bool(run.deleted_pages or run.kept_pages or run.removed_sources)
    if not changed and not _states_changed(ctx, run):
        return None
    run.stream.flush()
    ctx.passage_model.release()  # nothing is embedded after the last segment
    manifest = publish(ctx, run)
    ctx.progress.published(manifest.version)
    drop_versions(ctx.data, list(ctx.damaged_versions))
    return manifest


def _embedded(run: RunState) -> dict[str, ChunkRef]:
    """The chunks an attempt wrote, by content hash: their segments stay on disk until the
    run's garbage collection, so the next attempt copies their vectors."""
    written = {segment.id for segment in run.stream.segments}
    return {key: ref for key, ref in run.reusable.items() if ref.segment in written}


def _every_chunk(ctx: RunContext) -> dict[str, ChunkRef]:
    """The chunks of the version the run starts from, by content hash: any source's."""
    if ctx.previous is None:
        return {}
    return intact_vectors(ctx.data, ctx.previous, ctx.damaged_segments)


def _start(ctx: RunContext, given_up: dict[str, str], embedded: dict[str, ChunkRef]) -> RunState:
    previous = ctx.previous
    text = TextIndexBuilder(ctx.data, version_name(ctx.version), reusable_text_index(previous))
    reusable: dict[str, ChunkRef] = {**embedded, **ctx.salvaged_vectors}
    spending = Spending()
    stream = SegmentStream(
        ctx.data,
        ctx.version,
        ctx.settings,
        model=ctx.model,
        load_model=_within_budget(ctx, spending),
        reusable=reusable,
        segment_chunks={s.id: s.chunks for s in previous.segments} if previous else {},
        text_sink=text.add,
        damaged=ctx.damaged_segments,
        library=lambda: _every_chunk(ctx),
        keywords_first=ctx.settings.keywords_first,
        kept=lambda: kept_vectors(ctx.data, previous, ctx.damaged_segments),
    )
    return RunState(
        text=text,
        stream=stream,
        tombstones={s.id: set(s.tombstones) for s in previous.segments} if previous else {},
        reusable=reusable,
        states=dict(previous.sources) if previous else {},
        salvaged=ctx.salvaged,
        spending=spending,
        given_up=dict(given_up),
    )


def _within_budget(ctx: RunContext, spending: Spending) -> Callable[[], TextEmbedder]:
    """The passage model, for each group of texts the stream embeds: the source being
    indexed must still be within its budget."""

    def load() -> TextEmbedder:
        spending.check()
        return ctx.passage_model()

    return load


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
        partial_versions=list(run.partial_versions),
    )


def _count_chunks(run: RunState) -> None:
    for report in run.reports:
        counts = run.stream.counts.get(report.name)
        if counts is not None:
            report.chunks_embedded, report.chunks_reused = counts.embedded, counts.reused
