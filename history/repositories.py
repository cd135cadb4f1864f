"""A source's repository, opened to read its history: where it is (the location itself, a
bare repository or a checkout; for a remote source the mirror the indexer fetches into,
state/mirrors/NAME.git: reading never fetches), its commits as answers show them, and their
parents as the repository holds them (grafts and shallow cut points honoured, a parent
the object store lacks left out, and the commits where history stops because of it).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import msgspec
from dulwich.errors import NotGitRepository
from dulwich.objects import Commit, ObjectID
from dulwich.repo import Repo

from docdex.index_format.config import SourceConfig, SourceError, source_kind
from docdex.index_format.layout import DataDir
from docdex.runtime.times import iso_utc

SUBJECT_CHARS = 200  # of a commit's subject line: a message is text anyone can push
MAX_OPEN = 16  # repositories an OpenRepositories keeps open


class SourceRepository(msgspec.Struct, frozen=True):
    """What reading a source's history needs from its configuration."""

    name: str
    path: str  # the repository read
    branch: str = ""  # the source's default branch ("" = the one HEAD names)
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    section_levels: int = 3  # headings h1..hN start sections, as the index cuts them

    @classmethod
    def of(cls, data: DataDir, source: SourceConfig, section_levels: int = 3) -> SourceRepository:
        return cls(
            name=source.name,
            path=repository_location(data, source),
            branch=source.branch.removeprefix("refs/heads/"),
            include=tuple(source.include),
            exclude=tuple(source.exclude),
            section_levels=section_levels,
        )


def repository_location(data: DataDir, source: SourceConfig) -> str:
    """The repository a source's history is read from."""
    if source_kind(source.location) != "remote":
        return str(Path(source.location).expanduser())
    mirror = data.mirror(source.name)
    if not (mirror / "HEAD").is_file():
        raise SourceError(
            f"source {source.name!r} is a remote whose mirror has not been fetched yet: "
            f"index it first (`docdex index {source.name}`)"
        )
    return str(mirror)


def open_repository(path: str) -> Repo:
    try:
        return Repo(path)
    except (NotGitRepository, OSError, ValueError) as exc:
        raise SourceError(f"cannot open git repository {path!r}: {exc}") from exc


class OpenRepositories:
    """Repositories kept open from one call to the next, so that their pack indexes and
    resolved delta bases stay warm (a cold read of PowerShell-Docs' trees spends most of
    its time resolving deltas again). One call reads a repository at a time: a dulwich
    Repo reads its packs through shared file positions. Packs a push or a repack adds or
    removes are found by dulwich itself, at the first object it misses."""

    def __init__(self, max_open: int = MAX_OPEN) -> None:
        self._max = max_open
        self._open: OrderedDict[str, tuple[Repo, threading.Lock]] = OrderedDict()
        self._lock = threading.Lock()

    @contextmanager
    def reading(self, path: str) -> Iterator[Repo]:
        repo, lock = self._entry(path)
        with lock:
            yield repo

    def close(self) -> None:
        with self._lock:
            entries, self._open = list(self._open.values()), OrderedDict()
        for repo, lock in entries:
            with lock:
                repo.close()

    def _entry(self, path: str) -> tuple[Repo, threading.Lock]:
        with self._lock:
            found = self._open.get(path)
            if found is not None:
                self._open.move_to_end(path)
                return found
            found = self._open[path] = (open_repository(path), threading.Lock())
            for old in list(self._open)[: max(0, len(self._open) - self._max)]:
                repo, lock = self._open[old]
                if lock.acquire(blocking=False):  # one in use stays until the next time
                    del self._open[old]
                    repo.close()
                    lock.release()
            return found


class CommitInfo(msgspec.Struct, frozen=True):
    id: str
    date: str  # committer date, ISO 8601 UTC
    subject: str  # the message's first line, at most SUBJECT_CHARS characters


def commit_info(commit: Commit) -> CommitInfo:
    message = commit.message.decode("utf-8", "replace").strip()
    subject = message.split("\n", 1)[0].strip()
    if len(subject) > SUBJECT_CHARS:
        subject = subject[: SUBJECT_CHARS - 1] + "…"
    return CommitInfo(commit.id.decode("ascii"), iso_utc(commit.commit_time), subject)


class Ancestry:
    """Parents as the repository holds them. A commit with parents none of which can be
    read (a shallow clone's cut, a graft, a missing object) is where history stops; such
    commits are collected in `stops`."""

    def __init__(self, repo: Repo) -> None:
        self._store = repo.object_store
        self._provider = repo.parents_provider()
        self._present: dict[ObjectID, bool] = {}  # a walk asks of each parent more than once
        self.stops: set[str] = set()

    def parents(self, commit: Commit) -> list[ObjectID]:
        """The parents that can be read (first parent first); a commit that lacks some is
        kept in `stops`."""
        listed = self._provider.get_parents(commit.id, commit)
        present = [parent for parent in listed if self._has(parent)]
        if len(present) < len(listed) or (commit.parents and not listed):
            self.stops.add(commit.id.decode("ascii"))
        return present

    def readable_parents(self, commit: Commit) -> list[ObjectID]:
        """The parents that can be read, without noting a stop: for a walk that also goes
        through commits outside the range."""
        return [p for p in self._provider.get_parents(commit.id, commit) if self._has(p)]

    def _has(self, sha: ObjectID) -> bool:
        found = self._present.get(sha)
        if found is None:
            found = self._present[sha] = sha in self._store
        return found

    def is_root(self, commit: Commit) -> bool:
        """A first commit: no parents at all, not a commit whose history is cut."""
        return not commit.parents

    def first_parent(self, commit: Commit) -> Commit | None:
        parents = self.parents(commit)
        if not parents:
            return None
        found = self._store[parents[0]]
        return found if isinstance(found, Commit) else None

    def stops_note(self) -> str:
        if not self.stops:
            return ""
        where = ", ".join(sorted(stop[:12] for stop in self.stops))
        return (
            f"history stops at {where} (a shallow clone, a graft or missing commits): what "
            "changed before is not in this repository"
        )
