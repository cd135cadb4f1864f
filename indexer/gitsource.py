"""The git layer: branches, file lists, tree diffs, markdown blobs and page dates.

Everything goes through dulwich (no `git` subprocess), so a bare repository, a checkout
and a local mirror of a remote are read the same way. Object ids cross this module's
boundary as hex strings and paths as repo-relative POSIX strings.
"""

from __future__ import annotations

import codecs
import functools
import re
import stat
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import msgspec
from dulwich.diff_tree import (
    CHANGE_COPY,
    CHANGE_RENAME,
    RENAME_THRESHOLD,
    RenameDetector,
    TreeChange,
    tree_changes,
)
from dulwich.errors import NotGitRepository
from dulwich.objects import Blob, Commit, ObjectID, Tree, TreeEntry, parse_tree
from dulwich.refs import Ref, check_ref_format
from dulwich.repo import Repo

from docdex.index_format.model import FileProblem

from . import symlinks

SourceKind = Literal["bare", "checkout", "remote"]
ChangeKind = Literal["add", "modify", "delete", "rename"]

# (mode, sha) of one tree entry, as parse_tree gives them.
Entry = tuple[int, bytes]


class GitSourceError(Exception):
    """A source cannot be read: not a repository, bad branch name, missing commit..."""


class FileEntry(msgspec.Struct, frozen=True):
    path: str
    blob: str  # for a symlink: the link's own blob (its target text), not the target's
    mode: int


class Change(msgspec.Struct, frozen=True):
    kind: ChangeKind
    path: str  # the new path, or the deleted one
    old_path: str | None = None  # renames only
    blob: str | None = None  # None for deletes
    old_blob: str | None = None  # None for adds
    mode: int | None = None  # mode of the new entry; None for deletes


class PageDates(msgspec.Struct, frozen=True):
    created: str  # ISO 8601 UTC, committer date of the commit that added the path
    modified: str  # ISO 8601 UTC, committer date of the last commit that changed it
    commit: str  # sha of that last commit


# --- locations and repositories -----------------------------------------------------------

_URL_SCHEMES = ("https", "http", "ssh", "git", "file")
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
# git's rule for scp-like addresses: a colon with no slash before it, e.g. git@host:org/x.git
_SCP_LIKE = re.compile(r"^(?:[^@/:\s]+@)?[^@/:\s]+:")


def source_kind(location: str) -> SourceKind:
    if not location.strip():
        raise GitSourceError("the source's location is empty; give a path or a URL")
    url = _URL.match(location)
    if url:
        if url.group(1).lower() not in _URL_SCHEMES:
            raise GitSourceError(
                f"{location!r} uses an unsupported URL scheme {url.group(1)!r}; "
                f"use one of {', '.join(_URL_SCHEMES)} or user@host:path"
            )
        return "remote"
    path = Path(location).expanduser()
    if _SCP_LIKE.match(location) and not path.exists():
        return "remote"
    if not path.is_dir():
        raise GitSourceError(f"{location!r} is not a git repository (no such directory)")
    if (path / ".git").exists():  # a directory, or a file in worktrees and submodules
        return "checkout"
    if (path / "HEAD").is_file() and (path / "objects").is_dir() and (path / "refs").is_dir():
        return "bare"
    raise GitSourceError(
        f"{location!r} is not a git repository (neither a work tree with .git nor a bare "
        "repository with HEAD, objects/ and refs/)"
    )


@contextmanager
def open_repo(path: str) -> Iterator[Repo]:
    try:
        repo = Repo(str(Path(path).expanduser()))
    except (NotGitRepository, OSError, ValueError) as exc:
        raise GitSourceError(f"cannot open git repository {path!r}: {exc}") from exc
    _bound_delta_cache(repo)
    with repo:
        yield repo


DELTA_BASE_CACHE_BYTES = 16 * 1024 * 1024


def _bound_delta_cache(repo: Repo) -> None:
    """Dulwich keeps up to 96 MiB of resolved delta bases per pack (git's default). A run
    reads each file once and gains little from it, and on a large first run it was about
    85 MB of the peak (adr/0007). A limit the repository sets (core.deltaBaseCacheLimit)
    is kept."""
    store = repo.object_store
    if getattr(store, "delta_base_cache_limit", 0) is None:
        store.delta_base_cache_limit = DELTA_BASE_CACHE_BYTES


def resolve_branch(repo: Repo, branch: str | None) -> tuple[str, str | None]:
    ref = _head_branch_ref(repo) if branch is None else _branch_ref(branch)
    name = ref.removeprefix(b"refs/heads/").decode()
    _, sha = repo.refs.follow(ref)
    if sha is None:
        return name, None
    _require_commit(repo, sha.decode(), f"branch {name!r}")
    return name, sha.decode()


def _head_branch_ref(repo: Repo) -> Ref:
    chain, _ = repo.refs.follow(Ref(b"HEAD"))
    if len(chain) < 2 or not chain[1].startswith(b"refs/heads/"):
        raise GitSourceError(
            f"HEAD of {repo.path!r} does not name a branch (detached or missing); "
            "set the source's `branch` setting"
        )
    return chain[1]


def _branch_ref(branch: str) -> Ref:
    ref = Ref(b"refs/heads/" + branch.removeprefix("refs/heads/").encode())
    if not branch or not check_ref_format(ref):
        raise GitSourceError(f"{branch!r} is not a valid branch name (`branch` setting)")
    return ref


# --- object access --------------------------------------------------------------------------

_HEX_SHA = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")


def _object_id(sha: str) -> ObjectID:
    if not _HEX_SHA.match(sha):
        raise GitSourceError(f"{sha!r} is not a hex object id")
    return ObjectID(sha.encode("ascii"))


def _find_commit(repo: Repo, sha: str) -> Commit | None:
    try:
        obj = repo.object_store[_object_id(sha)]
    except KeyError:
        return None
    return obj if isinstance(obj, Commit) else None


def _require_commit(repo: Repo, sha: str, what: str = "commit") -> Commit:
    commit = _find_commit(repo, sha)
    if commit is None:
        raise GitSourceError(f"{what} {sha} is not a commit in {repo.path!r}")
    return commit


def _root_tree(repo: Repo, commit_or_tree: str) -> ObjectID:
    try:
        obj = repo.object_store[_object_id(commit_or_tree)]
    except KeyError as exc:
        raise GitSourceError(f"object {commit_or_tree} is not in {repo.path!r}") from exc
    if isinstance(obj, Commit):
        return obj.tree
    if isinstance(obj, Tree):
        return obj.id
    raise GitSourceError(f"object {commit_or_tree} is neither a commit nor a tree")


def _to_str(path: bytes) -> str:
    return path.decode("utf-8", "surrogateescape")


def _to_bytes(path: str) -> bytes:
    return path.encode("utf-8", "surrogateescape")


def _is_file(mode: int) -> bool:
    return stat.S_ISREG(mode) or stat.S_ISLNK(mode)


# How modes are spelled in a raw tree object ("<mode> <name>\0<id>"); a name or an id can
# contain these bytes too, which only costs a needless parse.
_DIR_MODE = b"40000 "
_SYMLINK_MODE = b"120000 "


class _TreeReader:
    """Tree entries parsed straight from raw objects into dicts.

    On PowerShell-Docs (directories of several hundred files) this diffs a commit about 4x
    faster than dulwich's Tree objects with tree_changes, which matters for the history
    walk. Two cache generations: walking history backwards, the parent trees read for one
    commit are the trees of the next.
    """

    def __init__(self, repo: Repo) -> None:
        self._store = repo.object_store
        self._sha_len = repo.object_format.oid_length
        self._current: dict[bytes, dict[bytes, Entry]] = {}
        self._previous: dict[bytes, dict[bytes, Entry]] = {}

    def entries(self, tree_sha: bytes) -> dict[bytes, Entry]:
        found = self._current.get(tree_sha)
        if found is None:
            found = self._previous.get(tree_sha)
        if found is None:
            type_num, raw = self._store.get_raw(ObjectID(tree_sha))
            if type_num != Tree.type_num:
                raise GitSourceError(f"object {tree_sha.decode()} is not a tree")
            found = {name: (mode, sha) for name, mode, sha in parse_tree(raw, self._sha_len)}
        self._current[tree_sha] = found
        return found

    def next_generation(self) -> None:
        self._previous, self._current = self._current, {}

    def files(self, tree_sha: bytes) -> Iterator[tuple[bytes, Entry]]:
        """Every regular file and symlink under the tree (gitlinks and trees skipped)."""
        todo = [(b"", tree_sha)]
        while todo:
            prefix, sha = todo.pop()
            for name, (mode, child) in self.entries(sha).items():
                if stat.S_ISDIR(mode):
                    todo.append((prefix + name + b"/", child))
                elif _is_file(mode):
                    yield prefix + name, (mode, child)

    def symlinks(self, tree_sha: bytes) -> Iterator[tuple[bytes, Entry]]:
        """Every symlink under the tree. A tree whose raw entries have no directory or
        symlink mode in them (most trees of a documentation repository) is not parsed."""
        todo = [(b"", tree_sha)]
        while todo:
            prefix, sha = todo.pop()
            _type, raw = self._store.get_raw(ObjectID(sha))
            if _DIR_MODE not in raw and _SYMLINK_MODE not in raw:
                continue
            for name, (mode, child) in self.entries(sha).items():
                if stat.S_ISDIR(mode):
                    todo.append((prefix + name + b"/", child))
                elif stat.S_ISLNK(mode):
                    yield prefix + name, (mode, child)

    def diff(
        self,
        old_tree: bytes | None,
        new_tree: bytes | None,
        descend: Callable[[bytes], bool] | None = None,
    ) -> list[tuple[bytes, Entry | None, Entry | None]]:
        """Changed files as (path, old, new); identical subtrees and, if `descend` says so,
        irrelevant directories are skipped. Gitlinks count as absent."""
        changes: list[tuple[bytes, Entry | None, Entry | None]] = []
        todo = [(b"", old_tree, new_tree)]
        while todo:
            prefix, old_sha, new_sha = todo.pop()
            old = self.entries(old_sha) if old_sha else {}
            new = self.entries(new_sha) if new_sha else {}
            for name in {name for name, _ in old.items() ^ new.items()}:
                path = prefix + name
                old_entry, new_entry = old.get(name), new.get(name)
                old_dir = old_entry[1] if old_entry and stat.S_ISDIR(old_entry[0]) else None
                new_dir = new_entry[1] if new_entry and stat.S_ISDIR(new_entry[0]) else None
                if (old_dir or new_dir) and (descend is None or descend(path)):
                    todo.append((path + b"/", old_dir, new_dir))
                old_file = old_entry if old_entry and _is_file(old_entry[0]) else None
                new_file = new_entry if new_entry and _is_file(new_entry[0]) else None
                if old_file or new_file:
                    changes.append((path, old_file, new_file))
        return changes

    def lookup(self, tree_sha: bytes, path: bytes) -> Entry | None:
        entry: Entry = (stat.S_IFDIR, tree_sha)
        for part in path.split(b"/"):
            if not stat.S_ISDIR(entry[0]):
                return None
            found = self.entries(entry[1]).get(part)
            if found is None:
                return None
            entry = found
        return entry


def _read_blob(repo: Repo, sha: bytes) -> bytes:
    type_num, data = repo.object_store.get_raw(ObjectID(sha))
    if type_num != Blob.type_num:
        raise GitSourceError(f"object {sha.decode()} is not a blob")
    return data


# --- globs ----------------------------------------------------------------------------------


def matches(path: str, include: list[str], exclude: list[str]) -> bool:
    if not _glob_set(tuple(include)).fullmatch(path):
        return False
    return not exclude or not _glob_set(tuple(exclude)).fullmatch(path)


_NEVER = re.compile(r"(?!)")


@functools.lru_cache(maxsize=256)
def _glob_set(patterns: tuple[str, ...]) -> re.Pattern[str]:
    if not patterns:
        return _NEVER
    return re.compile("|".join(f"(?:{_glob_regex(p)})" for p in patterns))


def _glob_regex(pattern: str) -> str:
    """Anchored at the repository root; `**` spans directories, a trailing `/` means
    everything below that directory."""
    pattern = pattern.lstrip("/")
    if pattern.endswith("/"):
        pattern += "**"
    parts = pattern.split("/")
    regex = []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            regex.append(".*" if last else "(?:[^/]*/)*")
        else:
            regex.append(_segment_regex(part) + ("" if last else "/"))
    return "".join(regex)


def _segment_regex(segment: str) -> str:
    regex = []
    i = 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            regex.append("[^/]*")
            while i + 1 < len(segment) and segment[i + 1] == "*":
                i += 1
        elif char == "?":
            regex.append("[^/]")
        elif char == "\\" and i + 1 < len(segment):
            i += 1
            regex.append(re.escape(segment[i]))
        elif char == "[" and (end := segment.find("]", i + 2)) != -1:
            regex.append(_bracket_regex(segment[i + 1 : end]))
            i = end
        else:
            regex.append(re.escape(char))
        i += 1
    return "".join(regex)


def _bracket_regex(body: str) -> str:
    negate = body[0] in "!^"
    chars = "".join(c if c == "-" else re.escape(c) for c in body[negate:])
    return f"[^/{chars}]" if negate else f"(?!/)[{chars}]"


# --- file lists and diffs -------------------------------------------------------------------


def list_files(
    repo: Repo, commit: str, include: list[str], exclude: list[str]
) -> dict[str, FileEntry]:
    return _listed(repo, commit, include, exclude, _TreeReader.files)


def _listed(repo: Repo, commit: str, include: list[str], exclude: list[str], walk):
    """The entries `walk` (a _TreeReader method) yields for the commit's tree, in the globs."""
    return _in_globs(walk(_TreeReader(repo), _require_commit(repo, commit).tree), include, exclude)


def _in_globs(
    found: Iterable[tuple[bytes, Entry]], include: list[str], exclude: list[str]
) -> dict[str, FileEntry]:
    files: dict[str, FileEntry] = {}
    for raw_path, (mode, sha) in found:
        path = _to_str(raw_path)
        if matches(path, include, exclude):
            files[path] = FileEntry(path, sha.decode(), mode)
    return dict(sorted(files.items()))


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
    new_tree = _require_commit(repo, new_commit).tree
    if old_commit is None:
        return [_added(entry) for entry in list_files(repo, new_commit, include, exclude).values()]
    old = _find_commit(repo, old_commit)
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
        return (
            entry is not None
            and _is_file(entry.mode)
            and matches(_to_str(entry.path), include, exclude)
        )

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
                    _to_str(new.path),
                    old_path=_to_str(old.path) if kind == "rename" else None,
                    blob=new.sha.decode(),
                    old_blob=old.sha.decode(),
                    mode=new.mode,
                )
            )
        elif old_in:
            assert old is not None
            changes.append(Change("delete", _to_str(old.path), old_blob=old.sha.decode()))
        elif new_in:
            assert new is not None
            changes.append(Change("add", _to_str(new.path), blob=new.sha.decode(), mode=new.mode))
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


# --- reading markdown -----------------------------------------------------------------------

_BINARY_PROBE = 8192


def read_markdown(repo: Repo, commit: str, entry: FileEntry, max_bytes: int) -> str | FileProblem:
    """The text of `entry` as of `commit` (a commit or tree sha; the tree is only needed to
    follow symlinks), or a FileProblem saying why it is not indexed."""
    blob = entry.blob.encode("ascii")
    if stat.S_ISLNK(entry.mode):
        target = resolve_links(repo, commit, [entry])[entry.path]
        if isinstance(target, FileProblem):
            return target
        blob = target
    return decode_markdown(entry.path, _read_blob(repo, blob), max_bytes)


def decode_markdown(path: str, data: bytes, max_bytes: int) -> str | FileProblem:
    if len(data) > max_bytes:
        return FileProblem(
            path,
            f"file is {len(data):,} bytes, over the max_file_bytes setting ({max_bytes:,}); "
            "not indexed",
        )
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return FileProblem(path, "file is UTF-16 encoded; only UTF-8 is indexed")
    if b"\0" in data[:_BINARY_PROBE]:
        return FileProblem(path, "binary file (NUL byte in the first 8 KB); not indexed")
    bom = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return data[bom:].decode("utf-8")
    except UnicodeDecodeError as exc:
        return FileProblem(path, f"invalid UTF-8 at byte offset {bom + exc.start}; not indexed")


# --- symlinks -------------------------------------------------------------------------------

LinkTarget = bytes | FileProblem  # the blob a symlink leads to, or why it is not followed


def list_links(
    repo: Repo, commit: str, include: list[str], exclude: list[str]
) -> dict[str, FileEntry]:
    """The symlinks among the files the globs select."""
    return _listed(repo, commit, include, exclude, _TreeReader.symlinks)


def resolve_links(
    repo: Repo, commit_or_tree: str, links: Iterable[FileEntry]
) -> dict[str, LinkTarget]:
    """What each symlink leads to in the tree of `commit_or_tree`, never leaving it."""
    reader = _TreeReader(repo)
    root = _root_tree(repo, commit_or_tree)
    return {link.path: _follow_symlink(repo, reader, root, link) for link in links}


def retargeted_links(
    repo: Repo, old_commit: str | None, new_commit: str, links: list[FileEntry]
) -> list[FileEntry]:
    """The `links` of new_commit that lead to other content (or another problem) than at
    old_commit: all of them when old_commit is None or gone from the object store."""
    new = resolve_links(repo, new_commit, links)
    try:
        old = resolve_links(repo, old_commit, links) if old_commit else {}
    except (GitSourceError, KeyError):  # the old commit, or objects of its tree, were pruned
        old = {}
    return [link for link in links if link.path not in old or old[link.path] != new[link.path]]


def _follow_symlink(repo: Repo, reader: _TreeReader, root: bytes, link: FileEntry) -> LinkTarget:
    target = _read_blob(repo, link.blob.encode("ascii"))
    resolved = symlinks.resolve(
        root, link.path, target, functools.partial(_tree_entry, repo, reader)
    )
    if resolved.file is None:
        return FileProblem(link.path, f"{resolved.problem}: {target.decode('utf-8', 'replace')}")
    return resolved.file


def _tree_entry(repo: Repo, reader: _TreeReader, tree: bytes, name: bytes) -> symlinks.Entry:
    found = reader.entries(tree).get(name)
    if found is None:
        return symlinks.Entry("missing")
    mode, sha = found
    if stat.S_ISLNK(mode):
        return symlinks.Entry("link", target=_read_blob(repo, sha))
    if stat.S_ISDIR(mode):
        return symlinks.Entry("dir", directory=sha)
    if stat.S_ISREG(mode):
        return symlinks.Entry("file", file=sha)
    return symlinks.Entry("missing")  # a gitlink


# --- page dates -----------------------------------------------------------------------------


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
    new = _require_commit(repo, new_commit)
    reader = _TreeReader(repo)
    traces = [
        _Trace(path, _to_bytes(path))
        for path in sorted(paths)
        if _exists(reader.lookup(new.tree, _to_bytes(path)))
    ]
    old = _find_commit(repo, old_commit) if old_commit else None
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
    return entry is not None and _is_file(entry[0])


def _iso(commit: Commit) -> str:
    return datetime.fromtimestamp(commit.commit_time, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


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
    before = renamed_from or (None if trace.added else known.get(_to_str(trace.name)))
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
    reader: _TreeReader,
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
    reader: _TreeReader,
    parent_tree: bytes | None,
    tree: bytes,
    added: dict[bytes, Entry],
) -> dict[bytes, bytes]:
    """Which of the `added` paths this commit renamed, and from where.

    Exact renames (same blob) first, then content renames scored like dulwich's
    RenameDetector but only between the traced adds and the deletes: running the detector
    itself compares every add with every delete, which made the PowerShell-Docs walk
    half again as slow.
    """
    if parent_tree is None:
        return {}
    deleted = {path: old for path, old, new in reader.diff(parent_tree, tree) if new is None}
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
            data = _read_blob(repo, sha)
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


__all__ = [
    "Change",
    "FileEntry",
    "GitSourceError",
    "PageDates",
    "decode_markdown",
    "diff_commits",
    "list_files",
    "list_links",
    "matches",
    "open_repo",
    "page_dates",
    "read_markdown",
    "resolve_branch",
    "resolve_links",
    "retargeted_links",
    "source_kind",
]
