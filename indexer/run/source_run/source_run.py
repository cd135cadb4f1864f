"""One ref of a source within a run (`SourceRun`): its default ref (the branch, or a
checkout's working tree) or another of its `refs`, diffed against what the previous version
indexed of it, then applied: the old pages of the touched paths tombstoned (before any new
page of the source reaches the text index), the new files' pages streamed, its new state
recorded."""

from __future__ import annotations

import logging
import stat
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec
from dulwich.repo import Repo

from docdex.index_format.config import SourceConfig, SourceError, source_kind
from docdex.index_format.records import FileProblem, Reading, SourceState, StoredPage
from docdex.indexer.chunking.include_syntax import PageIncludes, PathReader
from docdex.indexer.git.diffs import Change, FileEntry
from docdex.indexer.git.history import PageDates
from docdex.indexer.git.repo import resolve_branch
from docdex.indexer.sources import changes
from docdex.indexer.sources.commit_changes import commit_changes
from docdex.indexer.sources.include_files import include_reader
from docdex.indexer.sources.refs import FoundRef, RefFamily
from docdex.indexer.sources.worktree_changes import worktree_changes
from docdex.runtime.logs import log_event
from docdex.runtime.times import iso_utc

from ..context import RunContext, RunState
from ..publishing import publish_partial
from ..report import SourceReport
from ..source_budget import SourceBudget
from .failures import check_it_may_fail, failed_state, missing_branch
from .page_records import config_hash, parse_file

log = logging.getLogger("docdex.pipeline")

_COUNTER = {"add": "added", "modify": "modified", "delete": "deleted", "rename": "renamed"}


@dataclass(frozen=True)
class MissingBranch:
    """The default ref's branch is not in the repository."""

    branch: str


class SourceRun:
    """One ref of a source within a run (its default ref, or another of its `refs`): its
    configuration, what the previous version holds of it, and the report the run fills in.

    The source's run asks it what changed (`diff`) and applies that: the old pages of the
    touched paths leave (`tombstone`), the new files' pages are streamed (`stream`), and its
    new state is recorded (`record`). A ref that fails records its failure (`fail`); a
    default branch that is gone takes its pages with it (`remove`).
    """

    def __init__(
        self,
        ctx: RunContext,
        run: RunState,
        config: SourceConfig,
        ref: FoundRef | None,
        family: RefFamily,
        budget: SourceBudget,
    ) -> None:
        self.ctx = ctx
        self.run = run
        self.config = config
        self.ref = ref  # None: the default ref (the branch, or a checkout's working tree)
        # its manifest entry: the source's name, or "source@ref" (index-format/ref_names.py)
        self.key = ref.key if ref else config.name
        self.family = family  # the source's entries in the previous version
        self.budget = budget  # shared by the source's refs
        self.report = SourceReport(name=self.key)
        run.reports.append(self.report)
        self.previous: SourceState | None = run.states.get(self.key)
        # of the settings that decide which files are read, and how
        self.config_hash = config_hash(config, ctx.settings, ref.full if ref else config.branch)

    @property
    def old_pages(self) -> dict[str, StoredPage]:
        """path -> page of the previous version, read at the first use (a ref that did not
        move never reads its page table)."""
        return self.family.pages_of(self.key) if self.key in self.family.states else {}

    @property
    def base(self) -> SourceState | None:
        """The state whose files the run diffs against; None re-reads every file (a rebuild,
        settings that change which files are read and how, or a state that indexed no
        commit, such as one whose branch was deleted)."""
        previous = self.previous
        if self.ctx.rebuild or previous is None or previous.config_hash != self.config_hash:
            return None
        return previous if previous.commit else None

    def diff(self, repo: Repo) -> changes.Found | MissingBranch | None:
        """What changed in the ref since its base (None: nothing, the ref did not move)."""
        self.report.previous_commit = self.previous.commit if self.previous else ""
        if self.ref is not None:
            return self._ref_changes(repo, self.ref)
        source, max_bytes = self.config, self.ctx.settings.max_file_bytes
        if self.ctx.worktree and source_kind(source.location) == "checkout":
            skip = [self.ctx.data.root]
            dirty = self.ctx.dirty_paths(source.name)
            return worktree_changes(repo, source, max_bytes, self.base, self.old_pages, dirty, skip)
        branch, head = resolve_branch(repo, source.branch or None)
        if head is None:
            return MissingBranch(branch)
        return commit_changes(
            repo, source, max_bytes, branch, head, self.base, self.old_pages, tick=self.budget.check
        )

    def _ref_changes(self, repo: Repo, ref: FoundRef) -> changes.Found | None:
        base = self.base
        if base is not None and base.commit == ref.commit:
            return None  # not moved
        dates_from = None if base else self.family.dates_for(ref.commit)
        max_bytes = self.ctx.settings.max_file_bytes
        return commit_changes(
            repo,
            self.config,
            max_bytes,
            ref.name,
            ref.commit,
            base,
            self.old_pages,
            dates_from,
            self.budget.check,
        )

    def tombstone(self, found: changes.Found) -> None:
        """Keep the pages the changes do not touch and tombstone the old pages they do, whose
        vectors (and, for a source with refs, its other refs') become reusable."""
        run, base = self.run, self.base
        if self.config.refs:  # the source's refs share most of their text: lend their vectors
            paths = None if base is None else changes.touched_paths(found.changes)
            self.family.lend_vectors(run.reusable, paths)
        if base is None:  # read whole: its texts may be any source's
            run.stream.reuse_any_source()
        touched = changes.touched_paths(found.changes)
        old_pages = self.old_pages
        run.kept_pages[self.key] = [
            _redated(page, found.redated.get(path))
            for path, page in old_pages.items()
            if path not in touched
        ]
        for change in found.changes:
            counter = _counter(change)
            setattr(self.report, counter, getattr(self.report, counter) + 1)
            old_path = None if change.kind == "add" else (change.old_path or change.path)
            if old_path and old_path in old_pages:
                run.remove_page(old_pages[old_path])

    def stream(self, found: changes.Found) -> None:
        """Read, parse and stream the new files' pages; what cannot be read is a problem.
        An entry the previous version does not hold is published as it is read, every
        `partial_every_s` seconds (publishing.publish_partial)."""
        problems: list[FileProblem] = []
        read_path = include_reader(self.ctx.data, self.config, found.commit)  # adr/0018
        files = [change for change in found.changes if change.kind != "delete"]
        cadence = self._partial_cadence()
        for done, change in enumerate(files):
            self.ctx.progress.reading(self.key, done, len(files))
            self.budget.check()
            assert change.blob is not None and change.mode is not None  # not a delete
            entry = FileEntry(path=change.path, blob=change.blob, mode=change.mode)
            problem = self._stream_file(found, entry, read_path)
            if problem is not None:
                problems.append(problem)
            if cadence is not None and cadence.due() and done + 1 < len(files):
                self._publish_partial(found, Reading(found.commit, done + 1, len(files)), problems)
                cadence.restart()
        self.ctx.progress.reading(self.key, len(files), len(files))
        self.report.commit = found.commit
        self.report.status = "indexed"
        self.report.problems = problems

    def _partial_cadence(self) -> PartialCadence | None:
        """When to publish the pages read so far: only for an entry the previous version
        holds no complete read of (a new source or ref, a first index, one a stopped run
        left partial), and only if `partial_every_s` is set."""
        every_s = self.ctx.settings.partial_every_s
        if not every_s or (self.previous is not None and self.previous.commit):
            return None
        return PartialCadence(every_s, self.ctx.clock)

    def _publish_partial(
        self, found: changes.Found, reading: Reading, problems: list[FileProblem]
    ) -> None:
        """The pages read so far published, the entry's state saying how far it is."""
        state = self._new_state(
            found.branch, config_hash=self.config_hash, commit="", problems=list(problems)
        )
        state = msgspec.structs.replace(state, reading=reading)
        manifest = publish_partial(self.ctx, self.run, {self.key: state})
        self.ctx.progress.published(manifest.version)
        log_event(
            log,
            "published while reading",
            source=self.key,
            version=manifest.version,
            pages=reading.done,
            of=reading.total,
        )

    def _stream_file(
        self, found: changes.Found, entry: FileEntry, read_path: PathReader | None
    ) -> FileProblem | None:
        """One new file's page streamed; or why it is not (an include past a budget is a
        problem of its own, beside the page)."""
        content = found.read(entry)
        if isinstance(content, FileProblem):
            return content
        includes = self._page_includes(read_path, content)
        dates = found.dates.get(entry.path)
        pending = parse_file(self.ctx, self.config, self.key, entry, content, dates, includes)
        if isinstance(pending, FileProblem):  # a draft
            return pending
        problem = None
        if includes is not None and includes.problem():
            problem = FileProblem(entry.path, includes.problem())
        if dates is not None and dates.note:
            pending.record = msgspec.structs.replace(pending.record, dates_note=dates.note)
        self.run.stream.add(pending)
        return problem

    def _page_includes(self, read_path: PathReader | None, content: str) -> PageIncludes | None:
        """The reader of one page's includes, within the source's budget and the page's own."""
        if read_path is None:
            return None
        size = len(content.encode("utf-8"))
        return self.budget.includes.page(read_path, size, self.ctx.settings.max_file_bytes)

    def record(self, found: changes.Found | None) -> None:
        """The ref's new state, once what changed is applied (None: nothing changed)."""
        previous = self.previous
        if found is None:
            self.report.commit = previous.commit if previous else ""
            if previous and previous.last_error:
                cleared = msgspec.structs.replace(previous, last_error="", failed_since="")
                self.run.states[self.key] = cleared
            return
        self.run.states[self.key] = self._new_state(
            found.branch,
            config_hash=self.config_hash,
            commit=found.commit,
            problems=_carried_problems(self.base, found.changes, self.report.problems),
            links=found.links,
        )

    def fail(self, error: str) -> None:
        """The ref failed: it keeps serving what it had, and reports the error (a default ref
        never indexed gets a failed state)."""
        check_it_may_fail(self.ctx, self.run, self.key, self.previous, error)
        self.report.status = "failed"
        self.report.error = error
        state = self.previous or self._new_state(self.config.branch, config_hash="", commit="")
        self.run.states[self.key] = failed_state(state, error)

    def remove(self, repo: Repo, branch: str) -> None:
        """The default ref's branch is gone: its pages leave the next version, and we say so.
        The state records no commit, so the branch, pushed again, is read in full. A source
        with no pages has nothing to remove: that is its error."""
        old_pages = self.old_pages
        if not old_pages:
            raise SourceError(missing_branch(self.config, repo, branch))
        report = self.report
        self.run.kept_pages[self.key] = []
        for page in old_pages.values():
            self.run.remove_page(page)
        report.status = "branch-deleted"
        report.deleted = len(old_pages)
        report.error = (
            f"branch {branch!r} no longer exists in {self.config.location}: its pages were "
            "removed; push the branch again (or set the source's `branch` setting) to index it"
        )
        state = self._new_state(branch, config_hash=self.config_hash, commit="")
        self.run.states[self.key] = failed_state(state, report.error)

    def _new_state(self, branch: str, **fields: Any) -> SourceState:
        """The ref's state before publishing fills in its page table and counts."""
        source, ref = self.config, self.ref
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
        defaults: dict[str, Any] = {
            "indexed_at": iso_utc(),
            "pages_file": "",
            "files": 0,
            "chunks": 0,
        }
        return SourceState(
            name=self.key,
            location=source.location,
            kind=kind,
            branch=branch,
            base=source.name,
            **names,
            **{**defaults, **fields},
        )


class PartialCadence:
    """Seconds of reading on the run's clock since the last version published while an
    entry is read: the clock is read once a page, and again after each publication, so
    that publishing is not counted as reading."""

    def __init__(self, every_s: float, clock: Callable[[], float]) -> None:
        self.every_s = every_s
        self.clock = clock
        self.since = clock()

    def due(self) -> bool:
        return self.clock() - self.since >= self.every_s

    def restart(self) -> None:
        self.since = self.clock()


def _redated(page: StoredPage, dates: PageDates | None) -> StoredPage:
    if dates is None:
        return page
    return msgspec.structs.replace(
        page,
        created=dates.created,
        modified=dates.modified,
        commit=dates.commit,
        dates_note=dates.note,
    )


def _counter(change: Change) -> str:
    """The report's count a change adds to. A file read again whose blob is the one indexed
    (a full run, changed settings) did not change. A link's page follows its target, which
    the link's own blob does not show: a link read again counts as modified."""
    same_blob = change.kind == "modify" and change.blob == change.old_blob
    if same_blob and not stat.S_ISLNK(change.mode or 0):
        return "reread"
    return _COUNTER[change.kind]


def _carried_problems(
    previous: SourceState | None, found_changes: list[Change], problems: list[FileProblem]
) -> list[FileProblem]:
    """The ref's problems: those of files the changes did not touch, and the new ones."""
    touched = changes.touched_paths(found_changes)
    old = [p for p in (previous.problems if previous else []) if p.path not in touched]
    return sorted(old + problems, key=lambda p: p.path)
