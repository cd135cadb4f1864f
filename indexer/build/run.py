"""One indexing run: from each source's branch head (or, in watch mode, a checkout's working
tree) to a newly published version.

The run reads the current version, works out per source which files changed since the
state it indexed (changes.py: a tree diff between commits, so force-pushes are fine, or blob
ids for a working tree), parses and chunks only those, embeds only chunks whose text it has
no vectors for, and streams them into new dense segments of bounded size (segmentstream.py)
and a copy-on-write text index. It then compacts the segments (compaction.py), publishes a
manifest naming all of it, and collects garbage.
"""

from __future__ import annotations

import hashlib
import logging
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec
from dulwich.repo import Repo

from docdex.index_format.config import (
    Config,
    ConfigError,
    Settings,
    SourceConfig,
    SourceError,
    source_kind,
)
from docdex.index_format.layout import DataDir, version_name
from docdex.index_format.records import (
    FORMAT_MAJOR,
    FORMAT_MINOR,
    ChunkRecord,
    ChunkRef,
    EmbedderInfo,
    FileProblem,
    FileSum,
    Manifest,
    PageRecord,
    SegmentRef,
    SourceState,
    StoredPage,
)
from docdex.index_format.refs import base_of, file_stem
from docdex.index_format.store import (
    directory_sums,
    list_versions,
    load_current,
    load_pages,
    point_current,
    write_manifest,
    write_pages,
)
from docdex.index_format.times import iso_utc
from docdex.indexer.chunking import includes
from docdex.indexer.chunking.markdown import page_lead, parse_page
from docdex.indexer.git.diffs import Change, FileEntry
from docdex.indexer.git.history import PageDates
from docdex.indexer.git.repo import default_branch, open_repo, resolve_branch
from docdex.indexer.sources import changes
from docdex.indexer.sources.refs import FoundRef, RefFamily, discover
from docdex.indexer.sources.remote import local_repository
from docdex.model.embedder import Embedder
from docdex.model.files import model_info
from docdex.model.windows import embed_input
from docdex.runtime.logs import log_event

from .compaction import CompactionPolicy, PagesBySource, compact
from .gc import GcReport, collect_garbage
from .lock import writer_lock
from .nospace import disk_full_is_an_error
from .recovery import FullRunBase, drop_versions, full_run_base
from .stream import PendingChunk, PendingPage, SegmentStream
from .textindex import TextIndexBuilder, reusable_text_index, text_outdated

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
    ignored_refs: list[str] = []  # refs the patterns select that are not indexed, and why


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


@dataclass(frozen=True)
class RunContext:
    """What a run is asked to do, and with what: fixed from its start to its end."""

    data: DataDir
    settings: Settings
    previous: Manifest | None  # the version the run starts from
    version: int  # the version it publishes
    model: EmbedderInfo  # the model's identity: content hashes and the manifest record it
    load_embedder: LazyModel  # the model itself, loaded at its first use
    rebuild: bool  # re-read every file (asked for, first run, or other chunker settings)
    worktree: bool = False  # checkouts: index the working tree instead of the branch head
    dirty: Dirty | None = None  # per source, paths to look at (None: all)
    damaged_segments: frozenset[str] = frozenset()  # segments whose vectors are not copied
    damaged_versions: tuple[int, ...] = ()  # dropped once this run has published
    salvaged: bool = False  # started from a damaged version: every source is read again
    salvaged_vectors: dict[str, ChunkRef] = field(default_factory=dict)  # its intact chunks

    @property
    def text_outdated(self) -> bool:
        """The previous text index is of an older analysis: rebuilt from every source."""
        return text_outdated(self.previous)

    def dirty_paths(self, source: str) -> set[str] | None:
        return None if self.dirty is None else self.dirty.get(source, set())


@dataclass
class RunState:
    """What the run gathers across sources: tombstones and reusable vectors of removed
    pages, the pages it keeps, the new sources' states, and where its new pages go (the
    stream of dense segments and the text index, whose writer opens at its first use)."""

    text: TextIndexBuilder
    stream: SegmentStream
    tombstones: dict[str, set[int]]
    reusable: dict[str, ChunkRef]  # content hash -> a chunk whose vectors may be copied
    states: dict[str, SourceState]
    deleted_pages: list[str] = field(default_factory=list)
    kept_pages: dict[str, list[StoredPage]] = field(default_factory=dict)  # touched sources
    reports: list[SourceReport] = field(default_factory=list)
    removed_sources: list[str] = field(default_factory=list)
    compacted: bool = False
    salvaged: bool = False  # nothing of the old segments stays live (recovery.py)


@dataclass
class SourceRun:
    """One ref of a source within a run (its default ref, or another of its `refs`): its
    configuration, what the previous version holds of it, and the report the run fills in."""

    config: SourceConfig
    key: str  # its manifest entry: the source's name, or "source@ref" (index-format/refs.py)
    ref: FoundRef | None  # None: the default ref (the branch, or a checkout's working tree)
    family: RefFamily  # the source's entries in the previous version
    previous: SourceState | None
    config_hash: str  # of the settings that decide which files are read, and how
    report: SourceReport

    @property
    def name(self) -> str:
        return self.key

    @property
    def old_pages(self) -> dict[str, StoredPage]:
        """path -> page of the previous version, read at the first use (a ref that did not
        move never reads its page table)."""
        return self.family.pages_of(self.key) if self.key in self.family.states else {}


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
    _log_run(report)
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
        load_embedder=LazyModel(settings, embedder),
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


def load_embedder(settings: Settings) -> Embedder:
    """The model that embeds passages, as `settings` configure it."""
    return Embedder.load(
        threads=settings.threads or None,
        window_tokens=settings.window_tokens,
        window_overlap=settings.window_overlap,
    )


class LazyModel:
    """The model, loaded once at the first call: a run that embeds nothing (nothing changed,
    renames, deletions) never loads it. `release()` drops a model the run loaded itself once
    nothing is left to embed, so that compaction's merge buffers do not sit on top of its
    session (about 80 MB of PowerShell-Docs' peak; adr/0024)."""

    def __init__(self, settings: Settings, given: Embedder | None) -> None:
        self._settings, self._given = settings, given
        self._loaded: Embedder | None = None

    def __call__(self) -> Embedder:
        if self._given is not None:
            return self._given
        if self._loaded is None:
            self._loaded = load_embedder(self._settings)
        return self._loaded

    def release(self) -> None:
        self._loaded = None


def _run(
    ctx: RunContext, config: Config, selected: list[SourceConfig], started: float
) -> RunReport:
    run = _start(ctx)
    try:
        _drop_removed_sources(ctx, run, config)
        for source in selected:
            _index_source(ctx, run, source)
        changed = bool(run.deleted_pages or run.kept_pages or run.removed_sources)
        if not changed and not _states_changed(ctx, run):
            return _report(ctx, run, started)
        run.stream.flush()
        ctx.load_embedder.release()  # nothing is embedded after the last segment
        manifest = _publish(ctx, run)
        drop_versions(ctx.data, list(ctx.damaged_versions))
    finally:
        run.text.discard()  # a no-op once the text index is published
    report = _report(ctx, run, started, manifest)
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
        load_embedder=ctx.load_embedder,
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
        _drop_entry(ctx, run, key)


def _drop_entry(ctx: RunContext, run: RunState, key: str) -> None:
    """A removed source, or a ref that is gone or no longer selected: its pages leave."""
    state = run.states.pop(key)
    for page in load_pages(ctx.data, state.pages_file):
        _remove_page(run, page)
    run.text.delete_source(key)
    run.removed_sources.append(key)
    run.reports.append(SourceReport(name=key, status="removed", deleted=state.files))


def _states_changed(ctx: RunContext, run: RunState) -> bool:
    return ctx.previous is None or run.states != ctx.previous.sources


# --- one source ----------------------------------------------------------------------------


def _index_source(ctx: RunContext, run: RunState, source: SourceConfig) -> None:
    """The source's default ref, then its other refs (each failing on its own)."""
    family = RefFamily.of(ctx.data, source.name, ctx.previous)
    src = _source_run(ctx, run, source, None, family)
    try:
        with open_repo(local_repository(ctx.data, source)) as repo:
            found = discover(repo, source, default_branch(repo, source.branch))
            src.report.ignored_refs = found.ignored
            _index_repo(ctx, run, src, repo)
            _index_refs(ctx, run, src, repo, found.refs)
    except (SourceError, OSError) as exc:
        _fail(run, src, exc)


def _source_run(
    ctx: RunContext, run: RunState, source: SourceConfig, ref: FoundRef | None, family: RefFamily
) -> SourceRun:
    key = ref.key if ref else source.name
    report = SourceReport(name=key)
    run.reports.append(report)
    previous = run.states.get(key)
    return SourceRun(
        config=source,
        key=key,
        ref=ref,
        family=family,
        previous=previous,
        config_hash=_config_hash(source, ctx.settings, ref.full if ref else source.branch),
        report=report,
    )


def _fail(run: RunState, src: SourceRun, exc: Exception) -> None:
    if src.key in run.kept_pages:
        raise exc  # half applied (old pages removed, new ones streamed): publish nothing
    if run.salvaged and src.previous and src.previous.chunks:
        raise IndexingError(  # its old pages name chunks the salvage left behind
            f"{src.key}: {exc}; the run starts from a damaged version and must read every "
            "source again: fix or remove it (the last good version keeps serving)"
        ) from exc
    if run.text.previous is None and src.previous and src.previous.chunks:
        raise IndexingError(  # its pages would be missing from the rebuilt text index
            f"{src.key}: {exc}; the text index is being rebuilt for a new analysis, which "
            "needs every source: fix or remove it (the last version keeps serving)"
        ) from exc
    src.report.status = "failed"
    src.report.error = str(exc)
    run.states[src.key] = _failed_state(src, str(exc))


def _failed_state(src: SourceRun, error: str) -> SourceState:
    """A failed source keeps serving what it had; the error is reported beside it."""
    if src.previous:
        return msgspec.structs.replace(src.previous, last_error=error)
    return _new_state(src, src.config.branch, config_hash="", commit="", last_error=error)


def _new_state(src: SourceRun, branch: str, **fields) -> SourceState:
    """A ref's state before publishing fills in its page table and counts."""
    source, ref = src.config, src.ref
    try:
        kind = source_kind(source.location)
    except SourceError:
        kind = "unknown"
    if ref is None:
        names = {"ref": branch, "ref_kind": "branch", "default_ref": True}
    else:
        branch = ref.name if ref.kind == "branch" else ""
        names = {"ref": ref.name, "ref_kind": ref.kind, "default_ref": False}
    defaults = {"indexed_at": iso_utc(), "pages_file": "", "files": 0, "chunks": 0}
    return SourceState(
        name=src.key,
        location=source.location,
        kind=kind,
        branch=branch,
        base=source.name,
        **names,
        **{**defaults, **fields},
    )


def _index_refs(
    ctx: RunContext, run: RunState, default: SourceRun, repo: Repo, refs: list[FoundRef]
) -> None:
    """The source's other refs: those no longer there (or selected) leave, the others are
    indexed like pushes, a new one from what the source's other refs lend it."""
    source = default.config
    wanted = {ref.key for ref in refs}
    for key, state in list(run.states.items()):
        if base_of(key, state) == source.name and not state.default_ref and key not in wanted:
            _drop_entry(ctx, run, key)
    for ref in refs:
        src = _source_run(ctx, run, source, ref, default.family)
        try:
            _index_ref(ctx, run, src, repo, ref)
        except (SourceError, OSError) as exc:
            _fail(run, src, exc)


def _index_ref(ctx: RunContext, run: RunState, src: SourceRun, repo: Repo, ref: FoundRef) -> None:
    src.report.previous_commit = src.previous.commit if src.previous else ""
    base = _diff_base(ctx, src)
    if base is not None and base.commit == ref.commit:
        _take(ctx, run, src, base, None)  # not moved
        return
    dates_from = None if base else src.family.dates_for(ref.commit)
    max_bytes = ctx.settings.max_file_bytes
    found = changes.commit_changes(
        repo, src.config, max_bytes, ref.name, ref.commit, base, src.old_pages, dates_from
    )
    _take(ctx, run, src, base, found)


def _index_repo(ctx: RunContext, run: RunState, src: SourceRun, repo: Repo) -> None:
    source, previous = src.config, src.previous
    src.report.previous_commit = previous.commit if previous else ""
    base = _diff_base(ctx, src)
    max_bytes = ctx.settings.max_file_bytes
    if ctx.worktree and source_kind(source.location) == "checkout":
        skip = [ctx.data.root]
        dirty = ctx.dirty_paths(source.name)
        found = changes.worktree_changes(repo, source, max_bytes, base, src.old_pages, dirty, skip)
    else:
        branch, head = resolve_branch(repo, source.branch or None)
        if head is None:
            _branch_missing(run, src, repo, branch)
            return
        found = changes.commit_changes(repo, source, max_bytes, branch, head, base, src.old_pages)
    _take(ctx, run, src, base, found)


def _take(
    ctx: RunContext,
    run: RunState,
    src: SourceRun,
    base: SourceState | None,
    found: changes.Found | None,
) -> None:
    """Apply what changed in one ref and record its new state (None: nothing changed)."""
    previous = src.previous
    if found is None:
        src.report.commit = previous.commit if previous else ""
        if previous and previous.last_error:
            run.states[src.key] = msgspec.structs.replace(previous, last_error="")
        return
    if src.config.refs:  # the source's refs share most of their text: lend their vectors
        paths = None if base is None else changes.touched_paths(found.changes)
        src.family.lend_vectors(run.reusable, paths)
    _apply(ctx, run, src, found)
    run.states[src.key] = _new_state(
        src,
        found.branch,
        config_hash=src.config_hash,
        commit=found.commit,
        problems=_carry_problems(base, found.changes, src.report.problems),
        links=found.links,
    )


def _diff_base(ctx: RunContext, src: SourceRun) -> SourceState | None:
    """The state whose files the run diffs against; None re-reads every file (a rebuild,
    or settings that change which files are read and how)."""
    previous = src.previous
    if ctx.rebuild or previous is None or previous.config_hash != src.config_hash:
        return None
    return previous


def _branch_missing(run: RunState, src: SourceRun, repo: Repo, branch: str) -> None:
    if not src.old_pages:
        raise SourceError(
            f"branch {branch!r} does not exist in {src.config.location}"
            + (" (the repository is empty)" if not _has_refs(repo) else "")
        )
    _remove_all(run, src, branch)


def _apply(ctx: RunContext, run: RunState, src: SourceRun, found: changes.Found) -> None:
    """Keep the pages the changes do not touch, tombstone the old pages they do (before any
    new page of the source reaches the text index), and stream the new files' pages."""
    touched = changes.touched_paths(found.changes)
    report = src.report
    run.kept_pages[src.name] = [
        _redate(page, found.redated.get(path))
        for path, page in src.old_pages.items()
        if path not in touched
    ]
    for change in found.changes:
        counter = _COUNTER[change.kind]
        setattr(report, counter, getattr(report, counter) + 1)
        old_path = None if change.kind == "add" else (change.old_path or change.path)
        if old_path and old_path in src.old_pages:
            _remove_page(run, src.old_pages[old_path])
    problems: list[FileProblem] = []
    read_path = includes.include_reader(ctx.data, src.config, found.commit)  # adr/0018
    for change in found.changes:
        if change.kind == "delete":
            continue
        entry = FileEntry(path=change.path, blob=change.blob, mode=change.mode)
        content = found.read(entry)
        if isinstance(content, FileProblem):
            problems.append(content)
            continue
        pending = _parse(ctx, src, entry, content, found.dates.get(change.path), read_path)
        if isinstance(pending, FileProblem):  # a draft
            problems.append(pending)
            continue
        run.stream.add(pending)
    report.commit = found.commit
    report.status = "indexed"
    report.problems = problems


def _redate(page: StoredPage, dates: PageDates | None) -> StoredPage:
    if dates is None:
        return page
    return msgspec.structs.replace(
        page, created=dates.created, modified=dates.modified, commit=dates.commit
    )


_COUNTER = {"add": "added", "modify": "modified", "delete": "deleted", "rename": "renamed"}


def _parse(
    ctx: RunContext,
    src: SourceRun,
    entry: FileEntry,
    content: str,
    dates: PageDates | None,
    read_path: includes.PathReader | None = None,
) -> PendingPage | FileProblem:
    parsed = parse_page(content, entry.path, ctx.settings.chunker(), read_path)
    if parsed.draft and not src.config.drafts:
        return FileProblem(entry.path, includes.DRAFT_SKIPPED)
    source = src.name
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
            content_hash=_content_hash(ctx.model, text_in),
            window_start=0,
            window_count=0,
        )
        body = page_lead(parsed) + chunk.embed_text if n == 0 else chunk.embed_text
        chunks.append(PendingChunk(record, text_in, body))
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


def _remove_all(run: RunState, src: SourceRun, branch: str) -> None:
    """The tracked branch is gone: its pages leave the next version, and we say so."""
    report = src.report
    run.kept_pages[src.name] = []
    for page in src.old_pages.values():
        _remove_page(run, page)
    report.status = "branch-deleted"
    report.deleted = len(src.old_pages)
    report.error = f"branch {branch!r} no longer exists in {src.config.location}"
    run.states[src.name] = _new_state(
        src, branch, config_hash=src.config_hash, commit="", last_error=report.error
    )


def _carry_problems(
    previous: SourceState | None, found_changes: list[Change], problems: list[FileProblem]
) -> list[FileProblem]:
    touched = changes.touched_paths(found_changes)
    old = [p for p in (previous.problems if previous else []) if p.path not in touched]
    return sorted(old + problems, key=lambda p: p.path)


def _has_refs(repo: Repo) -> bool:
    return any(True for _ in repo.refs)


def _config_hash(source: SourceConfig, settings: Settings, ref: str) -> str:
    """`ref`: the default ref's `branch` setting, or another ref's full name (`refs` itself
    is left out, so changing it never makes the default ref read every file again)."""
    parts = [source.location, ref, source.include, source.exclude]
    parts.append(settings.max_file_bytes)
    if source.drafts:  # keeping drafts re-reads every page (left out when off: hashes stay)
        parts.append("drafts")
    if settings.late_interaction:  # turning it on re-reads every page (so chunks get tokens)
        parts.append("late_interaction")
    key = msgspec.json.encode(parts)
    return hashlib.sha256(key).hexdigest()[:16]


def _content_hash(info: EmbedderInfo, text: str) -> str:
    key = f"{info.id}\0{info.window_tokens}\0{info.window_overlap}\0{text}"
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


# --- publishing ----------------------------------------------------------------------------


def _publish(ctx: RunContext, run: RunState) -> Manifest:
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


def _report(
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
