"""The per-source part of a run: each source's default ref, then its other refs, diffed
against what the previous version indexed and applied (old pages tombstoned, new pages
streamed, then embedded), within the source's budget (context.SourceBudget).

A source fails on its own and keeps serving what it had: a ref that fails before it changed
anything is recorded as failed and the run goes on; a source that fails after it began to
change what the run publishes (or runs out of time) raises SourceAbandoned, and the run
starts again without it (run.py). Errors of the run itself (its own files, a full disk) are
no source's and stop the run.
"""

from __future__ import annotations

import logging
import stat
from pathlib import Path
from typing import Any

import msgspec
from dulwich.repo import Repo

from docdex.errors import DocdexError
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
from docdex.index_format.ref_names import base_of, split_key
from docdex.index_format.store import (
    load_pages,
)
from docdex.indexer.chunking.include_syntax import PageIncludes, PathReader
from docdex.indexer.git.diffs import Change, FileEntry
from docdex.indexer.git.history import PageDates
from docdex.indexer.git.repo import default_branch, is_empty, open_repo, ref_tips, resolve_branch
from docdex.indexer.sources import changes
from docdex.indexer.sources.commit_changes import commit_changes
from docdex.indexer.sources.include_files import include_reader
from docdex.indexer.sources.refs import FoundRef, RefFamily, discover
from docdex.indexer.sources.remote import local_repository
from docdex.indexer.sources.worktree_changes import worktree_changes
from docdex.model.protocol import EmbedderUnavailable
from docdex.runtime.redaction import redact
from docdex.runtime.times import iso_utc

from .context import (
    IndexingError,
    OverBudget,
    RunContext,
    RunState,
    SourceAbandoned,
    SourceBudget,
    SourceRun,
)
from .nospace import is_disk_full
from .page_records import config_hash, parse_file
from .passage_model import embeds_remotely
from .report import SourceReport

log = logging.getLogger("docdex.pipeline")


def drop_entry(ctx: RunContext, run: RunState, key: str) -> None:
    """A removed source, or a ref that is gone or no longer selected: its pages leave."""
    state = run.states.pop(key)
    for page in load_pages(ctx.data, state.pages_file):
        _remove_page(run, page)
    run.text.delete_source(key)
    run.removed_sources.append(key)
    run.reports.append(SourceReport(name=key, status="removed", deleted=state.files))


def index_source(ctx: RunContext, run: RunState, source: SourceConfig) -> None:
    """The source's default ref, then its other refs (each failing on its own), and with a
    time budget the embedding of their new text, all within the source's budget."""
    family = RefFamily.of(ctx.data, source.name, ctx.previous)
    budget = SourceBudget(source.name, ctx.source_timeout_s, ctx.clock)
    src = _source_run(ctx, run, source, None, family, budget)
    given_up = run.given_up.get(source.name)
    if given_up is not None:  # failed in an earlier attempt of this run (run.py)
        _source_failed(ctx, run, src, given_up)
        return
    run.spending.current = budget
    try:
        _read_source(ctx, run, src)
        if budget.timeout_s is not None or embeds_remotely(ctx.passage_model.spec):
            _embed(run, source)
    finally:
        run.spending.current = None


def _read_source(ctx: RunContext, run: RunState, src: SourceRun) -> None:
    """The source's refs diffed and their new pages streamed; what fails is the source's."""
    source = src.config
    try:
        with open_repo(local_repository(ctx.data, source)) as repo:
            found = discover(repo, source, default_branch(repo, source.branch))
            src.report.ignored_refs = found.ignored
            _index_repo(ctx, run, src, repo)
            _index_refs(ctx, run, src, repo, found.refs)
    except Exception as exc:
        error = _failure(ctx, src, exc)
        if _applied(run, source):
            raise SourceAbandoned(source.name, error) from exc
        _source_failed(ctx, run, src, error)


def _embed(run: RunState, source: SourceConfig) -> None:
    """The source's new text, embedded within its time budget or by an endpoint (else the
    stream writes several sources' pages into one segment as they come): running out of
    time or the endpoint failing is the source's failure; anything else that fails as its
    segments are written is the run's (its own files, its disk)."""
    try:
        run.stream.flush()
    except (OverBudget, EmbedderUnavailable) as exc:
        raise SourceAbandoned(source.name, str(exc)) from exc


def _source_run(
    ctx: RunContext,
    run: RunState,
    source: SourceConfig,
    ref: FoundRef | None,
    family: RefFamily,
    budget: SourceBudget,
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
        budget=budget,
    )


# --- failures ------------------------------------------------------------------------------


def _failure(ctx: RunContext, src: SourceRun, exc: Exception) -> str:
    """The sentence a source's failure reports. Raises what is no source's failure: the
    run's own files failing (a full disk), or a source given up on (SourceAbandoned)."""
    if isinstance(exc, SourceAbandoned | IndexingError) or is_disk_full(exc, ctx.data):
        raise exc
    if isinstance(exc, DocdexError):
        return str(exc)
    if isinstance(exc, OSError):
        if exc.filename and _in_the_index(ctx, Path(exc.filename)):
            raise exc  # the run's own files: the run fails, nothing is published
        return f"cannot read {exc.filename or src.config.location}: {exc.strerror or exc}"
    log.debug("source %s: unexpected error", src.key, exc_info=True)
    return (
        f"indexing stopped on an unexpected error ({type(exc).__name__}: {exc}); its last "
        f"indexed pages keep serving: `docdex index --full {src.config.name}` reads it again "
        "from scratch, and `--log-level DEBUG` shows where it stopped"
    )


def _in_the_index(ctx: RunContext, path: Path) -> bool:
    data = ctx.data
    return any(path.is_relative_to(d) for d in (data.segments, data.text, data.pages))


def _applied(run: RunState, source: SourceConfig) -> bool:
    """Whether any ref of the source began to change what the run publishes."""
    return any(split_key(key)[0] == source.name for key in run.kept_pages)


def _source_failed(ctx: RunContext, run: RunState, default: SourceRun, error: str) -> None:
    """The whole source failed (its repository, its budget): each of its entries keeps
    what it had and reports the error; a default ref never indexed gets a failed state."""
    _record_failure(ctx, run, default, error)
    for key, state in list(run.states.items()):
        if key != default.key and base_of(key, state) == default.config.name:
            _check_it_may_fail(ctx, run, key, state, error)
            run.states[key] = _failed(state, error)


def _ref_failed(ctx: RunContext, run: RunState, src: SourceRun, exc: Exception) -> None:
    error = _failure(ctx, src, exc)
    if src.key in run.kept_pages:
        raise SourceAbandoned(src.config.name, error) from exc
    _record_failure(ctx, run, src, error)


def _record_failure(ctx: RunContext, run: RunState, src: SourceRun, error: str) -> None:
    _check_it_may_fail(ctx, run, src.key, src.previous, error)
    src.report.status = "failed"
    src.report.error = error
    state = src.previous or _new_state(src, src.config.branch, config_hash="", commit="")
    run.states[src.key] = _failed(state, error)


def _check_it_may_fail(
    ctx: RunContext, run: RunState, key: str, state: SourceState | None, error: str
) -> None:
    """An entry with pages may fail alone unless the run rebuilds what holds them."""
    if state is None or not state.chunks:
        return
    if ctx.model_changed:
        raise IndexingError(  # its old pages' vectors are another model's
            f"{key}: {error}; the embedder changed, so every source is embedded again and "
            "none may keep its old pages: nothing was published, the last version keeps "
            "serving"
        )
    if run.salvaged:
        raise IndexingError(  # its old pages name chunks the salvage left behind
            f"{key}: {error}; the run starts from a damaged version and must read every "
            "source again: fix or remove it (the last good version keeps serving)"
        )
    if run.text.previous is None:
        raise IndexingError(  # its pages would be missing from the rebuilt text index
            f"{key}: {error}; the text index is being rebuilt for a new analysis, which "
            "needs every source: fix or remove it (the last version keeps serving)"
        )


def _failed(state: SourceState, error: str) -> SourceState:
    """A failed entry keeps serving what it had; the error is reported beside it (redacted:
    the version holds it, and an embedder's sentence may quote a key)."""
    since = state.failed_since or iso_utc()
    return msgspec.structs.replace(state, last_error=redact(error), failed_since=since)


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


# --- refs ----------------------------------------------------------------------------------


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
        src = _source_run(ctx, run, source, ref, default.family, default.budget)
        try:
            _index_ref(ctx, run, src, repo, ref)
        except OverBudget:
            raise  # the whole source is out of time
        except Exception as exc:
            _ref_failed(ctx, run, src, exc)


def _index_ref(ctx: RunContext, run: RunState, src: SourceRun, repo: Repo, ref: FoundRef) -> None:
    src.report.previous_commit = src.previous.commit if src.previous else ""
    base = _diff_base(ctx, src)
    if base is not None and base.commit == ref.commit:
        _take(ctx, run, src, base, None)  # not moved
        return
    dates_from = None if base else src.family.dates_for(ref.commit)
    max_bytes = ctx.settings.max_file_bytes
    found = commit_changes(
        repo,
        src.config,
        max_bytes,
        ref.name,
        ref.commit,
        base,
        src.old_pages,
        dates_from,
        src.budget.check,
    )
    _take(ctx, run, src, base, found)


# --- the default ref -----------------------------------------------------------------------


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
        found = commit_changes(
            repo, source, max_bytes, branch, head, base, src.old_pages, tick=src.budget.check
        )
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
            run.states[src.key] = msgspec.structs.replace(previous, last_error="", failed_since="")
        return
    if src.config.refs:  # the source's refs share most of their text: lend their vectors
        paths = None if base is None else changes.touched_paths(found.changes)
        src.family.lend_vectors(run.reusable, paths)
    if base is None:  # read whole: its texts may be any source's
        run.stream.reuse_any_source()
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
    settings that change which files are read and how, or a state that indexed no commit,
    such as one whose branch was deleted)."""
    previous = src.previous
    if ctx.rebuild or previous is None or previous.config_hash != src.config_hash:
        return None
    return previous if previous.commit else None


def _branch_missing(run: RunState, src: SourceRun, repo: Repo, branch: str) -> None:
    if not src.old_pages:
        raise SourceError(_no_branch(src.config, repo, branch))
    _remove_all(run, src, branch)


def _no_branch(source: SourceConfig, repo: Repo, branch: str) -> str:
    """Why a source with no pages has nothing to index, and what to do."""
    where = source.location
    if is_empty(repo):
        return f"nothing has been pushed to {where} yet: push a branch, and it is indexed"
    branches = ", ".join(ref_tips(repo, "refs/heads/")) or "none"
    if source.branch:
        return (
            f"branch {branch!r} does not exist in {where} (its branches: {branches}): push "
            "it, or set the source's `branch` setting to one of them"
        )
    return (
        f"HEAD of {where} names branch {branch!r}, which does not exist (its branches: "
        f"{branches}): set the source's `branch` setting, or point HEAD at a branch "
        "(`git symbolic-ref HEAD refs/heads/NAME`)"
    )


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
        counter = _counter(change)
        setattr(report, counter, getattr(report, counter) + 1)
        old_path = None if change.kind == "add" else (change.old_path or change.path)
        if old_path and old_path in src.old_pages:
            _remove_page(run, src.old_pages[old_path])
    problems: list[FileProblem] = []
    read_path = include_reader(ctx.data, src.config, found.commit)  # adr/0018
    for change in found.changes:
        if change.kind == "delete":
            continue
        src.budget.check()
        assert change.blob is not None and change.mode is not None  # not a delete
        entry = FileEntry(path=change.path, blob=change.blob, mode=change.mode)
        content = found.read(entry)
        if isinstance(content, FileProblem):
            problems.append(content)
            continue
        includes = _page_includes(ctx, src, read_path, content)
        dates = found.dates.get(change.path)
        pending = parse_file(ctx, src, entry, content, dates, includes)
        if isinstance(pending, FileProblem):  # a draft
            problems.append(pending)
            continue
        if includes is not None and includes.problem():
            problems.append(FileProblem(change.path, includes.problem()))
        if dates is not None and dates.note:
            pending.record = msgspec.structs.replace(pending.record, dates_note=dates.note)
        run.stream.add(pending)
    report.commit = found.commit
    report.status = "indexed"
    report.problems = problems


def _page_includes(
    ctx: RunContext, src: SourceRun, read_path: PathReader | None, content: str
) -> PageIncludes | None:
    """The reader of one page's includes, within the source's budget and the page's own."""
    if read_path is None:
        return None
    size = len(content.encode("utf-8"))
    return src.budget.includes.page(read_path, size, ctx.settings.max_file_bytes)


def _redate(page: StoredPage, dates: PageDates | None) -> StoredPage:
    if dates is None:
        return page
    return msgspec.structs.replace(
        page,
        created=dates.created,
        modified=dates.modified,
        commit=dates.commit,
        dates_note=dates.note,
    )


_COUNTER = {"add": "added", "modify": "modified", "delete": "deleted", "rename": "renamed"}


def _counter(change: Change) -> str:
    """The report's count a change adds to. A file read again whose blob is the one indexed
    (a full run, changed settings) did not change. A link's page follows its target, which
    the link's own blob does not show: a link read again counts as modified."""
    same_blob = change.kind == "modify" and change.blob == change.old_blob
    if same_blob and not stat.S_ISLNK(change.mode or 0):
        return "reread"
    return _COUNTER[change.kind]


def _remove_page(run: RunState, page: IndexedPage) -> None:
    run.deleted_pages.append(page.doc_id)
    run.text.delete_page(page.doc_id)
    for ref in page.refs():
        run.tombstones.setdefault(ref.segment, set()).add(ref.index)
        run.reusable.setdefault(ref.content_hash, ref)


def _remove_all(run: RunState, src: SourceRun, branch: str) -> None:
    """The tracked branch is gone: its pages leave the next version, and we say so. The
    state records no commit, so the branch, pushed again, is read in full."""
    report = src.report
    run.kept_pages[src.name] = []
    for page in src.old_pages.values():
        _remove_page(run, page)
    report.status = "branch-deleted"
    report.deleted = len(src.old_pages)
    report.error = (
        f"branch {branch!r} no longer exists in {src.config.location}: its pages were removed; "
        "push the branch again (or set the source's `branch` setting) to index it"
    )
    state = _new_state(src, branch, config_hash=src.config_hash, commit="")
    run.states[src.name] = _failed(state, report.error)


def _carry_problems(
    previous: SourceState | None, found_changes: list[Change], problems: list[FileProblem]
) -> list[FileProblem]:
    touched = changes.touched_paths(found_changes)
    old = [p for p in (previous.problems if previous else []) if p.path not in touched]
    return sorted(old + problems, key=lambda p: p.path)
