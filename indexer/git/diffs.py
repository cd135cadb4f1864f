"""Which files a commit holds within a source's globs, and what changed between two
snapshots: two commits (dulwich's tree diff with its rename detector) or, when the indexed
commit is gone from the object store, the indexed page table against a commit's files.
Changes come out as the adds, modifies, deletes and renames the pipeline applies. A
submodule (a gitlink) where the globs would select pages is listed like a file, so that its
source reports it (blobs.py) instead of leaving it out without a word.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable, Iterable
from typing import Literal

import msgspec
from dulwich.diff_tree import (
    CHANGE_COPY,
    CHANGE_RENAME,
    RenameDetector,
    TreeChange,
    tree_changes,
)
from dulwich.objects import TreeEntry
from dulwich.repo import Repo

from docdex.index_format.globs import matches, selects_below

from .repo import find_commit, is_file, is_gitlink, require_commit, to_str
from .trees import Entry, TreeReader

ChangeKind = Literal["add", "modify", "delete", "rename"]


class FileEntry(msgspec.Struct, frozen=True):
    path: str
    blob: str  # for a symlink: the link's own blob (its target text); a gitlink: the commit
    mode: int


class Change(msgspec.Struct, frozen=True):
    kind: ChangeKind
    path: str  # the new path, or the deleted one
    old_path: str | None = None  # renames only
    blob: str | None = None  # None for deletes
    old_blob: str | None = None  # None for adds
    mode: int | None = None  # mode of the new entry; None for deletes


def list_files(
    repo: Repo, commit: str, include: list[str], exclude: list[str]
) -> dict[str, FileEntry]:
    return list_in_globs(repo, commit, include, exclude, TreeReader.files)


def list_in_globs(
    repo: Repo,
    commit: str,
    include: list[str],
    exclude: list[str],
    walk: Callable[[TreeReader, bytes], Iterable[tuple[bytes, Entry]]],
) -> dict[str, FileEntry]:
    """The entries `walk` (a TreeReader method) yields for the commit's tree, in the globs."""
    return _in_globs(walk(TreeReader(repo), require_commit(repo, commit).tree), include, exclude)


def _in_globs(
    found: Iterable[tuple[bytes, Entry]], include: list[str], exclude: list[str]
) -> dict[str, FileEntry]:
    files: dict[str, FileEntry] = {}
    for raw_path, (mode, sha) in found:
        path = to_str(raw_path)
        if in_globs(path, mode, include, exclude):
            files[path] = FileEntry(path, sha.decode(), mode)
    return dict(sorted(files.items()))


def in_globs(path: str, mode: int, include: list[str], exclude: list[str]) -> bool:
    """A file the globs select, or a submodule where they would select pages."""
    if is_gitlink(mode):
        return selects_below(path, include, exclude)
    return is_file(mode) and matches(path, include, exclude)


def diff_commits(
    repo: Repo,
    old_commit: str | None,
    new_commit: str,
    include: list[str],
    exclude: list[str],
    indexed: dict[str, str] | None = None,
) -> list[Change]:
    """What to re-index going from old_commit to new_commit.

    When old_commit is gone from the object store (force-push then gc, rewritten history),
    `indexed` (path -> blob sha of what was indexed) stands in for its tree.
    """
    new_tree = require_commit(repo, new_commit).tree
    if old_commit is None:
        return [_added(entry) for entry in list_files(repo, new_commit, include, exclude).values()]
    old = find_commit(repo, old_commit)
    if old is not None:
        store = repo.object_store
        try:
            raw = list(
                tree_changes(store, old.tree, new_tree, rename_detector=RenameDetector(store))
            )
        except KeyError:
            pass  # objects of the old tree were pruned: fall back like a missing commit
        else:
            return _coalesce_type_changes(_changes_in_globs(raw, include, exclude))
    current = list_files(repo, new_commit, include, exclude)
    return diff_against_indexed(indexed or {}, current)


def _added(entry: FileEntry) -> Change:
    return Change("add", entry.path, blob=entry.blob, mode=entry.mode)


def _changes_in_globs(
    raw: list[TreeChange], include: list[str], exclude: list[str]
) -> list[Change]:
    def wanted(entry: TreeEntry | None) -> bool:
        return entry is not None and in_globs(to_str(entry.path), entry.mode, include, exclude)

    changes: list[Change] = []
    for change in raw:
        old, new = change.old, change.new
        # A copy leaves its source in place; an edit to the source is a change of its own.
        old_in = wanted(old) and change.type != CHANGE_COPY
        new_in = wanted(new)
        if old_in and new_in:
            assert old is not None and new is not None
            kind: ChangeKind = "rename" if change.type == CHANGE_RENAME else "modify"
            changes.append(
                Change(
                    kind,
                    to_str(new.path),
                    old_path=to_str(old.path) if kind == "rename" else None,
                    blob=new.sha.decode(),
                    old_blob=old.sha.decode(),
                    mode=new.mode,
                )
            )
        elif old_in:
            assert old is not None
            changes.append(Change("delete", to_str(old.path), old_blob=old.sha.decode()))
        elif new_in:
            assert new is not None
            changes.append(Change("add", to_str(new.path), blob=new.sha.decode(), mode=new.mode))
    return changes


def _coalesce_type_changes(changes: list[Change]) -> list[Change]:
    """tree_changes reports a file turning into a symlink (or back) as delete + add."""
    deleted = {c.path: c for c in changes if c.kind == "delete"}
    result: list[Change] = []
    merged: set[str] = set()
    for change in changes:
        gone = deleted.get(change.path)
        if change.kind == "add" and gone is not None:
            result.append(
                Change(
                    "modify",
                    change.path,
                    blob=change.blob,
                    old_blob=gone.old_blob,
                    mode=change.mode,
                )
            )
            merged.add(change.path)
        else:
            result.append(change)
    result = [c for c in result if not (c.kind == "delete" and c.path in merged)]
    return sorted(result, key=lambda c: (c.path, c.kind))


def diff_against_indexed(indexed: dict[str, str], current: dict[str, FileEntry]) -> list[Change]:
    deleted = sorted(path for path in indexed if path not in current)
    added = sorted(path for path in current if path not in indexed)
    deleted_by_blob: dict[str, deque[str]] = defaultdict(deque)
    for path in deleted:
        deleted_by_blob[indexed[path]].append(path)
    changes: list[Change] = []
    for path in added:
        entry = current[path]
        origins = deleted_by_blob.get(entry.blob)
        if origins:
            old_path = origins.popleft()
            changes.append(Change("rename", path, old_path, entry.blob, entry.blob, entry.mode))
        else:
            changes.append(_added(entry))
    for origins in deleted_by_blob.values():
        changes.extend(Change("delete", path, old_blob=indexed[path]) for path in origins)
    for path, entry in current.items():
        if path in indexed and indexed[path] != entry.blob:
            changes.append(
                Change("modify", path, blob=entry.blob, old_blob=indexed[path], mode=entry.mode)
            )
    return sorted(changes, key=lambda c: (c.path, c.kind))
