"""Symlinks resolved the way the filesystem would, but never leaving the repository.

One algorithm serves a commit's tree (git.links) and a checkout's working tree (worktree):
the target is walked component by component, links on the way are followed, and every
path looked up is noted. A link's page depends on exactly those paths: when one of them
changes, the link may lead somewhere else and its page must be read again.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar

D = TypeVar("D")  # what names a directory: a tree id, a filesystem path
F = TypeVar("F")  # what names a file: a blob id, a filesystem path

OUTSIDE = "symlink to outside the repository is not followed"
MISSING = "symlink target does not exist in the repository"
LOOP = "symlink loop is not followed"
DIRECTORY = "symlink points to a directory, not a file"

MAX_HOPS = 40  # Linux's MAXSYMLINKS

EntryKind = Literal["dir", "file", "link", "missing", "outside"]


@dataclass(frozen=True, slots=True)
class Entry(Generic[D, F]):
    """One name in a directory, as a lookup answers it."""

    kind: EntryKind  # "missing" also for what is neither file nor directory (a gitlink)
    directory: D | None = None
    file: F | None = None
    target: bytes = b""  # a link's text


@dataclass(slots=True)
class Resolved(Generic[F]):
    file: F | None  # None when the link is not followed
    problem: str = ""  # one of the texts above, "" when `file` is set
    looked_at: set[str] = field(default_factory=set)  # repo-relative paths the answer read


Lookup = Callable[[D, bytes], Entry[D, F]]
Rebase = Callable[[bytes], bytes | None]  # absolute target -> repo-relative; None: outside


def resolve(
    root: D, link_path: str, target: bytes, lookup: Lookup[D, F], rebase: Rebase | None = None
) -> Resolved[F]:
    """Where the link at `link_path`, whose text is `target`, leads from the root `root`.
    Absolute targets are outside the repository unless `rebase` maps them into it."""
    walk: _Walk[D, F] = _Walk(root, lookup, rebase)
    if not walk.enter(link_path):
        return walk.failed(MISSING)
    return walk.follow(target)


class _Walk(Generic[D, F]):
    def __init__(self, root: D, lookup: Lookup[D, F], rebase: Rebase | None) -> None:
        self.lookup = lookup
        self.rebase = rebase
        self.dirs: list[tuple[str, D]] = [("", root)]  # where we are, from the root down
        self.looked_at: set[str] = set()

    def enter(self, link_path: str) -> bool:
        """Go to the link's directory; False if it is not there (the tree changed)."""
        for part in _to_bytes(link_path).split(b"/")[:-1]:
            entry = self.lookup(self.dirs[-1][1], part)
            if entry.kind != "dir":
                return False
            self._descend(part, entry)
        return True

    def follow(self, target: bytes) -> Resolved[F]:
        pending: deque[bytes] = deque()
        if not self._queue(pending, target):
            return self.failed(OUTSIDE)
        hops = 1
        while pending:
            part = pending.popleft()
            if part in (b"", b"."):
                continue
            if part == b"..":
                if len(self.dirs) == 1:
                    return self.failed(OUTSIDE)
                self.dirs.pop()
                continue
            entry = self._look(part)
            if entry.kind == "link":
                hops += 1
                if hops > MAX_HOPS:
                    return self.failed(LOOP)
                if not self._queue(pending, entry.target):
                    return self.failed(OUTSIDE)
            elif entry.kind == "dir":
                self._descend(part, entry)
            elif entry.kind == "file" and all(p in (b"", b".") for p in pending):
                return Resolved(entry.file, "", self.looked_at)
            elif entry.kind == "outside":
                return self.failed(OUTSIDE)
            else:  # missing, or a file used as a directory
                return self.failed(MISSING)
        return self.failed(DIRECTORY)

    def failed(self, problem: str) -> Resolved[F]:
        return Resolved(None, problem, self.looked_at)

    def _queue(self, pending: deque[bytes], target: bytes) -> bool:
        """Put a link's target before what is left to walk; False if it leaves the tree."""
        if target.startswith(b"/"):
            rebased = self.rebase(target) if self.rebase else None
            if rebased is None:
                return False
            del self.dirs[1:]
            target = rebased
        pending.extendleft(reversed(target.split(b"/")))
        return True

    def _look(self, part: bytes) -> Entry[D, F]:
        self.looked_at.add(self._path(part))
        return self.lookup(self.dirs[-1][1], part)

    def _descend(self, part: bytes, entry: Entry[D, F]) -> None:
        assert entry.directory is not None
        self.dirs.append((self._path(part), entry.directory))

    def _path(self, part: bytes) -> str:
        name = part.decode("utf-8", "surrogateescape")
        parent = self.dirs[-1][0]
        return f"{parent}/{name}" if parent else name


def _to_bytes(path: str) -> bytes:
    return path.encode("utf-8", "surrogateescape")
