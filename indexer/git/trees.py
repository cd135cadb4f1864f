"""Tree entries read straight from raw tree objects, without dulwich's Tree objects: what
the file lists, the symlink lists, the history walk and symlink resolution all read. Entries
are (mode, sha) pairs keyed by name, parsed once per tree and cached, and a whole subtree
is skipped wherever nothing in it can matter. A tree the object store lacks raises
MissingObject.
"""

from __future__ import annotations

import stat
from collections.abc import Callable, Iterator

from dulwich.objects import Tree, parse_tree
from dulwich.repo import Repo

from docdex.index_format.config import SourceError

from .repo import is_file, is_gitlink, read_raw

# (mode, sha) of one tree entry, as parse_tree gives them.
Entry = tuple[int, bytes]

# How modes are spelled in a raw tree object ("<mode> <name>\0<id>"); a name or an id can
# contain these bytes too, which only costs a needless parse.
_DIR_MODE = b"40000 "
_SYMLINK_MODE = b"120000 "


class TreeReader:
    """Tree entries parsed straight from raw objects into dicts.

    On PowerShell-Docs (directories of several hundred files) this diffs a commit much
    faster than dulwich's Tree objects with tree_changes, which matters for the history
    walk. Two cache generations: walking history backwards, the parent trees read for one
    commit are the trees of the next.
    """

    def __init__(self, repo: Repo) -> None:
        self._repo = repo
        self._sha_len = repo.object_format.oid_length
        self._current: dict[bytes, dict[bytes, Entry]] = {}
        self._previous: dict[bytes, dict[bytes, Entry]] = {}

    def entries(self, tree_sha: bytes) -> dict[bytes, Entry]:
        found = self._current.get(tree_sha)
        if found is None:
            found = self._previous.get(tree_sha)
        if found is None:
            type_num, raw = read_raw(self._repo, tree_sha, "tree")
            if type_num != Tree.type_num:
                raise SourceError(f"object {tree_sha.decode()} is not a tree")
            found = {name: (mode, sha) for name, mode, sha in parse_tree(raw, self._sha_len)}
        self._current[tree_sha] = found
        return found

    def next_generation(self) -> None:
        self._previous, self._current = self._current, {}

    def files(self, tree_sha: bytes) -> Iterator[tuple[bytes, Entry]]:
        """Every regular file, symlink and gitlink (a submodule, which a source reports
        rather than reads) under the tree."""
        todo = [(b"", tree_sha)]
        while todo:
            prefix, sha = todo.pop()
            for name, (mode, child) in self.entries(sha).items():
                if stat.S_ISDIR(mode):
                    todo.append((prefix + name + b"/", child))
                elif is_file(mode) or is_gitlink(mode):
                    yield prefix + name, (mode, child)

    def symlinks(self, tree_sha: bytes) -> Iterator[tuple[bytes, Entry]]:
        """Every symlink under the tree. A tree whose raw entries have no directory or
        symlink mode in them (most trees of a documentation repository) is not parsed."""
        todo = [(b"", tree_sha)]
        while todo:
            prefix, sha = todo.pop()
            _type, raw = read_raw(self._repo, sha, "tree")
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
                old_file = old_entry if old_entry and is_file(old_entry[0]) else None
                new_file = new_entry if new_entry and is_file(new_entry[0]) else None
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
