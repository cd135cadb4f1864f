"""What changed in a source between its indexed commit and a new one: a tree diff, so the
cost follows the change and force-pushes are fine; a symlink's page is read again when what
it resolves to changed."""

from __future__ import annotations

import stat
from collections.abc import Callable, Mapping

from dulwich.repo import Repo

from docdex.index_format.config import SourceConfig
from docdex.index_format.records import PageInfo, SourceState
from docdex.indexer.git import blobs
from docdex.indexer.git.diffs import (
    Change,
    FileEntry,
    diff_against_indexed,
    diff_commits,
    list_files,
)
from docdex.indexer.git.history import page_dates
from docdex.indexer.git.links import list_links, retargeted_links

from .changes import (
    DatedPages,
    Found,
    KnownDates,
    base_commit,
    full_changes,
    renames,
    reread,
    sorted_changes,
    touched_paths,
)
from .worktree import SYMLINK_MODE, WORKTREE_SUFFIX


def commit_changes(
    repo: Repo,
    source: SourceConfig,
    max_bytes: int,
    branch: str,
    head: str,
    base: SourceState | None,
    old_pages: Mapping[str, PageInfo],
    dates_from: DatedPages | None = None,
    tick: Callable[[], None] | None = None,
) -> Found | None:
    """Changes from the base state to `head`; None when the base is `head` already. Without
    a base (or one that records no commit) every file is read, and the pages' dates come
    from `dates_from` where they can. `tick` is called at each commit the dates walk."""
    old = base.commit if base and base.commit else None
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
        assert base is not None  # `old` is its commit
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
        repo, head, known.commit or None, wanted, KnownDates(known.pages), renames(changes), tick
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
    relinked = [reread(e.path, e.blob, e.mode, e.blob) for e in retargeted]
    return sorted_changes(changes + relinked), links


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


def _indexed_diff(
    repo: Repo, head: str, source: SourceConfig, old_pages: Mapping[str, PageInfo]
) -> list[Change]:
    current = list_files(repo, head, source.include, source.exclude)
    return diff_against_indexed({p.path: p.blob for p in old_pages.values()}, current)
