"""The files a page's includes name, read from the tree a run indexes: the commit's tree, or
a checkout's working tree with symlinks that leave it refused (the syntax and where paths
are looked for: indexer/chunking/include_syntax.py; adr/0018)."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

from dulwich.object_store import tree_lookup_path
from dulwich.repo import Repo

from docdex.index_format.config import SourceConfig, source_kind
from docdex.index_format.layout import DataDir
from docdex.indexer.chunking.include_syntax import PathReader
from docdex.indexer.git.blobs import decode_markdown
from docdex.indexer.git.repo import read_blob, to_bytes

from .remote import mirror_path

_log = logging.getLogger(__name__)

MAX_INCLUDE_BYTES = 200_000


def include_reader(data: DataDir, source: SourceConfig, commit: str) -> PathReader | None:
    """The reader of the tree a run indexes for `source` at `commit` ("<sha>" or
    "<sha>+worktree"); None when the repository cannot be opened (includes stay unresolved)."""
    if "+" in commit:
        return worktree_reader(Path(source.location).expanduser())
    try:
        location = source.location
        if source_kind(location) == "remote":
            location = str(mirror_path(data, source))
        return commit_reader(str(Path(location).expanduser()), commit)
    except Exception:  # includes are a bonus: never fail a run over them
        _log.warning("includes of %s left unresolved", source.name, exc_info=True)
        return None


def commit_reader(path: str, commit: str, max_bytes: int = MAX_INCLUDE_BYTES) -> PathReader:
    """Regular files of `commit`'s tree in the repository at `path` (symlinks are not
    followed). The repository is opened per read: includes are rare, and nothing stays open."""

    def read(file: str) -> str | None:
        try:
            with Repo(path) as repo:
                tree = repo[commit.encode("ascii")].tree  # type: ignore[attr-defined]  # a commit
                mode, sha = tree_lookup_path(repo.__getitem__, tree, to_bytes(file))
                if not stat.S_ISREG(mode):
                    return None
                text = decode_markdown(file, read_blob(repo, sha), max_bytes)
        except Exception:  # missing path, odd object: the include stays unresolved
            return None
        return text if isinstance(text, str) else None

    return read


def worktree_reader(root: Path, max_bytes: int = MAX_INCLUDE_BYTES) -> PathReader:
    """Regular files under `root` whose real path stays under it (no `.git`)."""
    real_root = os.path.realpath(root)

    def read(path: str) -> str | None:
        if path.split("/", 1)[0] == ".git":
            return None
        real = os.path.realpath(os.path.join(real_root, path))
        if os.path.commonpath([real, real_root]) != real_root or not os.path.isfile(real):
            return None
        try:
            if os.path.getsize(real) > max_bytes:
                return None
            with open(real, "rb") as handle:
                text = decode_markdown(path, handle.read(max_bytes + 1), max_bytes)
        except OSError:
            return None
        return text if isinstance(text, str) else None

    return read
