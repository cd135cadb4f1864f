"""What changed in one source since its indexed state, and how to read the new files: what
the two ways of finding it share (commit_changes.py, worktree_changes.py).

Two kinds of snapshot are indexed: a commit (bare repositories, mirrors of remotes,
checkouts indexed by `docdex index`) and a checkout's working tree (`docdex watch`). Both
are compared with the previous state the same way: git blob ids, so unchanged files are
never read again, and a tree diff where both sides are commits, so the cost follows the
change. A symlink's page also depends on what the link resolves to: it is read again when
that changes, though the link itself did not. Each answer says how to read a file and what
dates its page gets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from docdex.index_format.records import FileProblem, PageInfo, SourceState
from docdex.indexer.git.diffs import Change, FileEntry
from docdex.indexer.git.history import PageDates

from .worktree import WORKTREE_SUFFIX

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
    pages: Mapping[str, PageInfo]


def touched_paths(changes: list[Change]) -> set[str]:
    """Every old or new path a change touches."""
    touched = {c.path for c in changes}
    touched.update(c.old_path for c in changes if c.old_path)
    return touched


def full_changes(files: dict[str, FileEntry], old_pages: Mapping[str, PageInfo]) -> list[Change]:
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

    def __init__(self, old_pages: Mapping[str, PageInfo]) -> None:
        self._pages = old_pages

    def __getitem__(self, path: str) -> PageDates:
        page = self._pages[path]
        if not page.commit:
            raise KeyError(path)
        return PageDates(page.created, page.modified, page.commit, page.dates_note)

    def __iter__(self) -> Iterator[str]:
        return (path for path, page in self._pages.items() if page.commit)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def renames(changes: list[Change]) -> dict[str, str]:
    return {c.path: c.old_path for c in changes if c.kind == "rename" and c.old_path}


def base_commit(state: SourceState | None) -> str | None:
    """The commit a state's pages were read from (its HEAD for a working-tree state); None
    when it has none (a state before its first run, or whose branch was deleted)."""
    if state is None or not state.commit:
        return None
    return state.commit.removesuffix(WORKTREE_SUFFIX) or None


def reread(path: str, blob: str, mode: int, old_blob: str) -> Change:
    """A modify of a link that did not change itself, so that its page is read again."""
    return Change("modify", path, blob=blob, old_blob=old_blob, mode=mode)


def sorted_changes(changes: list[Change]) -> list[Change]:
    return sorted(changes, key=lambda c: (c.path, c.kind))
