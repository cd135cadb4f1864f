"""Opening a repository and looking things up in it: the branch to index, commits, trees and
blobs by hex id, and the conversions every other module of the package shares (paths between
bytes and str, which tree entry modes count as files). Failures a user can fix (not a
repository, a bad branch name, a missing commit) are raised as SourceError; an object the
repository lacks (a shallow or partial clone, a damaged mirror) as MissingObject, which
callers that can do without it (a page's content, a step of history) catch.
"""

from __future__ import annotations

import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dulwich.errors import NotGitRepository
from dulwich.object_store import peel_sha
from dulwich.objects import S_ISGITLINK, Blob, Commit, ObjectID, Tree
from dulwich.refs import Ref, check_ref_format
from dulwich.repo import Repo

from docdex.index_format.config import SourceError


class MissingObject(SourceError):
    """An object the repository should hold is not in its object store."""

    def __init__(self, repo: Repo, sha: bytes, kind: str) -> None:
        self.sha = sha.decode("ascii", "replace")
        self.kind = kind
        super().__init__(
            f"{kind} {self.sha} is missing from {repo.path} (a shallow, partial or damaged "
            "clone): fetch the missing objects (`git fetch --refetch`) or index a full clone"
        )


# --- repositories ------------------------------------------------------------------------


@contextmanager
def open_repo(path: str) -> Iterator[Repo]:
    try:
        repo = Repo(str(Path(path).expanduser()))
    except (NotGitRepository, OSError, ValueError) as exc:
        raise SourceError(f"cannot open git repository {path!r}: {exc}") from exc
    _bound_delta_cache(repo)
    with repo:
        yield repo


DELTA_BASE_CACHE_BYTES = 16 * 1024 * 1024


def _bound_delta_cache(repo: Repo) -> None:
    """Dulwich keeps up to 96 MiB of resolved delta bases per pack (git's default). A run
    reads each file once and gains little from it, and on a large first run it was a good
    part of the peak (adr/0007). A limit the repository sets (core.deltaBaseCacheLimit)
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
    require_commit(repo, sha.decode(), f"branch {name!r}")
    return name, sha.decode()


def default_branch(repo: Repo, branch: str) -> str:
    """The branch a source indexes by default: its `branch` setting, else the one HEAD
    names ("" when HEAD is detached or names no branch)."""
    if branch:
        return branch.removeprefix("refs/heads/")
    chain, _ = repo.refs.follow(Ref(b"HEAD"))
    if len(chain) < 2 or not chain[1].startswith(b"refs/heads/"):
        return ""
    return to_str(chain[1].removeprefix(b"refs/heads/"))


def _head_branch_ref(repo: Repo) -> Ref:
    name = default_branch(repo, "")
    if not name:
        raise SourceError(
            f"HEAD of {repo.path!r} does not name a branch (detached or missing); "
            "set the source's `branch` setting"
        )
    return Ref(b"refs/heads/" + to_bytes(name))


def _branch_ref(branch: str) -> Ref:
    ref = Ref(b"refs/heads/" + branch.removeprefix("refs/heads/").encode())
    if not branch or not check_ref_format(ref):
        raise SourceError(f"{branch!r} is not a valid branch name (`branch` setting)")
    return ref


def ref_tips(repo: Repo, prefix: str) -> dict[str, str]:
    """The refs under `prefix` ("refs/heads/", "refs/tags/"): short name -> the sha the ref
    holds (for an annotated tag, the tag object's)."""
    found = repo.refs.as_dict(Ref(prefix.rstrip("/").encode()))
    return {to_str(name): sha.decode() for name, sha in sorted(found.items())}


def peeled_commit(repo: Repo, sha: str) -> str | None:
    """The commit a ref's sha leads to through annotated tags; None when it leads to a tree
    or a blob, or the object is missing."""
    try:
        _obj, peeled = peel_sha(repo.object_store, object_id(sha))
    except KeyError:
        return None
    return peeled.id.decode() if isinstance(peeled, Commit) else None


# --- object access --------------------------------------------------------------------------

_HEX_SHA = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")


def object_id(sha: str) -> ObjectID:
    if not _HEX_SHA.match(sha):
        raise SourceError(f"{sha!r} is not a hex object id")
    return ObjectID(sha.encode("ascii"))


def find_commit(repo: Repo, sha: str) -> Commit | None:
    try:
        obj = repo.object_store[object_id(sha)]
    except KeyError:
        return None
    return obj if isinstance(obj, Commit) else None


def require_commit(repo: Repo, sha: str, what: str = "commit") -> Commit:
    commit = find_commit(repo, sha)
    if commit is None:
        raise SourceError(f"{what} {sha} is not a commit in {repo.path!r}")
    return commit


def root_tree(repo: Repo, commit_or_tree: str) -> ObjectID:
    try:
        obj = repo.object_store[object_id(commit_or_tree)]
    except KeyError as exc:
        raise SourceError(f"object {commit_or_tree} is not in {repo.path!r}") from exc
    if isinstance(obj, Commit):
        return obj.tree
    if isinstance(obj, Tree):
        return obj.id
    raise SourceError(f"object {commit_or_tree} is neither a commit nor a tree")


def read_blob(repo: Repo, sha: bytes) -> bytes:
    type_num, data = read_raw(repo, sha, "blob")
    if type_num != Blob.type_num:
        raise SourceError(f"object {sha.decode()} is not a blob")
    return data


def read_raw(repo: Repo, sha: bytes, kind: str) -> tuple[int, bytes]:
    """(type number, raw content) of an object; MissingObject when the store lacks it."""
    try:
        return repo.object_store.get_raw(ObjectID(sha))
    except KeyError:
        raise MissingObject(repo, sha, kind) from None


def has_object(repo: Repo, sha: bytes) -> bool:
    return ObjectID(sha) in repo.object_store


def is_empty(repo: Repo) -> bool:
    """Nothing pushed yet: no branch and no tag."""
    return not any(True for _ in repo.refs.keys(Ref(b"refs")))


# --- paths and modes ------------------------------------------------------------------------


def to_str(path: bytes) -> str:
    return path.decode("utf-8", "surrogateescape")


def to_bytes(path: str) -> bytes:
    return path.encode("utf-8", "surrogateescape")


def is_file(mode: int) -> bool:
    return stat.S_ISREG(mode) or stat.S_ISLNK(mode)


def is_gitlink(mode: int) -> bool:
    """A submodule's entry: a commit of another repository, no file of this one."""
    return S_ISGITLINK(mode)
