"""One indexing run: from each source's branch head to a newly published version.

The run reads the current version, works out per source which files changed since the
commit it indexed (a tree diff, so force-pushes are fine), parses and chunks only those,
embeds only chunks whose text it has no vectors for, and streams them into new dense
segments of bounded size (segmentstream.py) and a copy-on-write text index, then publishes
a manifest naming all of it.
"""

from __future__ import annotations

import hashlib
import logging
import resource
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property

import msgspec

from docdex.config import Config, ConfigError, Settings, SourceConfig
from docdex.index_format.layout import DataDir
from docdex.index_format.model import (
    FORMAT_MAJOR,
    FORMAT_MINOR,
    ChunkRecord,
    ChunkRef,
    EmbedderInfo,
    FileProblem,
    Manifest,
    PageRecord,
    SegmentRef,
    SourceState,
    StoredPage,
)
from docdex.index_format.store import (
    list_versions,
    load_current,
    load_pages,
    point_current,
    write_manifest,
    write_pages,
)
from docdex.logs import log_event
from docdex.server.late_interaction import TOKOFFSETS_FILE

from . import changes, gitsource
from .compaction import CompactionPolicy, PagesBySource, compact
from .embedder import Embedder, embed_input
from .gc import GcReport, collect_garbage
from .lock import writer_lock
from .markdown import parse_page
from .remote import local_repository
from .segmentstream import PendingChunk, PendingPage, SegmentStream
from .textindex import TextIndexBuilder

log = logging.getLogger("docdex.pipeline")

Dirty = dict[str, set[str] | None]  # source -> paths changed in its working tree (None: all)


class IndexingError(Exception):
    """A run cannot start (bad configuration, unknown source)."""


class SourceReport(msgspec.Struct):
    name: str
    status: str = "unchanged"  # unchanged | indexed | failed | branch-deleted | removed
    commit: str = ""
    previous_commit: str = ""
    added: int = 0
    modified: int = 0
    deleted: int = 0
    renamed: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    problems: list[FileProblem] = []
    error: str = ""


class RunReport(msgspec.Struct):
    version: int | None
    previous_version: int | None
    published: bool
    sources: list[SourceReport]
    chunks: int
    windows_embedded: int
    segments: int
    compacted: bool
    took_s: float
    embed_s: float  # embedding and writing the new segments
    peak_rss_mb: float
    gc: GcReport | None = None
    segments_written: int = 0  # new segments of this run, before compaction


@dataclass
class RunState:
    """What the run carries across sources: tombstones and reusable vectors of removed
    pages, the pages it keeps, and the stream its new pages go through."""

    data: DataDir
    settings: Settings
    previous: Manifest | None
    version: int
    tombstones: dict[str, set[int]]
    worktree: bool = False  # checkouts: index the working tree instead of the branch head
    dirty: Dirty | None = None  # per source, paths to look at (None: all)
    loaded_embedder: Embedder | None = None
    reusable: dict[str, ChunkRef] = field(default_factory=dict)  # content hash -> a chunk to copy
    deleted_pages: list[str] = field(default_factory=list)
    kept_pages: dict[str, list[StoredPage]] = field(default_factory=dict)  # touched sources
    states: dict[str, SourceState] = field(default_factory=dict)
    reports: list[SourceReport] = field(default_factory=list)
    removed_sources: list[str] = field(default_factory=list)
    compacted: bool = False
    text_builder: TextIndexBuilder | None = None  # opened by the first delete or add

    @property
    def text(self) -> TextIndexBuilder:
        if self.text_builder is None:
            previous = self.previous.text_index if self.previous else None
            self.text_builder = TextIndexBuilder(self.data, _version_name(self.version), previous)
        return self.text_builder

    @cached_property
    def stream(self) -> SegmentStream:
        old_segments = {s.id: s.chunks for s in self.previous.segments} if self.previous else {}
        return SegmentStream(
            self.data,
            self.version,
            self.settings,
            lambda: self.embedder,
            self.reusable,
            old_segments,
            lambda chunk, body: self.text.add(chunk, body),
        )

    def discard_text(self) -> None:
        """A failed run leaves no Tantivy writer open (watch runs cycles in-process)."""
        if self.text_builder is not None:
            self.text_builder.discard()
            self.text_builder = None

    @property
    def embedder(self) -> Embedder:
        """Loaded on first use: a run that finds nothing changed never loads the model."""
        if self.loaded_embedder is None:
            self.loaded_embedder = Embedder.load(
                threads=self.settings.threads or None,
                window_tokens=self.settings.window_tokens,
                window_overlap=self.settings.window_overlap,
            )
        return self.loaded_embedder

    def dirty_paths(self, source: str) -> set[str] | None:
        return None if self.dirty is None else self.dirty.get(source, set())


def index_sources(
    data: DataDir,
    config: Config,
    names: list[str] | None = None,
    full: bool = False,
    embedder: Embedder | None = None,
    on_wait=None,
    worktree: bool = False,
    dirty: Dirty | None = None,
) -> RunReport:
    """Index the named sources (all when None) and publish a version if anything changed.

    With `worktree`, checkout sources are indexed from their working tree (uncommitted
    edits included) and `dirty` (source -> repo-relative paths) limits what is looked at
    (a source missing from it: only what a HEAD move changed; mapped to None: everything);
    other sources are indexed from their branch head as always.
    """
    selected = _select(config, names)
    data.ensure()
    with writer_lock(data, on_wait=on_wait):
        report = _run(data, config, selected, full, embedder, worktree, dirty)
    _log_run(report)
    return report


def _select(config: Config, names: list[str] | None) -> list[SourceConfig]:
    try:
        return [config.source(n) for n in names] if names else list(config.sources)
    except ConfigError as exc:
        raise IndexingError(str(exc)) from None


def _run(data, config, selected, full, embedder, worktree, dirty) -> RunReport:
    started = time.monotonic()
    settings = config.settings
    collect_garbage(data, settings.keep_versions)  # debris of a crashed run goes first
    previous = load_current(data)
    rebuild = full or previous is None or previous.chunker != settings.chunker()
    run = RunState(
        data=data,
        settings=settings,
        previous=previous,
        version=_next_version(data),
        tombstones={s.id: set(s.tombstones) for s in previous.segments} if previous else {},
        worktree=worktree,
        dirty=dirty,
        loaded_embedder=embedder,
        states=dict(previous.sources) if previous else {},
    )
    try:
        _drop_removed_sources(run, config)
        for source in selected:
            _index_source(run, source, rebuild)
        changed = bool(run.deleted_pages or run.kept_pages or run.removed_sources)
        if not changed and not _states_changed(run):
            return _report(run, started, published=False)
        run.stream.flush()
        manifest = _publish(run)
    finally:
        run.discard_text()  # a no-op once the text index is published
    report = _report(run, started, True, manifest)
    report.gc = collect_garbage(data, settings.keep_versions)
    return report


def _version_name(version: int) -> str:
    return f"{version:08d}"


def _next_version(data: DataDir) -> int:
    versions = list_versions(data)
    return (versions[-1] + 1) if versions else 1


def _drop_removed_sources(run: RunState, config: Config) -> None:
    configured = {s.name for s in config.sources}
    for name in [n for n in run.states if n not in configured]:
        state = run.states.pop(name)
        for page in load_pages(run.data, state.pages_file):
            _remove_page(run, page)
        run.text.delete_source(name)
        run.removed_sources.append(name)
        run.reports.append(SourceReport(name=name, status="removed", deleted=state.files))


def _states_changed(run: RunState) -> bool:
    return run.previous is None or run.states != run.previous.sources


# --- one source ----------------------------------------------------------------------------


def _index_source(run: RunState, source: SourceConfig, rebuild: bool) -> None:
    report = SourceReport(name=source.name)
    run.reports.append(report)
    previous = run.states.get(source.name)
    try:
        with gitsource.open_repo(local_repository(run.data, source)) as repo:
            _index_repo(run, source, repo, previous, rebuild, report)
    except (gitsource.GitSourceError, OSError) as exc:
        if source.name in run.kept_pages:
            raise  # half applied (old pages removed, new ones streamed): publish nothing
        report.status = "failed"
        report.error = str(exc)
        run.states[source.name] = _failed_state(source, previous, str(exc))


def _failed_state(source: SourceConfig, previous: SourceState | None, error: str) -> SourceState:
    """A failed source keeps serving what it had; the error is reported beside it."""
    if previous:
        return msgspec.structs.replace(previous, last_error=error)
    return _new_state(source, source.branch, config_hash="", commit="", last_error=error)


def _new_state(source: SourceConfig, branch: str, **fields) -> SourceState:
    """A source's state before publishing fills in its page table and counts."""
    try:
        kind = gitsource.source_kind(source.location)
    except gitsource.GitSourceError:
        kind = "unknown"
    defaults = {"indexed_at": _now(), "pages_file": "", "files": 0, "chunks": 0}
    return SourceState(
        name=source.name,
        location=source.location,
        kind=kind,
        branch=branch,
        **{**defaults, **fields},
    )


def _index_repo(run, source, repo, previous, rebuild, report) -> None:
    old_pages = _previous_pages(run.data, previous)
    config_hash = _config_hash(source, run.settings)
    report.previous_commit = previous.commit if previous else ""
    same_config = previous is not None and previous.config_hash == config_hash
    base = previous if same_config and not rebuild else None
    max_bytes = run.settings.max_file_bytes
    if run.worktree and gitsource.source_kind(source.location) == "checkout":
        skip = [run.data.root]
        dirty = run.dirty_paths(source.name)
        found = changes.worktree_changes(repo, source, max_bytes, base, old_pages, dirty, skip)
    else:
        branch, head = gitsource.resolve_branch(repo, source.branch or None)
        if head is None:
            _branch_missing(run, source, repo, branch, old_pages, report, config_hash)
            return
        found = changes.commit_changes(repo, source, max_bytes, branch, head, base, old_pages)
    if found is None:
        report.commit = previous.commit if previous else ""
        if previous and previous.last_error:
            run.states[source.name] = msgspec.structs.replace(previous, last_error="")
        return
    _apply(run, source, found, old_pages, report)
    run.states[source.name] = _new_state(
        source,
        found.branch,
        config_hash=config_hash,
        commit=found.commit,
        problems=_carry_problems(base, found.changes, report.problems),
        links=found.links,
    )


def _previous_pages(data: DataDir, previous: SourceState | None) -> dict[str, StoredPage]:
    if previous is None:
        return {}
    return {p.path: p for p in load_pages(data, previous.pages_file, StoredPage)}


def _branch_missing(run, source, repo, branch, old_pages, report, config_hash) -> None:
    if not old_pages:
        raise gitsource.GitSourceError(
            f"branch {branch!r} does not exist in {source.location}"
            + (" (the repository is empty)" if not _has_refs(repo) else "")
        )
    _remove_all(run, source, branch, old_pages, report, config_hash)


def _apply(run: RunState, source: SourceConfig, found: changes.Found, old_pages, report) -> None:
    """Keep the pages the changes do not touch, tombstone the old pages they do (before any
    new page of the source reaches the text index), and stream the new files' pages."""
    touched = changes.touched_paths(found.changes)
    run.kept_pages[source.name] = [
        _redate(page, found.redated.get(path))
        for path, page in old_pages.items()
        if path not in touched
    ]
    for change in found.changes:
        counter = _COUNTER[change.kind]
        setattr(report, counter, getattr(report, counter) + 1)
        old_path = None if change.kind == "add" else (change.old_path or change.path)
        if old_path and old_path in old_pages:
            _remove_page(run, old_pages[old_path])
    problems: list[FileProblem] = []
    for change in found.changes:
        if change.kind == "delete":
            continue
        entry = gitsource.FileEntry(path=change.path, blob=change.blob, mode=change.mode)
        content = found.read(entry)
        if isinstance(content, FileProblem):
            problems.append(content)
            continue
        run.stream.add(_parse(run, source.name, entry, content, found.dates.get(change.path)))
    report.commit = found.commit
    report.status = "indexed"
    report.problems = problems


def _redate(page: StoredPage, dates: gitsource.PageDates | None) -> StoredPage:
    if dates is None:
        return page
    return msgspec.structs.replace(
        page, created=dates.created, modified=dates.modified, commit=dates.commit
    )


_COUNTER = {"add": "added", "modify": "modified", "delete": "deleted", "rename": "renamed"}


def _parse(run, source: str, entry, content: str, dates) -> PendingPage:
    parsed = parse_page(content, entry.path, run.settings.chunker())
    doc_id = f"{source}:{entry.path}"
    chunks = []
    for n, chunk in enumerate(parsed.chunks):
        text_in = embed_input(chunk.headings, chunk.embed_text)
        record = ChunkRecord(
            chunk_id=f"{doc_id}#chunk{n}",
            doc_id=doc_id,
            source=source,
            path=entry.path,
            title=parsed.title,
            headings=chunk.headings,
            text=chunk.text,
            start_line=chunk.start_line,
            end_line=chunk.end_line,
            content_hash=_content_hash(run.embedder.info, text_in),
            window_start=0,
            window_count=0,
        )
        chunks.append(PendingChunk(record, text_in, chunk.embed_text))
    page = PageRecord(
        doc_id=doc_id,
        source=source,
        path=entry.path,
        blob=entry.blob,
        title=parsed.title,
        description=parsed.description,
        tags=parsed.tags,
        created=dates.created if dates else "",
        modified=dates.modified if dates else "",
        commit=dates.commit if dates else "",
        size=len(content.encode("utf-8")),
        chunks=[],
    )
    return PendingPage(page, chunks)


def _remove_page(run: RunState, page: StoredPage) -> None:
    run.deleted_pages.append(page.doc_id)
    run.text.delete_page(page.doc_id)
    for ref in page.refs():
        run.tombstones.setdefault(ref.segment, set()).add(ref.index)
        run.reusable.setdefault(ref.content_hash, ref)


def _remove_all(run, source, branch, old_pages, report, config_hash) -> None:
    """The tracked branch is gone: its pages leave the next version, and we say so."""
    run.kept_pages[source.name] = []
    for page in old_pages.values():
        _remove_page(run, page)
    report.status = "branch-deleted"
    report.deleted = len(old_pages)
    report.error = f"branch {branch!r} no longer exists in {source.location}"
    run.states[source.name] = _new_state(
        source, branch, config_hash=config_hash, commit="", last_error=report.error
    )


def _carry_problems(previous, found_changes, problems) -> list[FileProblem]:
    touched = changes.touched_paths(found_changes)
    old = [p for p in (previous.problems if previous else []) if p.path not in touched]
    return sorted(old + problems, key=lambda p: p.path)


def _has_refs(repo) -> bool:
    return any(True for _ in repo.refs)


def _config_hash(source: SourceConfig, settings: Settings) -> str:
    parts = [source.location, source.branch, source.include, source.exclude]
    parts.append(settings.max_file_bytes)
    if settings.late_interaction:  # turning it on re-reads every page (so chunks get tokens)
        parts.append("late_interaction")
    key = msgspec.json.encode(parts)
    return hashlib.sha256(key).hexdigest()[:16]


def _content_hash(info: EmbedderInfo, text: str) -> str:
    key = f"{info.id}\0{info.window_tokens}\0{info.window_overlap}\0{text}"
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- publishing ----------------------------------------------------------------------------


def _publish(run: RunState) -> Manifest:
    segments = _live_segments(run)
    pages_by_source = _final_pages(run)
    policy = CompactionPolicy(run.settings.max_segments, run.settings.segment_chunks)
    segments, pages_by_source, run.compacted = compact(
        run.data,
        run.version,
        segments,
        pages_by_source,
        run.states,
        policy,
        run.embedder.info.dim,
        run.settings.cores(),
    )
    states = _final_states(run, pages_by_source)
    text_name = run.text.name
    run.text.publish()
    run.text_builder = None
    manifest = Manifest(
        format_major=FORMAT_MAJOR,
        format_minor=_format_minor(run.data, segments),
        version=run.version,
        created_at=_now(),
        embedder=run.embedder.info,
        chunker=run.settings.chunker(),
        text_index=text_name,
        segments=segments,
        sources=states,
        chunks=sum(s.chunks - len(s.tombstones) for s in segments),
        windows=sum(s.windows for s in segments),
    )
    write_manifest(run.data, manifest)
    point_current(run.data, run.version)
    return manifest


def _format_minor(data: DataDir, segments: list[SegmentRef]) -> int:
    """1 when a segment carries token vectors (optional files of format 1.1), else 0."""
    if any((data.segment(s.id) / TOKOFFSETS_FILE).is_file() for s in segments):
        return FORMAT_MINOR
    return 0


def _live_segments(run: RunState) -> list[SegmentRef]:
    previous = run.previous.segments if run.previous else []
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


def _final_states(run: RunState, pages_by_source) -> dict[str, SourceState]:
    states = {}
    for name, state in run.states.items():
        pages = pages_by_source.get(name)
        if pages is None:
            states[name] = state
            continue
        pages_file = f"{name}-{_version_name(run.version)}.msgpack" if pages else ""
        if pages:
            write_pages(run.data, pages_file, pages)
        states[name] = msgspec.structs.replace(
            state,
            pages_file=pages_file,
            files=len(pages),
            chunks=sum(p.chunk_count for p in pages),
        )
    return states


def _log_run(report: RunReport) -> None:
    """One "indexed" event per source; sources with nothing new log at debug level."""
    for source in report.sources:
        level = _LOG_LEVELS.get(source.status, logging.INFO)
        log_event(
            log,
            "indexed",
            level,
            source=source.name,
            status=source.status,
            version=report.version,
            published=report.published,
            commit=source.commit,
            added=source.added,
            modified=source.modified,
            deleted=source.deleted,
            renamed=source.renamed,
            chunks_embedded=source.chunks_embedded,
            chunks_reused=source.chunks_reused,
            problems=len(source.problems),
            took_s=report.took_s,
            **({"error": source.error} if source.error else {}),
        )


_LOG_LEVELS = {"unchanged": logging.DEBUG, "failed": logging.WARNING}


def _report(run: RunState, started: float, published: bool, manifest: Manifest | None = None):
    _count_chunks(run)
    stream = run.stream
    return RunReport(
        version=manifest.version if manifest else (run.previous.version if run.previous else None),
        previous_version=run.previous.version if run.previous else None,
        published=published,
        sources=run.reports,
        chunks=manifest.chunks if manifest else (run.previous.chunks if run.previous else 0),
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
