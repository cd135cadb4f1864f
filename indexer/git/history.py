"""Page dates from history: when each page was created and last modified, and by which
commit. History is followed along first parents, backwards from the new commit, diffing
only the directories that hold traced paths; where a commit adds a traced path, a rename
detector of this module's own compares only the traced adds with that commit's deletes. An
incremental run walks only the commits since the indexed one and takes the rest from the
dates it already knows.
"""

from __future__ import annotations

import stat
from collections import Counter, defaultdict, deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

import msgspec
from dulwich.diff_tree import RENAME_THRESHOLD
from dulwich.objects import Commit, ObjectID
from dulwich.repo import Repo

from docdex.index_format.times import iso_utc

from .repo import find_commit, is_file, read_blob, require_commit, to_bytes, to_str
from .trees import Entry, TreeReader


class PageDates(msgspec.Struct, frozen=True):
    created: str  # ISO 8601 UTC, committer date of the commit that added the path
    modified: str  # ISO 8601 UTC, committer date of the last commit that changed it
    commit: str  # sha of that last commit


@dataclass(slots=True)
class _Trace:
    """One page followed back through history."""

    path: str
    name: bytes  # its name in the oldest commit looked at so far (changes at renames)
    newest: Commit | None = None  # last commit that changed it
    added: Commit | None = None  # commit that created it (None while not found)


def page_dates(
    repo: Repo,
    new_commit: str,
    old_commit: str | None,
    paths: set[str],
    known: Mapping[str, PageDates],
    renames: dict[str, str],
) -> dict[str, PageDates]:
    """Created/modified dates at new_commit for each of `paths` that exists there.

    History is followed along first parents (a merge counts as changing what it brought
    in). `created` is the commit that added the current incarnation of a file: renames are
    followed, but a file deleted and added again starts over. Only commits since
    old_commit are walked; `known` (dates as of old_commit) fills in the rest, and
    `renames` (new path -> old path, from diff_commits) carries `created` across renames
    the walk did not see as such. The whole history is walked when old_commit is None or
    gone, and for paths `known` cannot answer (e.g. newly included by the globs).
    """
    new = require_commit(repo, new_commit)
    reader = TreeReader(repo)
    traces = [
        _Trace(path, to_bytes(path))
        for path in sorted(paths)
        if _exists(reader.lookup(new.tree, to_bytes(path)))
    ]
    old = find_commit(repo, old_commit) if old_commit else None
    if old is None:
        _trace_history(repo, reader, _first_parents(repo, new, None), traces)
        return {t.path: _dates_of(t) for t in traces}

    since = {entry.commit.id for entry in repo.get_walker(include=[new.id], exclude=[old.id])}
    chain = list(_first_parents(repo, new, since))
    boundary = chain[-1][1] if chain else new
    _trace_history(repo, reader, chain, traces)

    # After a fast-forward every known date is still true; after a force-push only those
    # whose commit is still in new_commit's history.
    if boundary is not None and boundary.id == old.id:
        valid = known
    else:
        history = {entry.commit.id for entry in repo.get_walker(include=[new.id])}
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
        _trace_history(repo, reader, _first_parents(repo, boundary, None), unresolved)
    result.update((t.path, _dates_of(t)) for t in unresolved if t.added is not None)
    return dict(sorted(result.items()))


def _exists(entry: Entry | None) -> bool:
    return entry is not None and is_file(entry[0])


def _iso(commit: Commit) -> str:
    return iso_utc(commit.commit_time)


def _dates_of(trace: _Trace) -> PageDates:
    assert trace.newest is not None and trace.added is not None
    return PageDates(_iso(trace.added), _iso(trace.newest), trace.newest.id.decode())


def _dates_with_known(
    trace: _Trace, known: Mapping[str, PageDates], renames: dict[str, str]
) -> PageDates | None:
    """Dates from an incremental walk plus what was known before it; None if not enough."""
    if trace.newest is None:
        return known.get(trace.path)
    renamed_from = known.get(renames.get(trace.path, ""))
    before = renamed_from or (None if trace.added else known.get(to_str(trace.name)))
    if before is not None:
        created = before.created
    elif trace.added is not None:
        created = _iso(trace.added)
    else:
        return None
    return PageDates(created, _iso(trace.newest), trace.newest.id.decode())


def _first_parents(
    repo: Repo, start: Commit, within: set[ObjectID] | None
) -> Iterator[tuple[Commit, Commit | None]]:
    """(commit, first parent) from start backwards, while the commit is `within`."""
    commit: Commit | None = start
    while commit is not None and (within is None or commit.id in within):
        parent = repo[commit.parents[0]] if commit.parents else None
        assert parent is None or isinstance(parent, Commit)
        yield commit, parent
        commit = parent


def _trace_history(
    repo: Repo,
    reader: TreeReader,
    commits: Iterable[tuple[Commit, Commit | None]],
    traces: list[_Trace],
) -> None:
    """Fill in newest/added of traces from commits, newest first; stops once all are added."""
    pending = {t.name: t for t in traces if t.added is None}
    dirs: dict[bytes, int] = defaultdict(int)
    for name in pending:
        _count_dirs(dirs, name, 1)
    for commit, parent in commits:
        if not pending:
            return
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
            origins = _rename_origins(repo, reader, parent_tree, commit.tree, added)
            for name in added:
                trace = pending.pop(name)
                _count_dirs(dirs, name, -1)
                origin = origins.get(name)
                if origin is None:
                    trace.added = commit
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
) -> dict[bytes, bytes]:
    """Which of the `added` paths this commit renamed, and from where.

    Exact renames (same blob) first, then content renames scored like dulwich's
    RenameDetector but only between the traced adds and the deletes: running the detector
    itself compares every add with every delete, which made the PowerShell-Docs walk
    markedly slower.
    """
    if parent_tree is None:
        return {}
    deleted = {
        path: old
        for path, old, new in reader.diff(parent_tree, tree)
        if new is None and old is not None  # diff yields no change without either side
    }
    if not deleted:
        return {}
    by_blob: dict[Entry, deque[bytes]] = defaultdict(deque)
    for path, (mode, sha) in sorted(deleted.items()):
        by_blob[(stat.S_IFMT(mode), sha)].append(path)
    origins: dict[bytes, bytes] = {}
    for path, (mode, sha) in sorted(added.items()):
        candidates = by_blob.get((stat.S_IFMT(mode), sha))
        if candidates:
            origins[path] = candidates.popleft()
    unmatched = {path: added[path] for path in added if path not in origins}
    left = {path: deleted[path] for path in deleted if path not in set(origins.values())}
    origins.update(_content_renames(repo, unmatched, left))
    return origins


_MAX_RENAME_PAIRS = 100_000


def _content_renames(
    repo: Repo, added: dict[bytes, Entry], deleted: dict[bytes, Entry]
) -> dict[bytes, bytes]:
    if not added or not deleted or len(added) * len(deleted) > _MAX_RENAME_PAIRS:
        return {}
    profiles: dict[bytes, tuple[int, Counter[bytes]]] = {}

    def profile(sha: bytes) -> tuple[int, Counter[bytes]]:
        if sha not in profiles:
            data = read_blob(repo, sha)
            profiles[sha] = (len(data), _blocks(data))
        return profiles[sha]

    scored: list[tuple[int, bytes, bytes]] = []
    for new_path, (new_mode, new_sha) in sorted(added.items()):
        for old_path, (old_mode, old_sha) in sorted(deleted.items()):
            if stat.S_IFMT(new_mode) == stat.S_IFMT(old_mode):
                score = _similarity(profile(old_sha), profile(new_sha))
                if score > RENAME_THRESHOLD:
                    scored.append((-score, new_path, old_path))
    origins: dict[bytes, bytes] = {}
    taken: set[bytes] = set()
    for _, new_path, old_path in sorted(scored):
        if new_path not in origins and old_path not in taken:
            origins[new_path] = old_path
            taken.add(old_path)
    return origins


def _blocks(data: bytes) -> Counter[bytes]:
    """Lines cut into pieces of at most 64 bytes, as git and dulwich count them."""
    blocks: Counter[bytes] = Counter()
    for line in data.splitlines(keepends=True):
        for start in range(0, len(line), 64):
            blocks[line[start : start + 64]] += 1
    return blocks


def _similarity(old: tuple[int, Counter[bytes]], new: tuple[int, Counter[bytes]]) -> int:
    """Percent of the larger file made of blocks both share (dulwich's and git's score)."""
    (old_size, old_blocks), (new_size, new_blocks) = old, new
    largest = max(old_size, new_size)
    if largest == 0:
        return 100
    if min(old_size, new_size) * 100 <= RENAME_THRESHOLD * largest:
        return 0  # too different in size to pass, whatever the content
    common = sum(len(block) * min(n, new_blocks[block]) for block, n in old_blocks.items())
    return common * 100 // largest
