"""Page dates from history: when each page was created and last modified, and by which
commit. History is followed along first parents, backwards from the new commit, diffing
only the directories that hold traced paths; where a commit adds a traced path, the rename
matching both sides share (docdex.history's renames) compares only the traced adds with
that commit's deletes. An
incremental run walks only the commits since the indexed one and takes the rest from the
dates it already knows.

History is what the repository holds: grafts and shallow cut points are honoured, and a
parent whose commit or tree is missing ends the walk there, as if that commit were the
first. A page the walk dates at such an end, or whose rename could not be checked because
a file's content is missing (a partial clone), says so in its `note`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

import msgspec
from dulwich.objects import Commit, ObjectID
from dulwich.repo import Repo
from dulwich.walk import Walker

from docdex.history import match_renames
from docdex.runtime.times import iso_utc

from .repo import (
    MissingObject,
    find_commit,
    has_object,
    is_file,
    read_blob,
    require_commit,
    to_bytes,
    to_str,
)
from .trees import Entry, TreeReader

Tick = Callable[[], None]  # called once per commit walked (a run's time budget checks there)

# What a page's `note` says when history could not date it exactly.
HISTORY_ENDS = (
    "dated from incomplete history (a shallow clone, a graft or missing parents): the page "
    "may be older than `created` says, and its last change older than `modified`"
)
RENAME_UNCHECKED = (
    "a rename in its history could not be checked (file contents missing: a partial "
    "clone?): `created` may be later than the page's first commit"
)


class PageDates(msgspec.Struct, frozen=True):
    created: str  # ISO 8601 UTC, committer date of the commit that added the path
    modified: str  # ISO 8601 UTC, committer date of the last commit that changed it
    commit: str  # sha of that last commit
    note: str = ""  # why the dates may be off ("" = exact): HISTORY_ENDS, RENAME_UNCHECKED


@dataclass(slots=True)
class _Trace:
    """One page followed back through history."""

    path: str
    name: bytes  # its name in the oldest commit looked at so far (changes at renames)
    newest: Commit | None = None  # last commit that changed it
    added: Commit | None = None  # commit that created it (None while not found)
    note: str = ""


@dataclass(frozen=True, slots=True)
class _Step:
    """One commit of a first-parent chain and the parent it is diffed against."""

    commit: Commit
    parent: Commit | None  # None: the first commit, or the end of what the repository holds
    end: bool = False  # history goes on beyond `commit`, but the repository lacks it


class _Ancestry:
    """Parents as the repository has them: grafts and shallow cut points honoured, a parent
    whose commit or tree is missing left out."""

    def __init__(self, repo: Repo, tick: Tick | None) -> None:
        self.repo = repo
        self.parents_of = repo.parents_provider()
        self.tick = tick or (lambda: None)

    def parents(self, commit: Commit) -> list[ObjectID]:
        self.tick()
        return [
            parent
            for parent in self.parents_of.get_parents(commit.id, commit)
            if has_object(self.repo, parent)
        ]

    def first_parent(self, commit: Commit) -> _Step:
        self.tick()
        parents = self.parents_of.get_parents(commit.id, commit)
        parent = self._readable(parents[0]) if parents else None
        if parent is None:
            return _Step(commit, None, end=bool(commit.parents))
        return _Step(commit, parent)

    def _readable(self, sha: ObjectID) -> Commit | None:
        """The commit, if the repository holds it and its tree."""
        try:
            found = self.repo[sha]
        except KeyError:
            return None
        if not isinstance(found, Commit) or not has_object(self.repo, found.tree):
            return None
        return found

    def reachable(self, new: Commit, old: Commit | None = None) -> set[ObjectID]:
        """Commits reachable from `new` (and not from `old`)."""
        excluded = [old.id] if old is not None else None
        store = self.repo.object_store
        walker = Walker(store, [new.id], exclude=excluded, get_parents=self.parents)
        return {entry.commit.id for entry in walker}


def page_dates(
    repo: Repo,
    new_commit: str,
    old_commit: str | None,
    paths: set[str],
    known: Mapping[str, PageDates],
    renames: dict[str, str],
    tick: Tick | None = None,
) -> dict[str, PageDates]:
    """Created/modified dates at new_commit for each of `paths` that exists there.

    History is followed along first parents (a merge counts as changing what it brought
    in). `created` is the commit that added the current incarnation of a file: renames are
    followed, but a file deleted and added again starts over. Only commits since
    old_commit are walked; `known` (dates as of old_commit) fills in the rest, and
    `renames` (new path -> old path, from diff_commits) carries `created` across renames
    the walk did not see as such. The whole history is walked when old_commit is None or
    gone, and for paths `known` cannot answer (e.g. newly included by the globs). `tick`
    is called at each commit walked.
    """
    new = require_commit(repo, new_commit)
    reader = TreeReader(repo)
    ancestry = _Ancestry(repo, tick)
    traces = [
        _Trace(path, to_bytes(path))
        for path in sorted(paths)
        if _exists(reader.lookup(new.tree, to_bytes(path)))
    ]
    old = find_commit(repo, old_commit) if old_commit else None
    if old is None:
        _trace_history(repo, reader, _first_parents(ancestry, new, None), traces)
        return {t.path: _dates_of(t) for t in traces}

    chain = list(_first_parents(ancestry, new, ancestry.reachable(new, old)))
    boundary = chain[-1].parent if chain else new
    _trace_history(repo, reader, chain, traces)

    # After a fast-forward every known date is still true; after a force-push only those
    # whose commit is still in new_commit's history.
    if boundary is not None and boundary.id == old.id:
        valid = known
    else:
        history = ancestry.reachable(new)
        valid = {p: d for p, d in known.items() if d.commit.encode("ascii") in history}

    result: dict[str, PageDates] = {}
    unresolved: list[_Trace] = []
    for trace in traces:
        dates = _dates_with_known(trace, valid, renames)
        if dates is None:
            unresolved.append(trace)
        else:
            result[trace.path] = dates
    if unresolved and boundary is not None:
        _trace_history(repo, reader, _first_parents(ancestry, boundary, None), unresolved)
    result.update((t.path, _dates_of(t)) for t in unresolved if t.added is not None)
    return dict(sorted(result.items()))


def _exists(entry: Entry | None) -> bool:
    return entry is not None and is_file(entry[0])


def _iso(commit: Commit) -> str:
    return iso_utc(commit.commit_time)


def _dates_of(trace: _Trace) -> PageDates:
    assert trace.newest is not None and trace.added is not None
    return PageDates(_iso(trace.added), _iso(trace.newest), trace.newest.id.decode(), trace.note)


def _dates_with_known(
    trace: _Trace, known: Mapping[str, PageDates], renames: dict[str, str]
) -> PageDates | None:
    """Dates from an incremental walk plus what was known before it; None if not enough."""
    if trace.newest is None:
        return known.get(trace.path)
    renamed_from = known.get(renames.get(trace.path, ""))
    before = renamed_from or (None if trace.added else known.get(to_str(trace.name)))
    if before is not None:
        created, note = before.created, before.note
    elif trace.added is not None:
        created, note = _iso(trace.added), trace.note
    else:
        return None
    return PageDates(created, _iso(trace.newest), trace.newest.id.decode(), note)


def _first_parents(
    ancestry: _Ancestry, start: Commit, within: set[ObjectID] | None
) -> Iterator[_Step]:
    """Each commit with its first parent, from start backwards, while the commit is
    `within`; the chain ends at the first commit or where the repository's history does."""
    commit: Commit | None = start
    while commit is not None and (within is None or commit.id in within):
        step = ancestry.first_parent(commit)
        yield step
        commit = step.parent


def _trace_history(
    repo: Repo,
    reader: TreeReader,
    steps: Iterable[_Step],
    traces: list[_Trace],
) -> None:
    """Fill in newest/added of traces from commits, newest first; stops once all are added."""
    pending = {t.name: t for t in traces if t.added is None}
    dirs: dict[bytes, int] = defaultdict(int)
    for name in pending:
        _count_dirs(dirs, name, 1)
    for step in steps:
        if not pending:
            return
        commit, parent = step.commit, step.parent
        parent_tree = parent.tree if parent is not None else None
        added: dict[bytes, Entry] = {}
        for path, old, new in reader.diff(parent_tree, commit.tree, dirs.__contains__):
            trace = pending.get(path)
            if trace is None:
                continue
            if trace.newest is None:
                trace.newest = commit
            if old is None and new is not None:
                added[path] = new
        if added:
            origins, unchecked = _rename_origins(repo, reader, parent_tree, commit.tree, added)
            for name in added:
                trace = pending.pop(name)
                _count_dirs(dirs, name, -1)
                origin = origins.get(name)
                if origin is None:
                    trace.added = commit
                    if step.end:
                        trace.note = HISTORY_ENDS
                    elif name in unchecked:
                        trace.note = trace.note or RENAME_UNCHECKED
                else:
                    trace.name = origin
                    pending[origin] = trace
                    _count_dirs(dirs, origin, 1)
        reader.next_generation()


def _count_dirs(dirs: dict[bytes, int], path: bytes, step: int) -> None:
    end = path.find(b"/")
    while end != -1:
        directory = path[:end]
        dirs[directory] += step
        if dirs[directory] == 0:
            del dirs[directory]
        end = path.find(b"/", end + 1)


def _rename_origins(
    repo: Repo,
    reader: TreeReader,
    parent_tree: bytes | None,
    tree: bytes,
    added: dict[bytes, Entry],
) -> tuple[dict[bytes, bytes], set[bytes]]:
    """Which of the `added` paths this commit renamed, and from where; and the adds whose
    content could not be compared (a file's content is missing).

    Exact renames (same blob) first, then content renames scored like dulwich's
    RenameDetector but only between the traced adds and the deletes (docdex.history's
    renames, which the history package shares): running the detector itself compares every
    add with every delete, which made the PowerShell-Docs walk markedly slower.
    """
    if parent_tree is None:
        return {}, set()
    deleted = {
        path: old
        for path, old, new in reader.diff(parent_tree, tree)
        if new is None and old is not None  # diff yields no change without either side
    }
    if not deleted:
        return {}, set()
    return match_renames(added, deleted, lambda sha: _content(repo, sha))


def _content(repo: Repo, sha: bytes) -> bytes | None:
    try:
        return read_blob(repo, sha)
    except MissingObject:
        return None
