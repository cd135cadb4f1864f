"""A page's bytes and text in one commit's tree: a symlink is followed to its target inside
the repository (as the indexer reads it), and a version that cannot be read says why: its
content missing from the object store (a partial clone), larger than the bound, not UTF-8,
or a link that leaves the repository or loops.
"""

from __future__ import annotations

import codecs
import posixpath
import stat

from dulwich.objects import Blob, ObjectID
from dulwich.repo import Repo

from docdex.errors import NotFound

from .tree_paths import Entry, TreeCache

MAX_LINKS = 8  # symlinks followed from one page before it counts as a loop


class Unreadable(NotFound):
    """A page version whose text cannot be read from this repository."""


def page_bytes(
    repo: Repo, trees: TreeCache, tree: bytes, path: str, entry: Entry, max_bytes: int
) -> bytes:
    """The content of the file `entry` at `path` in the root tree `tree`."""
    for _ in range(MAX_LINKS + 1):
        mode, sha = entry
        data = _blob(repo, path, sha)
        if not stat.S_ISLNK(mode):
            if len(data) > max_bytes:
                raise Unreadable(f"{path} is {len(data):,} bytes, over the bound of {max_bytes:,}")
            return data
        path, entry = _link_target(trees, tree, path, data)
    raise Unreadable(f"{path}: more than {MAX_LINKS} symbolic links in a row (a loop?)")


def page_text(path: str, data: bytes) -> str:
    bom = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return data[bom:].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unreadable(f"{path} is not valid UTF-8 (at byte {bom + exc.start})") from None


def _blob(repo: Repo, path: str, sha: bytes) -> bytes:
    try:
        type_num, data = repo.object_store.get_raw(ObjectID(sha))
    except KeyError:
        raise Unreadable(
            f"the content of {path} (blob {sha.decode('ascii')[:12]}) is missing from the "
            "repository (a partial clone?): fetch it (`git fetch --refetch`) to read it"
        ) from None
    if type_num != Blob.type_num:
        raise Unreadable(f"{path} is not a file")
    return data


def _link_target(trees: TreeCache, tree: bytes, path: str, target: bytes) -> tuple[str, Entry]:
    joined = posixpath.normpath(
        posixpath.join(posixpath.dirname(path), target.decode("utf-8", "surrogateescape"))
    )
    if target.startswith(b"/") or joined == ".." or joined.startswith("../"):
        raise Unreadable(f"{path} is a symbolic link out of the repository")
    found = trees.file(tree, joined.encode("utf-8", "surrogateescape"))
    if found is None:
        raise Unreadable(f"{path} is a symbolic link to {joined}, which is not a file")
    return joined, found
