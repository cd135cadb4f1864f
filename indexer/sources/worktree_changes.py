"""What changed in a checkout's working tree since its indexed state (`docdex watch`):
uncommitted edits included, compared by git blob id so unchanged files are never read
again; with a working-tree base, only the dirty paths are looked at."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from dulwich.errors import NotTreeError
from dulwich.object_store import tree_lookup_path
from dulwich.refs import HEADREF
from dulwich.repo import Repo

from docdex.index_format.config import SourceConfig
from docdex.index_format.records import PageInfo, SourceState
from docdex.indexer.git.diffs import (
    Change,
    FileEntry,
    diff_against_indexed,
    diff_commits,
    list_files,
)
from docdex.indexer.git.history import PageDates, page_dates
from docdex.indexer.git.repo import require_commit
from docdex.runtime.times import iso_utc

from .changes import (
    Found,
    KnownDates,
    base_commit,
    full_changes,
    renames,
    reread,
    sorted_changes,
    touched_paths,
)
from .worktree import SYMLINK_MODE, WORKTREE_SUFFIX, Worktree, WorktreeFile, under

_LOOKUP_LIMIT = 64  # more paths than this: list the head's tree once instead of looking up


def worktree_changes(
    repo: Repo,
    source: SourceConfig,
    max_bytes: int,
    base: SourceState | None,
    old_pages: Mapping[str, PageInfo],
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
    old_pages: Mapping[str, PageInfo],
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
    rereads = [reread(path, f.blob, f.mode, indexed[path]) for path, f in relinked.items()]
    return sorted_changes(changes + rereads)


def _committed_since(
    current: dict[str, WorktreeFile],
    changes: list[Change],
    old_pages: Mapping[str, PageInfo],
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
    chain, sha = repo.refs.follow(HEADREF)
    branch = chain[1].removeprefix(b"refs/heads/").decode() if len(chain) > 1 else ""
    return branch, sha.decode() if sha else None


def _entries(files: dict[str, WorktreeFile]) -> dict[str, FileEntry]:
    return {path: FileEntry(path, f.blob, f.mode) for path, f in files.items()}


def _indexed_blobs(base: SourceState, old_pages: Mapping[str, PageInfo]) -> dict[str, str]:
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
    commit = require_commit(repo, head)
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
    old_pages: Mapping[str, PageInfo],
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
            repo, head, base_commit(base), wanted, KnownDates(old_pages), renames(changes)
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
