"""`History`: what the server and the CLI ask of a source's history, one bounded call each.

- `changes`: the pages changed between two points, in path order, a window of them at a
  time (`offset`, `limit`), each with its commits, lines added and removed and changed
  sections; the window's commits once each.
- `changed_paths`: only which pages changed (a search filter), from the tree diff alone.
- `page`: a page's text as of any commit, tag, branch or date.
- `page_history`: the commits that touched one page, renames followed.

A range is kept once computed, keyed by the commits it resolved to (which never change:
a branch that moves resolves to another commit, hence another range), so the next window of
the same range, or the same question again, reads only what it had not read: at most
`cached_ranges` ranges, the least recently used dropped first. What a call left out because
its time ran out is not kept. Calls are synchronous and may run in threads side by side;
the repositories they read stay open between calls (`close` closes them), each read by one
call at a time.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec
from dulwich.objects import Commit, ObjectID
from dulwich.repo import Repo

from docdex.errors import InvalidArgument, NotFound, shown

from .bounds import Budget, Clock, HistoryBounds
from .change_sets import DiffedPage, PageChange, PageDetail, Selection, diff_selected, page_detail
from .commit_walk import RangeCommits, Step, attribute
from .page_contents import page_bytes, page_text
from .repositories import Ancestry, CommitInfo, OpenRepositories, SourceRepository
from .revisions import Point, resolve_point, resolve_ref
from .tree_paths import TreeCache

# pages in one window of changes unless asked otherwise: on PowerShell-Docs' ranges of 200
# commits, 19,000 to 28,000 characters of JSON (search_docs answers in 20,000 by default)
DEFAULT_LIMIT = 30
MAX_LIMIT = 5_000
DEFAULT_HISTORY = 100  # commits of one page's history, unless asked otherwise
CACHED_RANGES = 32
DEFAULT_BOUNDS = HistoryBounds()


class ChangeSet(msgspec.Struct, frozen=True):
    source: str
    ref: Point  # the branch or tag read, at its tip
    since: Point
    until: Point
    total: int  # pages changed in the whole range
    offset: int  # of the first page here among them
    pages: list[PageChange]  # pages[offset : offset + limit] of the range, in path order
    commits: list[CommitInfo]  # the commits these pages name, newest first
    commits_walked: int  # commits of the range looked at
    complete: bool  # nothing left out: every commit of the range walked, every page here read
    notes: list[str] = []  # what is missing and why: history cut, a bound, contents missing


class ChangedPaths(msgspec.Struct, frozen=True):
    source: str
    since: Point
    until: Point
    paths: list[str]  # pages at `until` that were added, modified or renamed since
    deleted: list[str]  # pages of `since` gone at `until`
    notes: list[str] = []


class PageVersion(msgspec.Struct, frozen=True):
    source: str
    path: str
    at: Point
    blob: str
    text: str


class PageHistory(msgspec.Struct, frozen=True):
    source: str
    path: str
    until: Point
    commits: list[CommitInfo]  # newest first
    paths: list[str]  # the paths it had, newest first (renames)
    complete: bool  # its whole history is listed
    notes: list[str] = []


@dataclass
class _Range:
    """What is known of one range: its pages; its commits, once walked; for each page
    shown so far, its commits and its details."""

    pages: list[DiffedPage]
    notes: list[str]
    steps: list[Step] | None = None
    walk_notes: list[str] = field(default_factory=list)
    commits: dict[int, list[str]] = field(default_factory=dict)
    details: dict[int, PageDetail] = field(default_factory=dict)


@dataclass
class _Call:
    """One call's repository and what it reads through."""

    repo: Repo
    trees: TreeCache
    ancestry: Ancestry
    budget: Budget

    def commit(self, point: Point) -> Commit:
        found = self.repo.object_store[ObjectID(point.commit.encode("ascii"))]
        assert isinstance(found, Commit)
        return found

    def tree(self, point: Point) -> bytes | None:
        return self.commit(point).tree if point.commit else None


_RangeKey = tuple[str, str, str, Selection, int]


class History:
    def __init__(
        self,
        bounds: HistoryBounds = DEFAULT_BOUNDS,
        clock: Clock = time.monotonic,
        now: Callable[[], float] = time.time,
        cached_ranges: int = CACHED_RANGES,
    ) -> None:
        self.bounds = bounds
        self._clock = clock
        self._now = now
        self._cached = cached_ranges
        self._ranges: OrderedDict[_RangeKey, _Range] = OrderedDict()
        self._lock = threading.Lock()
        self._repositories = OpenRepositories()

    def close(self) -> None:
        """Close the repositories kept open (a call after this opens them again)."""
        self._repositories.close()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # --- what callers ask ------------------------------------------------------------------

    def changes(
        self,
        source: SourceRepository,
        since: str = "",
        until: str = "",
        ref: str = "",
        path_prefix: str = "",
        offset: int = 0,
        limit: int = DEFAULT_LIMIT,
    ) -> ChangeSet:
        """The pages changed between `since` ("" = the start of history) and `until` ("" =
        the tip of `ref`, itself "" for the source's default branch)."""
        _check_window(offset, limit)
        with self._repositories.reading(source.path) as repo:
            call = self._call(repo)
            tip, start, end = self._points(call, source, since, until, ref)
            known = self._range(call, source, start, end, path_prefix)
            window = list(range(offset, min(offset + limit, len(known.pages))))
            steps = self._steps(call, known, start, end)
            commits, walk_notes = self._commits(call, known, window, steps)
            trees = (call.tree(start), call.tree(end))
            details = [self._detail(call, known, n, trees, source.section_levels) for n in window]
        most = self.bounds.max_page_commits
        pages = [
            _page_change(known.pages[n], commits[n], detail, most)
            for n, detail in zip(window, details, strict=True)
        ]
        unread = sum(detail is None for detail in details)
        notes = [*_point_notes(start, end), *known.notes, *known.walk_notes, *walk_notes]
        if unread:
            notes.append(call.budget.spent_note(f"{unread} pages here are listed without lines"))
        infos = {step.info.id: step.info for step in steps}
        named = {commit for page in pages for commit in page.commits}
        return ChangeSet(
            source=source.name,
            ref=tip,
            since=start,
            until=end,
            total=len(known.pages),
            offset=offset,
            pages=pages,
            commits=sorted((infos[c] for c in named), key=_newest_first, reverse=True),
            commits_walked=len(steps),
            complete=not notes and all(page.lines_added is not None for page in pages),
            notes=notes,
        )

    def changed_paths(
        self,
        source: SourceRepository,
        since: str,
        until: str = "",
        ref: str = "",
        path_prefix: str = "",
    ) -> ChangedPaths:
        """Which pages changed between `since` and `until`: the tree diff only."""
        with self._repositories.reading(source.path) as repo:
            call = self._call(repo)
            _tip, start, end = self._points(call, source, since, until, ref)
            known = self._range(call, source, start, end, path_prefix)
        present = [page.path for page in known.pages if page.kind != "deleted"]
        deleted = [page.path for page in known.pages if page.kind == "deleted"]
        notes = [*_point_notes(start, end), *known.notes]
        return ChangedPaths(source.name, start, end, present, deleted, notes)

    def page(self, source: SourceRepository, path: str, at: str = "", ref: str = "") -> PageVersion:
        """The text of the page `path` as of `at` ("" = the tip of `ref`)."""
        with self._repositories.reading(source.path) as repo:
            call = self._call(repo)
            tip = resolve_ref(repo, ref, source.branch)
            point = tip if not at.strip() else self._resolve(call, at, tip)
            entry = self._file(call, point, path)
            tree = call.tree(point)
            assert tree is not None
            data = page_bytes(repo, call.trees, tree, path, entry, self.bounds.max_file_bytes)
        return PageVersion(
            source.name, path, point, entry[1].decode("ascii"), page_text(path, data)
        )

    def page_history(
        self,
        source: SourceRepository,
        path: str,
        until: str = "",
        ref: str = "",
        limit: int = DEFAULT_HISTORY,
    ) -> PageHistory:
        """The commits that touched the page `path` of `until`, newest first, at most
        `limit` of them."""
        _check_window(0, limit)
        with self._repositories.reading(source.path) as repo:
            call = self._call(repo)
            tip = resolve_ref(repo, ref, source.branch)
            end = tip if not until.strip() else self._resolve(call, until, tip)
            entry = self._file(call, end, path)
            page = DiffedPage(path, "added", "", None, entry)
            steps = RangeCommits(repo, "", end.commit, call.budget)
            found = attribute(repo, call.trees, steps, [page], call.budget, limit)
        notes = [note for note in (found.note, steps.note, steps.ancestry.stops_note()) if note]
        infos = found.infos
        return PageHistory(
            source=source.name,
            path=path,
            until=end,
            commits=[infos[commit] for commit in found.commits[0]],
            paths=found.names[0],
            complete=not notes,
            notes=notes,
        )

    # --- the pieces ------------------------------------------------------------------------

    def _call(self, repo: Repo) -> _Call:
        return _Call(repo, TreeCache(repo), Ancestry(repo), Budget(self.bounds, self._clock))

    def _resolve(self, call: _Call, asked: str, along: Point) -> Point:
        return resolve_point(
            call.repo, asked, call.commit(along), call.ancestry, call.budget, self._now()
        )

    def _points(
        self, call: _Call, source: SourceRepository, since: str, until: str, ref: str
    ) -> tuple[Point, Point, Point]:
        """The ref's tip, and the range's two ends."""
        tip = resolve_ref(call.repo, ref, source.branch)
        end = tip if not until.strip() else self._resolve(call, until, tip)
        if not end.commit:
            raise NotFound(f"until {shown(until)} is before the first commit: nothing to compare")
        return tip, self._resolve(call, since, end), end

    def _file(self, call: _Call, point: Point, path: str) -> tuple[int, bytes]:
        tree = call.tree(point) if point.commit else None
        entry = call.trees.file(tree, path.encode("utf-8", "surrogateescape")) if path else None
        if entry is None:
            where = point.asked or point.kind
            raise NotFound(f"{shown(path)} is no file at {where} ({point.commit[:12] or 'start'})")
        return entry

    def _range(
        self, call: _Call, source: SourceRepository, start: Point, end: Point, prefix: str
    ) -> _Range:
        selection = Selection(source.include, source.exclude, prefix)
        key = (source.path, start.commit, end.commit, selection, source.section_levels)
        with self._lock:
            known = self._ranges.get(key)
            if known is not None:
                self._ranges.move_to_end(key)
                return known
        new_tree = call.tree(end)
        assert new_tree is not None
        pages, note = diff_selected(call.repo, call.tree(start), new_tree, selection, call.budget)
        known = _Range(pages, [note] if note else [])
        if not call.budget.deterministic:
            return known  # renames were left unchecked for lack of time: not kept
        with self._lock:
            self._ranges[key] = known
            while len(self._ranges) > self._cached:
                self._ranges.popitem(last=False)
        return known

    def _steps(self, call: _Call, known: _Range, start: Point, end: Point) -> list[Step]:
        """The range's commits, walked once."""
        if known.steps is not None:
            return known.steps
        walk = RangeCommits(call.repo, start.commit, end.commit, call.budget)
        steps = list(walk)
        notes = [note for note in (walk.note, walk.ancestry.stops_note()) if note]
        if call.budget.deterministic:
            known.steps, known.walk_notes = steps, notes
        return steps

    def _commits(
        self, call: _Call, known: _Range, window: list[int], steps: list[Step]
    ) -> tuple[dict[int, list[str]], list[str]]:
        """Each page's commits, for the pages of `window`; and what was left out."""
        missing = [n for n in window if n not in known.commits]
        found = attribute(
            call.repo, call.trees, steps, [known.pages[n] for n in missing], call.budget
        )
        commits = {n: known.commits[n] for n in window if n in known.commits}
        commits.update(zip(missing, found.commits, strict=True))
        if found.complete:
            known.commits.update((n, commits[n]) for n in missing)
        return commits, [found.note] if found.note else []

    def _detail(
        self,
        call: _Call,
        known: _Range,
        n: int,
        trees: tuple[bytes | None, bytes | None],
        levels: int,
    ) -> PageDetail | None:
        found = known.details.get(n)
        if found is None:
            since_tree, until_tree = trees
            assert until_tree is not None
            found = page_detail(
                call.repo, call.trees, known.pages[n], (since_tree, until_tree), call.budget, levels
            )
            if found is not None:
                known.details[n] = found
        return found


def _check_window(offset: int, limit: int) -> None:
    if offset < 0:
        raise InvalidArgument(f"offset must be 0 or more, not {offset}")
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidArgument(f"limit must be between 1 and {MAX_LIMIT:,}, not {limit}")


def _point_notes(*points: Point) -> list[str]:
    return [f"{point.asked or point.kind}: {point.note}" for point in points if point.note]


def _newest_first(info: CommitInfo) -> tuple[str, str]:
    return (info.date, info.id)


def _page_change(
    page: DiffedPage, commits: list[str], detail: PageDetail | None, most: int
) -> PageChange:
    listed, omitted = commits[:most], max(0, len(commits) - most)
    if detail is None:
        return PageChange(
            page.path, page.kind, page.old_path, listed, omitted, note="lines not counted"
        )
    return PageChange(
        path=page.path,
        kind=page.kind,
        old_path=page.old_path,
        commits=listed,
        commits_omitted=omitted,
        lines_added=detail.lines_added,
        lines_removed=detail.lines_removed,
        sections=detail.sections,
        sections_omitted=detail.sections_omitted,
        front_matter=detail.front_matter,
        note=detail.note,
    )
