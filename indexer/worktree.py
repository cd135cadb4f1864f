"""The working tree of a checkout, as watch mode indexes it: uncommitted edits included.

The file set is what `git status` would show: tracked files plus untracked files that no
ignore rule excludes, never inside .git, nested repositories or docdex's own data
directory, and never editor temp files. Each file carries its git blob id (sha1 of
b"blob <size>\\0" + content), so it compares directly with the blob ids of a page table
or a commit's tree.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import msgspec
from dulwich.errors import NoIndexPresent
from dulwich.ignore import IgnoreFilterManager
from dulwich.repo import Repo

from docdex.index_format.model import FileProblem

from .gitsource import decode_markdown, matches

# What SourceState.commit records for a working-tree run: "<HEAD sha>+worktree".
WORKTREE_SUFFIX = "+worktree"

REGULAR_MODE = 0o100644
SYMLINK_MODE = 0o120000

_EDITOR_TEMP = re.compile(
    r"^\.#"  # emacs lock files (dangling symlinks named like the file)
    r"|^#.*#$"  # emacs auto-save
    r"|~$"  # backups: vim, emacs, gedit
    r"|\.sw[a-z]$"  # vim swap files and its .swx probe
    r"|^4913$"  # vim's can-I-write-here probe
    r"|\.tmp$"  # atomic-save temp files (.name.md.tmp and friends)
    r"|___jb_(?:tmp|old)___$"  # JetBrains safe write
    r"|^\.goutputstream-"  # gedit
    r"|\.kate-swp$"
    r"|^\.~lock\..*#$"  # LibreOffice
    r"|\.crswap$"  # browsers' File System Access writes
    r"|^\.DS_Store$"
)


class WorktreeFile(msgspec.Struct, frozen=True):
    path: str  # repo-relative POSIX path
    blob: str  # git blob id of the content; for a symlink, of the link text (as git stores it)
    mode: int  # REGULAR_MODE or SYMLINK_MODE
    mtime: float  # of the file (the link's target for a symlink, when it resolves)


def is_editor_temp(name: str) -> bool:
    """Whether a file name (not a path) is an editor's temporary or backup file."""
    return bool(_EDITOR_TEMP.search(name))


def blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def iso_time(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Worktree:
    """One checkout's working tree and the rules that decide which of its files count."""

    def __init__(
        self,
        repo: Repo,
        include: list[str],
        exclude: list[str],
        skip: Sequence[Path] = (),
    ) -> None:
        self.root = Path(repo.path).resolve()
        self.include = include
        self.exclude = exclude
        self._skip = {p.resolve() for p in skip}
        self._tracked = _tracked_paths(repo)
        self._tracked_dirs = {d for p in self._tracked for d in _parents(p)}
        self._ignore = IgnoreFilterManager.from_repo(repo)

    # --- listing ---------------------------------------------------------------------------

    def files(self) -> dict[str, WorktreeFile]:
        """Every indexable file of the working tree."""
        return self._collect(self._walk(""))

    def files_at(self, paths: Iterable[str]) -> dict[str, WorktreeFile]:
        """The indexable files among `paths`, and below those of them that are directories;
        a path that no longer exists simply yields nothing."""
        found: list[str] = []
        for path in sorted(set(paths)):
            if not self._inside(path):
                continue
            full = self.root / path
            try:
                mode = full.lstat().st_mode
            except OSError:
                continue
            if stat.S_ISDIR(mode):
                if self._keep_dir(path):
                    found.extend(self._walk(path))
            elif self._keep_file(path):
                found.append(path)
        return self._collect(found)

    def _inside(self, path: str) -> bool:
        parts = path.split("/")
        if not path or ".." in parts or ".git" in parts:
            return False
        ancestors = ["/".join(parts[:i]) for i in range(1, len(parts))]
        return all(self._keep_dir(d) for d in ancestors)

    def _walk(self, start: str) -> Iterator[str]:
        top = self.root / start if start else self.root
        for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
            rel = Path(dirpath).relative_to(self.root).as_posix()
            prefix = "" if rel == "." else rel + "/"
            dirnames[:] = sorted(d for d in dirnames if self._keep_dir(prefix + d))
            for name in filenames:
                if self._keep_file(prefix + name):
                    yield prefix + name

    def _keep_dir(self, path: str) -> bool:
        full = self.root / path
        if full.name == ".git" or full in self._skip or full.is_symlink():
            return False
        if (full / ".git").exists():
            return False  # a nested repository (or a submodule): not part of this tree
        if path in self._tracked_dirs:
            return True
        return not self._ignore.is_ignored(path + "/")

    def _keep_file(self, path: str) -> bool:
        if is_editor_temp(path.rpartition("/")[2]):
            return False
        if not matches(path, self.include, self.exclude):
            return False
        return path in self._tracked or not self._ignore.is_ignored(path)

    def _collect(self, paths: Iterable[str]) -> dict[str, WorktreeFile]:
        files = {}
        for path in paths:
            entry = self._entry(path)
            if entry is not None:
                files[path] = entry
        return dict(sorted(files.items()))

    def _entry(self, path: str) -> WorktreeFile | None:
        full = self.root / path
        try:
            info = full.lstat()
            if stat.S_ISLNK(info.st_mode):
                link = os.fsencode(os.readlink(full))
                return WorktreeFile(path, blob_id(link), SYMLINK_MODE, _target_mtime(full, info))
            if not stat.S_ISREG(info.st_mode):
                return None
            return WorktreeFile(path, blob_id(full.read_bytes()), REGULAR_MODE, info.st_mtime)
        except OSError:
            return None  # removed while we looked: the next event says so

    # --- reading ---------------------------------------------------------------------------

    def read(self, path: str, max_bytes: int) -> str | FileProblem:
        """The text of a file, or why it is not indexed. A symlink is followed only to a
        file inside the checkout (never into .git)."""
        full = self.root / path
        if full.is_symlink():
            target = self._link_target(path)
            if isinstance(target, FileProblem):
                return target
            full = target
        try:
            data = full.read_bytes()
        except OSError as exc:
            return FileProblem(path, f"cannot read the file: {exc.strerror or exc}")
        return decode_markdown(path, data, max_bytes)

    def _link_target(self, path: str) -> Path | FileProblem:
        full = self.root / path
        shown = os.readlink(full)
        target = Path(os.path.realpath(full))
        if not target.is_relative_to(self.root) or ".git" in target.relative_to(self.root).parts:
            return FileProblem(path, f"symlink to outside the repository is not followed: {shown}")
        if not target.exists():
            return FileProblem(path, f"symlink target does not exist in the repository: {shown}")
        if not target.is_file():
            return FileProblem(path, f"symlink points to a directory, not a file: {shown}")
        return target


def _tracked_paths(repo: Repo) -> set[str]:
    try:
        index = repo.open_index()
    except NoIndexPresent:
        return set()
    return {p.decode("utf-8", "surrogateescape") for p in index.paths()}


def _parents(path: str) -> Iterator[str]:
    end = path.find("/")
    while end != -1:
        yield path[:end]
        end = path.find("/", end + 1)


def _target_mtime(full: Path, info: os.stat_result) -> float:
    try:
        return full.stat().st_mtime
    except OSError:
        return info.st_mtime


def under(path: str, roots: set[str]) -> bool:
    """Whether `path` is one of `roots` or lies below one of them."""
    return path in roots or any(parent in roots for parent in _parents(path))
