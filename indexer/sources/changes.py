"""What changed in one source since its indexed state, and how to read the new files.

Two kinds of snapshot are indexed: a commit (bare repositories, mirrors of remotes,
checkouts indexed by `docdex index`) and a checkout's working tree (`docdex watch`). Both
are compared with the previous state the same way: git blob ids, so unchanged files are
never read again, and a tree diff where both sides are commits, so the cost follows the
change. A symlink's page also depends on what the link resolves to: it is read again when
that changes, though the link itself did not. Each answer says how to read a file and what
dates its page gets.
"""

from __future__ import annotations

import stat
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from dulwich.errors import NotTreeError
from dulwich.object_store import tree_lookup_path
from dulwich.repo import Repo

from docdex.index_format.config import SourceConfig
from docdex.index_format.records import FileProblem, PageInfo, SourceState
from docdex.index_format.times import iso_utc
from docdex.indexer.git import blobs
from docdex.indexer.git.diffs import (
    Change,
    FileEntry,
    diff_against_indexed,
    diff_commits,
    list_files,
)
from docdex.indexer.git.history import PageDates, page_dates
from docdex.indexer.git.links import list_links, retargeted_links

from .worktree import SYMLINK_MODE, WORKTREE_SUFFIX, Worktree, WorktreeFile, under

Reader = Callable[[FileEntry], str | FileProblem]


@dataclass
class Found:
    """The changes of one source, ready to apply."""

    branch: str
    commit: str  # what the new SourceState records: "<sha>" or "<sha>+worktree"
    changes: list[Change]
    read: Reader
    dates: dict[str, PageDates] = field(default_factory=dict)  # per new or changed path
    redated: dict[str, PageDates] = field(default_factory=dict)  # unchanged pages, new dates
    links: dict[str, str] | None = None  # the commit's symlinks, path -> link blob (None: unknown)


@dataclass(frozen=True)
class DatedPages:
    """Pages whose dates are known as of a commit: another ref's, which a ref read in full
    starts its walk through history from (refs.py)."""

    commit: str
    pages: dict[str, PageInfo]


def touched_paths(changes: list[Change]) -> set[str]:
    """Every old or new path a change touches."""
    touched = {c.path for c in changes}
    touched.update(c.old_path for c in changes if c.old_path)
    return touched


def full_changes(files: dict[str, FileEntry], old_pages: dict[str, PageInfo]) -> list[Change]:
    """A rebuild: every old page goes, every current file comes (vectors still reused)."""
    changes = [
        Change(kind="delete", path=p.path, old_blob=p.blob)
        for p in old_pages.values()
        if p.path not in files
    ]
    for entry in files.values():
        old = old_pages.get(entry.path)
        changes.append(
            Change(
                kind="modify" if old else "add",
                path=entry.path,
                blob=entry.blob,
                old_blob=old.blob if old else None,
                mode=entry.mode,
            )
        )
    return changes


class KnownDates(Mapping[str, PageDates]):
    """Dates of pages dated from git history (a working-tree edit has no commit), made at
    lookup: a push looks up a few pages of a source that may have thousands."""

    def __init__(self, old_pages: dict[str, PageInfo]) -> None:
        self._pages = old_pages

    def __getitem__(self, path: str) -> PageDates:
        page = self._pages[path]
        if not page.commit:
            raise KeyError(path)
        return PageDates(created=page.created, modified=page.modified, commit=page.commit)

    def __iter__(self) -> Iterator[str]:
        return (path for path, page in self._pages.items() if page.commit)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _renames(changes: list[Change]) -> dict[str, str]:
    return {c.path: c.old_path for c in changes if c.kind == "rename" and c.old_path}


def base_commit(state: SourceState | None) -> str | None:
    """The commit a state's pages were read from (its HEAD for a working-tree state)."""
    if state is None or not state.commit:
        return None
    return state.commit.removesuffix(WORKTREE_SUFFIX) or None


# --- a commit ------------------------------------------------------------------------------


def commit_changes(
    repo: Repo,
    source: SourceConfig,
    max_bytes: int,
    branch: str,
    head: str,
    base: SourceState | None,
    old_pages: dict[str, PageInfo],
    dates_from: DatedPages | None = None,
) -> Found | None:
    """Changes from the base state to `head`; None when the base is `head` already. Without
    a base every file is read, and the pages' dates come from `dates_from` where they can."""
    old = base.commit if base else None
    if old == head:
        return None
    if old is None:
        files = list_files(repo, head, source.include, source.exclude)
        changes = full_changes(files, old_pages)
        links = {path: e.blob for path, e in files.items() if stat.S_ISLNK(e.mode)}
    elif old.endswith(WORKTREE_SUFFIX):
        changes = _indexed_diff(repo, head, source, old_pages)  # a working tree is no commit
        changes, links = _with_relinked_commit(repo, source, None, head, changes, None)
    else:
        indexed = {p.path: p.blob for p in old_pages.values()}
        changes = diff_commits(repo, old, head, source.include, source.exclude, indexed=indexed)
        changes, links = _with_relinked_commit(repo, source, old, head, changes, base.links)
    touched = touched_paths(changes)
    redate = {p.path for p in old_pages.values() if not p.commit and p.path not in touched}
    wanted = {c.path for c in changes if c.kind != "delete"} | redate
    known = DatedPages(base_commit(base) or "", old_pages)
    if base is None and dates_from is not None:
        known = dates_from
    dates = page_dates(
        repo, head, known.commit or None, wanted, KnownDates(known.pages), _renames(changes)
    )
    return Found(
        branch=branch,
        commit=head,
        changes=changes,
        read=lambda entry: blobs.read_markdown(repo, head, entry, max_bytes),
        dates=dates,
        redated={path: dates[path] for path in redate if path in dates},
        links=links,
    )


def _with_relinked_commit(
    repo: Repo,
    source: SourceConfig,
    old: str | None,
    head: str,
    changes: list[Change],
    old_links: dict[str, str] | None,
) -> tuple[list[Change], dict[str, str]]:
    """`changes` plus the links they leave alone that lead elsewhere at `head` than at
    `old` (a target edited, deleted or moved; every link when `old` is not a commit), and
    the links at `head`."""
    touched = touched_paths(changes)
    links = _links_at(repo, source, head, changes, old_links)
    unchanged = [
        FileEntry(path, blob, SYMLINK_MODE) for path, blob in links.items() if path not in touched
    ]
    retargeted = retargeted_links(repo, old, head, unchanged)
    relinked = [_reread(e.path, e.blob, e.mode, e.blob) for e in retargeted]
    return _sorted(changes + relinked), links


def _links_at(
    repo: Repo,
    source: SourceConfig,
    head: str,
    changes: list[Change],
    old_links: dict[str, str] | None,
) -> dict[str, str]:
    """The symlinks at `head` (path -> link blob): those of the base commit as its state
    recorded them, updated by the changes since; listed from the tree (which, in a large
    repository, is most of a small push's tree reading) only when nothing was recorded."""
    if old_links is None:
        listed = list_links(repo, head, source.include, source.exclude)
        return {path: entry.blob for path, entry in listed.items()}
    links = dict(old_links)
    for change in changes:
        links.pop(change.path, None)
        if change.old_path:
            links.pop(change.old_path, None)
        if change.kind != "delete" and change.blob and stat.S_ISLNK(change.mode or 0):
            links[change.path] = change.blob
    return dict(sorted(links.items()))


def _reread(path: str, blob: str, mode: int, old_blob: str) -> Change:
    """A modify of a link that did not change itself, so that its page is read again."""
    return Change("modify", path, blob=blob, old_blob=old_blob, mode=mode)


def _sorted(changes: list[Change]) -> list[Change]:
    return sorted(changes, key=lambda c: (c.path, c.kind))


def _indexed_diff(
    repo: Repo, head: str, source: SourceConfig, old_pages: dict[str, PageInfo]
) -> list[Change]:
    current = list_files(repo, head, source.include, source.exclude)
    return diff_against_indexed({p.path: p.blob for p in old_pages.values()}, current)


# --- a working tree ------------------------------------------------------------------------

_LOOKUP_LIMIT = 64  # more paths than this: list the head's tree once instead of looking up


def worktree_changes(
    repo: Repo,
    source: SourceConfig,
    max_bytes: int,
    base: SourceState | None,
    old_pages: dict[str, PageInfo],
    dirty: set[str] | None,
    skip: list[Path],
) -> Found | None:
    """Changes from the base state to the working tree; None when nothing changed.

    With a working-tree base and `dirty` paths, only those paths (and what lies below them)
    are looked at, plus the paths a new HEAD commit changed; otherwise the whole tree is.
    """
    branch, head = _checked_out(repo)
    tree = Worktree(repo, source.include, source.exclude, skip)
    current, changes = _scan(repo, source, tree, head, base, old_pages, dirty)
    if base is not None:
        changes = _without_same_problems(changes, base, tree, max_bytes)
    at_head = _head_blobs(repo, head, source, current)
    redate = _committed_since(current, changes, old_pages, at_head)
    commit = f"{head or ''}{WORKTREE_SUFFIX}"
    if not changes and not redate and base is not None and base.commit == commit:
        return None
    dates = _worktree_dates(repo, head, base, changes, current, at_head, old_pages, redate)
    return Found(
        branch=branch,
        commit=commit,
        changes=changes,
        read=lambda entry: tree.read(entry.path, max_bytes),
        dates=dates,
        redated={path: dates[path] for path in redate if path in dates},
    )


def _scan(
    repo: Repo,
    source: SourceConfig,
    tree: Worktree,
    head: str | None,
    base: SourceState | None,
    old_pages: dict[str, PageInfo],
    dirty: set[str] | None,
) -> tuple[dict[str, WorktreeFile], list[Change]]:
    """The files looked at and how they differ from the base state."""
    if base is None:  # a rebuild, or nothing indexed yet: everything is read again
        current = tree.files()
        return current, full_changes(_entries(current), old_pages)
    indexed = _indexed_blobs(base, old_pages)
    if dirty is None or not base.commit.endswith(WORKTREE_SUFFIX):
        current = tree.files()
        changes = _blob_diff(indexed, current)
        relinked = _relinked(tree, indexed, _links(current), changes, set())
        return current, _with_rereads(changes, relinked, indexed)
    paths = set(dirty) | _moved_paths(repo, base_commit(base), head, source)
    current = tree.files_at(paths)
    changes = _blob_diff({p: b for p, b in indexed.items() if under(p, paths)}, current)
    links = tree.links_at(indexed) | _links(current)
    beside_files = {p for p in paths if p not in current}  # directories, other files, deletes
    relinked = _relinked(tree, indexed, links, changes, beside_files)
    current.update(relinked)
    return current, _with_rereads(changes, relinked, indexed)


def _links(files: dict[str, WorktreeFile]) -> dict[str, WorktreeFile]:
    return {path: f for path, f in files.items() if f.mode == SYMLINK_MODE}


def _relinked(
    tree: Worktree,
    indexed: dict[str, str],
    links: dict[str, WorktreeFile],
    changes: list[Change],
    changed: set[str],
) -> dict[str, WorktreeFile]:
    """The indexed `links` that `changes` leave alone but whose resolution looks at a path
    they touch or at one of `changed`."""
    changed = changed | touched_paths(changes)
    return {
        path: f
        for path, f in links.items()
        if path in indexed
        and path not in changed
        and any(under(p, changed) for p in tree.resolve_link(path).looked_at)
    }


def _with_rereads(
    changes: list[Change], relinked: dict[str, WorktreeFile], indexed: dict[str, str]
) -> list[Change]:
    rereads = [_reread(path, f.blob, f.mode, indexed[path]) for path, f in relinked.items()]
    return _sorted(changes + rereads)


def _committed_since(
    current: dict[str, WorktreeFile],
    changes: list[Change],
    old_pages: dict[str, PageInfo],
    at_head: dict[str, str],
) -> set[str]:
    """Unchanged pages dated as uncommitted edits whose content HEAD now has."""
    touched = touched_paths(changes)
    return {
        path
        for path, f in current.items()
        if path not in touched
        and path in old_pages
        and not old_pages[path].commit
        and at_head.get(path) == f.blob
    }


def _checked_out(repo: Repo) -> tuple[str, str | None]:
    """(branch, HEAD commit) of a checkout; branch "" when detached, commit None when the
    branch has no commit yet."""
    chain, sha = repo.refs.follow(b"HEAD")
    branch = chain[1].removeprefix(b"refs/heads/").decode() if len(chain) > 1 else ""
    return branch, sha.decode() if sha else None


def _entries(files: dict[str, WorktreeFile]) -> dict[str, FileEntry]:
    return {path: FileEntry(path, f.blob, f.mode) for path, f in files.items()}


def _indexed_blobs(base: SourceState, old_pages: dict[str, PageInfo]) -> dict[str, str]:
    """Path -> blob id of what the base state holds. A file with a problem has no page:
    an empty blob id makes it compare as changed while it exists and deleted once gone."""
    blobs = {p.path: "" for p in base.problems}
    blobs.update((path, p.blob) for path, p in old_pages.items())
    return blobs


def _blob_diff(indexed: dict[str, str], current: dict[str, WorktreeFile]) -> list[Change]:
    return diff_against_indexed(indexed, _entries(current))


def _without_same_problems(
    changes: list[Change], base: SourceState, tree: Worktree, max_bytes: int
) -> list[Change]:
    """A file that had a problem compares as changed (no blob is kept for it): drop it when
    reading it again gives the same problem."""
    problems = {p.path: p for p in base.problems}
    return [
        c
        for c in changes
        if not (c.kind == "modify" and c.old_blob == "" and c.path in problems)
        or tree.read(c.path, max_bytes) != problems[c.path]
    ]


def _moved_paths(
    repo: Repo, old_head: str | None, head: str | None, source: SourceConfig
) -> set[str]:
    """Paths a HEAD move (commit, checkout, pull) changed: their dates may change."""
    if head is None or old_head == head:
        return set()
    changes = diff_commits(repo, old_head, head, source.include, source.exclude)
    return touched_paths(changes)


def _head_blobs(
    repo: Repo, head: str | None, source: SourceConfig, current: dict[str, WorktreeFile]
) -> dict[str, str]:
    """Blob ids at HEAD of the current files that HEAD has."""
    if head is None or not current:
        return {}
    if len(current) > _LOOKUP_LIMIT:
        files = list_files(repo, head, source.include, source.exclude)
        return {path: files[path].blob for path in current if path in files}
    commit = repo[head.encode("ascii")]
    blobs = {}
    for path in current:
        try:
            _mode, sha = tree_lookup_path(repo.__getitem__, commit.tree, path.encode())
        except (KeyError, NotTreeError):
            continue
        blobs[path] = sha.decode()
    return blobs


def _worktree_dates(
    repo: Repo,
    head: str | None,
    base: SourceState | None,
    changes: list[Change],
    current: dict[str, WorktreeFile],
    at_head: dict[str, str],
    old_pages: dict[str, PageInfo],
    redate: set[str],
) -> dict[str, PageDates]:
    """Git dates for files as committed at HEAD; for edited ones the file's mtime as
    modified, and created kept from the previous page (else git's, else the mtime)."""
    new = [c for c in changes if c.kind != "delete"]
    committed = {c.path for c in new if at_head.get(c.path) == c.blob} | redate
    edited = [c for c in new if c.path not in committed]
    previous = {c.path: old_pages.get(c.old_path or c.path) for c in edited}
    need_created = {c.path for c in edited if previous[c.path] is None and c.path in at_head}
    wanted = committed | need_created
    git: dict[str, PageDates] = {}
    if head and wanted:
        git = page_dates(
            repo, head, base_commit(base), wanted, KnownDates(old_pages), _renames(changes)
        )
    dates = {path: git[path] for path in committed if path in git}
    for change in edited:
        modified = iso_utc(current[change.path].mtime)
        old = previous[change.path]
        if old is not None and old.created:
            created = old.created
        elif change.path in git:
            created = git[change.path].created
        else:
            created = modified
        dates[change.path] = PageDates(created=created, modified=modified, commit="")
    return dates
