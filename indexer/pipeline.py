"""One indexing run: from each source's branch head to a newly published version.

The run reads the current version, works out per source which files changed since the
commit it indexed (a tree diff, so force-pushes are fine), parses and chunks only those,
embeds only chunks whose text it has no vectors for, writes one new dense segment and a
copy-on-write text index, and publishes a manifest naming all of it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import resource
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

import msgspec
import numpy as np

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
)
from docdex.index_format.store import (
    VECTORS_FILE,
    list_versions,
    load_current,
    load_pages,
    point_current,
    write_manifest,
    write_pages,
)
from docdex.logs import log_event
from docdex.progress import Progress
from docdex.server.late_interaction import (
    TOKOFFSETS_FILE,
    TokenArrays,
    TokenPacker,
    chunk_tokens,
    embed_with_tokens,
    load_token_vectors,
)

from . import changes, gitsource
from .compaction import compact
from .embedder import Embedder, embed_input
from .gc import GcReport, collect_garbage
from .lock import writer_lock
from .markdown import parse_page
from .remote import local_repository
from .segments import new_segment_id, write_segment
from .textindex import write_text_index

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
    embed_s: float
    peak_rss_mb: float
    gc: GcReport | None = None


@dataclass
class PendingChunk:
    """A chunk parsed in this run, waiting for vectors."""

    record: ChunkRecord
    embed_input: str
    body: str  # cleaned text for the BM25 body field
    page_path: str
    source: str
    ref: ChunkRef | None = None  # set once the chunk has a place in the new segment


@dataclass
class PendingPage:
    record: PageRecord  # chunks filled in once the segment exists
    chunks: list[PendingChunk]


@dataclass
class RunState:
    """What the run accumulates across sources before it writes anything."""

    data: DataDir
    settings: Settings
    previous: Manifest | None
    version: int
    tombstones: dict[str, set[int]]
    worktree: bool = False  # checkouts: index the working tree instead of the branch head
    dirty: Dirty | None = None  # per source, paths to look at (None: all)
    loaded_embedder: Embedder | None = None
    reusable: dict[str, ChunkRef] = field(default_factory=dict)  # content hash -> old chunk
    deleted_pages: list[str] = field(default_factory=list)
    pending_pages: dict[str, list[PendingPage]] = field(default_factory=dict)
    kept_pages: dict[str, list[PageRecord]] = field(default_factory=dict)
    states: dict[str, SourceState] = field(default_factory=dict)
    reports: list[SourceReport] = field(default_factory=list)
    removed_sources: list[str] = field(default_factory=list)
    compacted: bool = False

    @property
    def threads(self) -> int:
        return self.settings.threads or os.cpu_count() or 1

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
    _drop_removed_sources(run, config)
    for source in selected:
        _index_source(run, source, rebuild)

    changed = bool(run.deleted_pages or run.pending_pages or run.removed_sources)
    if not changed and not _states_changed(run):
        return _report(run, started, published=False, embed_s=0.0, windows=0)
    embed_started = time.monotonic()
    segment, windows = _embed_and_write_segment(run)
    embed_s = time.monotonic() - embed_started
    manifest = _publish(run, segment)
    report = _report(run, started, True, embed_s, windows, manifest)
    report.gc = collect_garbage(data, settings.keep_versions)
    return report


def _next_version(data: DataDir) -> int:
    versions = list_versions(data)
    return (versions[-1] + 1) if versions else 1


def _drop_removed_sources(run: RunState, config: Config) -> None:
    configured = {s.name for s in config.sources}
    for name in [n for n in run.states if n not in configured]:
        state = run.states.pop(name)
        for page in load_pages(run.data, state.pages_file):
            _remove_page(run, page)
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
    old_pages = {p.path: p for p in load_pages(run.data, previous.pages_file)} if previous else {}
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
    )


def _branch_missing(run, source, repo, branch, old_pages, report, config_hash) -> None:
    if not old_pages:
        raise gitsource.GitSourceError(
            f"branch {branch!r} does not exist in {source.location}"
            + (" (the repository is empty)" if not _has_refs(repo) else "")
        )
    _remove_all(run, source, branch, old_pages, report, config_hash)


def _apply(run: RunState, source: SourceConfig, found: changes.Found, old_pages, report) -> None:
    """Tombstone the old pages the changes touch, parse the new files, keep the rest."""
    for change in found.changes:
        counter = _COUNTER[change.kind]
        setattr(report, counter, getattr(report, counter) + 1)
        old_path = None if change.kind == "add" else (change.old_path or change.path)
        if old_path and old_path in old_pages:
            _remove_page(run, old_pages[old_path])
    problems: list[FileProblem] = []
    pages: list[PendingPage] = []
    for change in found.changes:
        if change.kind == "delete":
            continue
        entry = gitsource.FileEntry(path=change.path, blob=change.blob, mode=change.mode)
        content = found.read(entry)
        if isinstance(content, FileProblem):
            problems.append(content)
            continue
        pages.append(_parse(run, source.name, entry, content, found.dates.get(change.path)))
    touched = changes.touched_paths(found.changes)
    run.pending_pages[source.name] = pages
    run.kept_pages[source.name] = [
        _redate(page, found.redated.get(path))
        for path, page in old_pages.items()
        if path not in touched
    ]
    report.commit = found.commit
    report.status = "indexed"
    report.problems = problems


def _redate(page: PageRecord, dates: gitsource.PageDates | None) -> PageRecord:
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
        chunks.append(PendingChunk(record, text_in, chunk.embed_text, entry.path, source))
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


def _remove_page(run: RunState, page: PageRecord) -> None:
    run.deleted_pages.append(page.doc_id)
    for ref in page.chunks:
        run.tombstones.setdefault(ref.segment, set()).add(ref.index)
        run.reusable.setdefault(ref.content_hash, ref)


def _remove_all(run, source, branch, old_pages, report, config_hash) -> None:
    """The tracked branch is gone: its pages leave the next version, and we say so."""
    for page in old_pages.values():
        _remove_page(run, page)
    run.kept_pages[source.name] = []
    run.pending_pages[source.name] = []
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


# --- vectors and the new segment -----------------------------------------------------------


def _embed_and_write_segment(run: RunState) -> tuple[SegmentRef | None, int]:
    pending = [c for pages in run.pending_pages.values() for p in pages for c in p.chunks]
    if not pending:
        return None, 0
    late = run.settings.late_interaction
    old_tokens = _OldTokens(run) if late else None
    reuse: dict[str, ChunkRef] = {}  # content hash -> old chunk whose vectors we take
    to_embed: dict[str, str] = {}  # content hash -> embed input, first occurrence
    uses: dict[str, int] = {}  # fresh content hash -> chunks still to take its tokens
    for chunk in pending:
        key = chunk.record.content_hash
        ref = run.reusable.get(key)
        if ref is not None and (old_tokens is None or old_tokens.get(ref.segment) is not None):
            reuse[key] = ref
        else:
            to_embed.setdefault(key, chunk.embed_input)
            uses[key] = uses.get(key, 0) + 1
    _count_reuse(run, to_embed)
    fresh = _FreshEmbeddings(run, to_embed, with_tokens=late)

    segment_id = new_segment_id(run.version)
    records: list[ChunkRecord] = []
    blocks: list[np.ndarray] = []
    packer = TokenPacker(run.embedder.info.dim) if late else None
    row = 0
    vector_cache = _OldVectors(run)
    for index, chunk in enumerate(pending):
        key = chunk.record.content_hash
        old = reuse.get(key)
        if old is None:
            vectors, tokens = fresh.get(key)
            uses[key] -= 1
            if not uses[key]:
                fresh.tokens.pop(key, None)  # its last chunk: the rows are packed below
        else:
            vectors = vector_cache.get(old)
            tokens = chunk_tokens(old_tokens.get(old.segment), old.index) if late else None
        if packer is not None:
            packer.add(*tokens)
        record = msgspec.structs.replace(chunk.record, window_start=row, window_count=len(vectors))
        records.append(record)
        blocks.append(vectors)
        row += len(vectors)
        chunk.record = record
        chunk.ref = ChunkRef(
            segment_id, index, record.window_start, len(vectors), record.content_hash
        )
    fresh.close()
    token_arrays = packer.finish() if packer is not None else None
    ref = write_segment(
        run.data, segment_id, records, np.concatenate(blocks), run.threads, token_arrays
    )
    return ref, fresh.windows


EMBED_GROUP_TEXTS = 512  # texts tokenised at once: bounds the memory of token windows


class _FreshEmbeddings:
    """float16 window vectors (and, with tokens, per-text token rows) of the texts to embed,
    made group by group as the segment loop asks for them. Texts go in groups of
    EMBED_GROUP_TEXTS, so a huge first run holds the token windows (and token rows) of about
    one group at a time; each group is batched by length inside. Texts are asked for in
    their order (first occurrence in segment order), so at most one group is ahead."""

    def __init__(self, run: RunState, texts: dict[str, str], with_tokens: bool) -> None:
        self.run = run
        self.keys = list(texts)
        self.texts = list(texts.values())
        self.with_tokens = with_tokens
        self.done = 0  # texts embedded so far
        self.windows = 0
        self.vectors: dict[str, np.ndarray] = {}
        self.tokens: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.progress = Progress("embedding chunks", len(self.texts))

    def get(self, key: str) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
        while key not in self.vectors:
            self._next_group()
        return self.vectors[key], self.tokens.get(key)

    def _next_group(self) -> None:
        if self.done >= len(self.texts):
            raise KeyError("asked for a text that is not to be embedded")
        start, end = self.done, self.done + EMBED_GROUP_TEXTS
        group = self.texts[start:end]
        embedder = self.run.embedder
        if self.with_tokens:
            vectors, owners, per_text = embed_with_tokens(embedder, group)
            self.tokens.update(zip(self.keys[start:end], per_text, strict=True))
        else:
            windows, owners = embedder.token_windows(group)
            vectors = embedder.embed_windows(windows)
        vectors = vectors.astype(np.float16)
        bounds = np.searchsorted(owners, np.arange(len(group) + 1))
        for i, key in enumerate(self.keys[start:end]):
            self.vectors[key] = vectors[bounds[i] : bounds[i + 1]]
        self.windows += len(vectors)
        self.done += len(group)
        self.progress.advance(len(group))

    def close(self) -> None:
        self.progress.close()


def _count_reuse(run: RunState, embedded: dict[str, str]) -> None:
    reports = {r.name: r for r in run.reports}
    seen: set[str] = set()
    for source, pages in run.pending_pages.items():
        for page in pages:
            for chunk in page.chunks:
                fresh = (
                    chunk.record.content_hash in embedded and chunk.record.content_hash not in seen
                )
                seen.add(chunk.record.content_hash)
                if fresh:
                    reports[source].chunks_embedded += 1
                else:
                    reports[source].chunks_reused += 1


class _OldVectors:
    """Vectors of chunks in earlier segments, read through memory maps."""

    def __init__(self, run: RunState) -> None:
        self.run = run
        self.maps: dict[str, np.ndarray] = {}

    def get(self, ref: ChunkRef) -> np.ndarray:
        if ref.segment not in self.maps:
            self.maps[ref.segment] = np.load(
                self.run.data.segment(ref.segment) / VECTORS_FILE, mmap_mode="r"
            )
        rows = self.maps[ref.segment][ref.window_start : ref.window_start + ref.window_count]
        return np.asarray(rows, dtype=np.float16)


class _OldTokens:
    """Token arrays of earlier segments (memory-mapped), None for a segment without them."""

    def __init__(self, run: RunState) -> None:
        self.run = run
        self.chunks = {s.id: s.chunks for s in run.previous.segments} if run.previous else {}
        self.arrays: dict[str, TokenArrays | None] = {}

    def get(self, segment: str) -> TokenArrays | None:
        if segment not in self.arrays:
            self.arrays[segment] = load_token_vectors(
                self.run.data.segment(segment), self.chunks.get(segment)
            )
        return self.arrays[segment]


# --- publishing ----------------------------------------------------------------------------


def _publish(run: RunState, new_segment: SegmentRef | None) -> Manifest:
    segments = _live_segments(run, new_segment)
    pages_by_source = _final_pages(run)
    segments, pages_by_source, run.compacted = compact(
        run.data,
        run.version,
        segments,
        pages_by_source,
        run.states,
        run.settings.max_segments,
        run.embedder.info.dim,
        run.threads,
    )
    states = _final_states(run, pages_by_source)
    previous_text = run.previous.text_index if run.previous else None
    text_name = f"{run.version:08d}"
    write_text_index(
        run.data,
        text_name,
        previous_text,
        run.deleted_pages,
        run.removed_sources,
        (
            (c.record, c.body)
            for pages in run.pending_pages.values()
            for p in pages
            for c in p.chunks
        ),
    )
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


def _live_segments(run: RunState, new_segment: SegmentRef | None) -> list[SegmentRef]:
    previous = run.previous.segments if run.previous else []
    out = []
    for ref in previous:
        dead = sorted(run.tombstones.get(ref.id, ()))
        if len(dead) < ref.chunks:
            out.append(msgspec.structs.replace(ref, tombstones=dead))
    if new_segment:
        out.append(new_segment)
    return out


def _final_pages(run: RunState) -> dict[str, list[PageRecord] | None]:
    """Per touched source its complete new page list; None for sources left as they were."""
    out: dict[str, list[PageRecord] | None] = {}
    for source in run.states:
        if source not in run.kept_pages:
            out[source] = None
            continue
        fresh = [
            msgspec.structs.replace(p.record, chunks=[c.ref for c in p.chunks])
            for p in run.pending_pages.get(source, [])
        ]
        out[source] = sorted(run.kept_pages[source] + fresh, key=lambda p: p.path)
    return out


def _final_states(run: RunState, pages_by_source) -> dict[str, SourceState]:
    states = {}
    for name, state in run.states.items():
        pages = pages_by_source.get(name)
        if pages is None:
            states[name] = state
            continue
        pages_file = f"{name}-{run.version:08d}.msgpack" if pages else ""
        if pages:
            write_pages(run.data, pages_file, pages)
        states[name] = msgspec.structs.replace(
            state,
            pages_file=pages_file,
            files=len(pages),
            chunks=sum(len(p.chunks) for p in pages),
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


def _report(run, started, published, embed_s, windows, manifest: Manifest | None = None):
    return RunReport(
        version=manifest.version if manifest else (run.previous.version if run.previous else None),
        previous_version=run.previous.version if run.previous else None,
        published=published,
        sources=run.reports,
        chunks=manifest.chunks if manifest else (run.previous.chunks if run.previous else 0),
        windows_embedded=windows,
        segments=len(manifest.segments) if manifest else 0,
        compacted=run.compacted,
        took_s=round(time.monotonic() - started, 3),
        embed_s=round(embed_s, 3),
        peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    )
