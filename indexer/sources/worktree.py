"""The working tree of a checkout, as watch mode indexes it: uncommitted edits included.

The file set is what `git status` would show: tracked files plus untracked files that no
ignore rule excludes, never inside .git, nested repositories or docdex's own data
directory, and never editor temp files. Each file carries the blob id git would store for
it (sha1 of b"blob <size>\\0" + content, after git's line-ending conversion), so it compares
directly with the blob ids of a page table or a commit's tree.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import stat
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import msgspec
from dulwich.attrs import GitAttributes
from dulwich.errors import NoIndexPresent
from dulwich.ignore import IgnoreFilterManager
from dulwich.index import ConflictedIndexEntry
from dulwich.line_ending import CRLFAction, read_eol_config, resolve_crlf_action
from dulwich.objects import ObjectID
from dulwich.repo import Repo

from docdex.index_format.globs import matches
from docdex.index_format.records import FileProblem
from docdex.indexer.git import symlinks
from docdex.indexer.git.blobs import decode_markdown, page_path_problem

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
    blob: str  # git blob id of the content as git would store it; of the text of a symlink
    mode: int  # REGULAR_MODE or SYMLINK_MODE
    mtime: float  # of the file (the link's target for a symlink, when it resolves)


def is_editor_temp(name: str) -> bool:
    """Whether a file name (not a path) is an editor's temporary or backup file."""
    return bool(_EDITOR_TEMP.search(name))


def blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


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
        self._index = _index_blobs(repo)
        self._tracked = set(self._index)
        self._tracked_dirs = {d for p in self._tracked for d in _parents(p)}
        self._ignore = IgnoreFilterManager.from_repo(repo)
        self._checkin = _Checkin(repo, self._index)

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

    def links_at(self, paths: Iterable[str]) -> dict[str, WorktreeFile]:
        """The symlinks among `paths` (files known to count): one listing of each directory
        they are in, no file read."""
        by_dir: dict[str, set[str]] = defaultdict(set)
        for path in paths:
            directory, _, name = path.rpartition("/")
            by_dir[directory].add(name)
        return self._collect(
            f"{directory}/{name}" if directory else name
            for directory, names in by_dir.items()
            for name in _symlink_names(self.root / directory, names)
        )

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
            data = self._checkin.convert(path, full.read_bytes())
            return WorktreeFile(path, blob_id(data), REGULAR_MODE, info.st_mtime)
        except OSError:
            return None  # removed while we looked: the next event says so

    # --- reading ---------------------------------------------------------------------------

    def read(self, path: str, max_bytes: int) -> str | FileProblem:
        """The text of a file, or why it is not indexed. A symlink is followed only to a
        file inside the checkout (never into .git)."""
        if (named := page_path_problem(path)) is not None:
            return named
        full = self.root / path
        try:
            if full.is_symlink():
                resolved = self.resolve_link(path)
                if resolved.file is None:
                    return FileProblem(path, f"{resolved.problem}: {os.readlink(full)}")
                full = resolved.file
            data = full.read_bytes()
        except OSError as exc:
            return FileProblem(path, f"cannot read the file: {exc.strerror or exc}")
        return decode_markdown(path, data, max_bytes)

    def resolve_link(self, path: str) -> symlinks.Resolved[Path]:
        """Where the symlink at `path` leads, and which paths that answer looked at."""
        try:
            target = os.fsencode(os.readlink(self.root / path))
        except OSError:  # gone since it was listed: its own event follows
            return symlinks.Resolved(None, symlinks.MISSING)
        return symlinks.resolve(self.root, path, target, _fs_entry, self._rebase)

    def _rebase(self, target: bytes) -> bytes | None:
        """An absolute target that lies inside the checkout, relative to its root."""
        real = Path(os.path.realpath(os.fsdecode(target)))
        if not real.is_relative_to(self.root):
            return None
        return os.fsencode(real.relative_to(self.root).as_posix())


class _Checkin:
    """Git's line-ending conversion on checkin (convert.c's crlf_to_git: core.autocrlf,
    core.eol and the text and eol attributes), so that a checkout with CRLF files hashes to
    the LF blobs it was checked out from. Config and attributes are read once, and only
    when a file has a CRLF at all."""

    def __init__(self, repo: Repo, index: dict[str, ObjectID | None]) -> None:
        self.repo = repo
        self.index = index

    @functools.cached_property
    def _eol_config(self) -> tuple[str, bytes]:
        core_eol, autocrlf, _safecrlf = read_eol_config(self.repo.get_config_stack())
        return core_eol, autocrlf

    @functools.cached_property
    def _attributes(self) -> GitAttributes:
        return self.repo.get_gitattributes()

    def convert(self, path: str, data: bytes) -> bytes:
        if _CRLF not in data:
            return data  # what every conversion leaves alone
        attributes = self._attributes.match_path(os.fsencode(path))
        action = resolve_crlf_action(attributes, *self._eol_config)
        if action is CRLFAction.BINARY:
            return data
        if action in _GUESSED and (_looks_binary(data) or self._index_has_crlf(path)):
            return data
        return data.replace(_CRLF, b"\n")

    def _index_has_crlf(self, path: str) -> bool:
        """Whether the index holds the file as CRLF text: git then leaves its CRLFs alone."""
        sha = self.index.get(path)
        if sha is None:
            return False
        _type, data = self.repo.object_store.get_raw(sha)
        return _CRLF in data and not _looks_binary(data)


_CRLF = b"\r\n"
# Where git decides by looking at the content (text=auto, core.autocrlf), not the attributes.
_GUESSED = (CRLFAction.AUTO_INPUT, CRLFAction.AUTO_CRLF)
# Control characters git counts as non-printable (all but BS, HT, LF, ESC, FF, CR) and DEL.
_NOT_NONPRINTABLE = bytes(
    b for b in range(256) if not (b < 32 or b == 127) or b in b"\b\t\n\x1b\x0c\r"
)


def _looks_binary(data: bytes) -> bool:
    """convert.c's convert_is_binary: a lone CR, a NUL, or over 1/128 non-printable."""
    carriage_returns = data.count(b"\r")
    if carriage_returns != data.count(_CRLF) or b"\0" in data:
        return True
    control = len(data.translate(None, _NOT_NONPRINTABLE))
    printable = len(data) - control - carriage_returns - data.count(b"\n")
    nonprintable = control - data.endswith(b"\x1a")  # a trailing EOF (^Z) is forgiven
    return (printable >> 7) < nonprintable


def _fs_entry(directory: Path, name: bytes) -> symlinks.Entry[Path, Path]:
    if name == b".git":
        return symlinks.Entry("outside")
    full = directory / os.fsdecode(name)
    try:
        info = full.lstat()
        if stat.S_ISLNK(info.st_mode):
            return symlinks.Entry("link", target=os.fsencode(os.readlink(full)))
    except OSError:
        return symlinks.Entry("missing")
    if stat.S_ISDIR(info.st_mode):
        return symlinks.Entry("dir", directory=full)
    if stat.S_ISREG(info.st_mode):
        return symlinks.Entry("file", file=full)
    return symlinks.Entry("missing")


def _symlink_names(directory: Path, names: set[str]) -> list[str]:
    try:
        with os.scandir(directory) as entries:
            return [e.name for e in entries if e.name in names and e.is_symlink()]
    except OSError:
        return []


def _index_blobs(repo: Repo) -> dict[str, ObjectID | None]:
    """Tracked path -> blob id in the index (None while a merge conflict is unresolved)."""
    try:
        index = repo.open_index()
    except NoIndexPresent:
        return {}
    return {
        os.fsdecode(path): None if isinstance(entry, ConflictedIndexEntry) else entry.sha
        for path, entry in index.items()
    }


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
