"""The per-source part of a run: each source's default ref, then its other refs, diffed
against what the previous version indexed and applied (old pages tombstoned, new pages
streamed); each ref fails on its own, and a failed source keeps serving what it had."""

from __future__ import annotations

from typing import Any

import msgspec
from dulwich.repo import Repo

from docdex.index_format.config import (
    SourceConfig,
    SourceError,
    source_kind,
)
from docdex.index_format.records import (
    FileProblem,
    IndexedPage,
    SourceState,
    StoredPage,
)
from docdex.index_format.refs import base_of
from docdex.index_format.store import (
    load_pages,
)
from docdex.index_format.times import iso_utc
from docdex.indexer.git.diffs import Change, FileEntry
from docdex.indexer.git.history import PageDates
from docdex.indexer.git.repo import default_branch, open_repo, resolve_branch
from docdex.indexer.sources import changes
from docdex.indexer.sources.commit_changes import commit_changes
from docdex.indexer.sources.includes import include_reader
from docdex.indexer.sources.refs import FoundRef, RefFamily, discover
from docdex.indexer.sources.remote import local_repository
from docdex.indexer.sources.worktree_changes import worktree_changes

from .context import IndexingError, RunContext, RunState, SourceRun
from .records import config_hash, parse_file
from .report import SourceReport


def drop_entry(ctx: RunContext, run: RunState, key: str) -> None:
    """A removed source, or a ref that is gone or no longer selected: its pages leave."""
    state = run.states.pop(key)
    for page in load_pages(ctx.data, state.pages_file):
        _remove_page(run, page)
    run.text.delete_source(key)
    run.removed_sources.append(key)
    run.reports.append(SourceReport(name=key, status="removed", deleted=state.files))


def index_source(ctx: RunContext, run: RunState, source: SourceConfig) -> None:
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
        config_hash=config_hash(source, ctx.settings, ref.full if ref else source.branch),
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


def _new_state(src: SourceRun, branch: str, **fields: Any) -> SourceState:
    """A ref's state before publishing fills in its page table and counts."""
    source, ref = src.config, src.ref
    kind: str
    try:
        kind = source_kind(source.location)
    except SourceError:
        kind = "unknown"
    names: dict[str, Any]
    if ref is None:
        names = {"ref": branch, "ref_kind": "branch", "default_ref": True}
    else:
        branch = ref.name if ref.kind == "branch" else ""
        names = {"ref": ref.name, "ref_kind": ref.kind, "default_ref": False}
    defaults: dict[str, Any] = {"indexed_at": iso_utc(), "pages_file": "", "files": 0, "chunks": 0}
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
            drop_entry(ctx, run, key)
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
    found = commit_changes(
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
        found = worktree_changes(repo, source, max_bytes, base, src.old_pages, dirty, skip)
    else:
        branch, head = resolve_branch(repo, source.branch or None)
        if head is None:
            _branch_missing(run, src, repo, branch)
            return
        found = commit_changes(repo, source, max_bytes, branch, head, base, src.old_pages)
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
    read_path = include_reader(ctx.data, src.config, found.commit)  # adr/0018
    for change in found.changes:
        if change.kind == "delete":
            continue
        assert change.blob is not None and change.mode is not None  # not a delete
        entry = FileEntry(path=change.path, blob=change.blob, mode=change.mode)
        content = found.read(entry)
        if isinstance(content, FileProblem):
            problems.append(content)
            continue
        pending = parse_file(ctx, src, entry, content, found.dates.get(change.path), read_path)
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


def _remove_page(run: RunState, page: IndexedPage) -> None:
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
