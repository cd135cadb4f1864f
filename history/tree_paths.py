"""A set of paths followed through trees: which of them differ between two trees, reading
only the directories that hold them and skipping every subtree whose id did not change, so
one commit costs what it changed near those paths, not the size of the repository.

Trees are parsed once into {name: (mode, id)} and kept, the most recently used first, up
to a bound. A file is a regular file or a symlink; a submodule (gitlink) counts as absent.
A tree the object store lacks raises KeyError, as dulwich does.
"""

from __future__ import annotations

import stat
from collections import OrderedDict
from collections.abc import Iterable

from dulwich.objects import ObjectID, Tree, parse_tree
from dulwich.repo import Repo

Entry = tuple[int, bytes]  # (mode, object id) of a tree entry
MAX_TREES = 16_384  # parsed trees kept by one TreeCache (a few MB)
_FILE = b""  # the key, in a trie node, saying that the node's path itself is followed


def is_file(mode: int) -> bool:
    return stat.S_ISREG(mode) or stat.S_ISLNK(mode)


class TreeCache:
    def __init__(self, repo: Repo, max_trees: int = MAX_TREES) -> None:
        self._store = repo.object_store
        self._id_length = repo.object_format.oid_length  # SHA-1 or SHA-256 repositories
        self._max = max_trees
        self._trees: OrderedDict[bytes, dict[bytes, Entry]] = OrderedDict()

    def entries(self, tree: bytes) -> dict[bytes, Entry]:
        found = self._trees.get(tree)
        if found is not None:
            self._trees.move_to_end(tree)
            return found
        type_num, raw = self._store.get_raw(ObjectID(tree))
        if type_num != Tree.type_num:
            raise KeyError(tree)
        found = {name: (mode, sha) for name, mode, sha in parse_tree(raw, self._id_length)}
        self._trees[tree] = found
        if len(self._trees) > self._max:
            self._trees.popitem(last=False)
        return found

    def lookup(self, tree: bytes, path: bytes) -> Entry | None:
        """The entry at `path` (a file, a directory or a gitlink), None if there is none."""
        entry: Entry = (stat.S_IFDIR, tree)
        for part in path.split(b"/"):
            if not stat.S_ISDIR(entry[0]):
                return None
            child = self.entries(entry[1]).get(part)
            if child is None:
                return None
            entry = child
        return entry

    def file(self, tree: bytes | None, path: bytes) -> Entry | None:
        """The file at `path` in `tree` (None: no tree, no such file, or not a file)."""
        if tree is None:
            return None
        entry = self.lookup(tree, path)
        return entry if entry is not None and is_file(entry[0]) else None


class PathSet:
    """Repository paths (bytes, '/'-separated) kept as a trie of their segments."""

    def __init__(self, paths: Iterable[bytes] = ()) -> None:
        self._root: dict[bytes, dict] = {}
        for path in paths:
            self.add(path)

    def add(self, path: bytes) -> None:
        node = self._root
        for part in path.split(b"/"):
            node = node.setdefault(part, {})
        node[_FILE] = {}

    def differing(
        self, trees: TreeCache, old: bytes | None, new: bytes | None
    ) -> dict[bytes, tuple[Entry | None, Entry | None]]:
        """The followed paths whose file differs from tree `old` to tree `new` (None: no
        tree), each with its (old, new) entries, None where there is no such file."""
        found: dict[bytes, tuple[Entry | None, Entry | None]] = {}
        todo: list[tuple[dict[bytes, dict], bytes, bytes | None, bytes | None]] = [
            (self._root, b"", old, new)
        ]
        while todo:
            node, prefix, old_tree, new_tree = todo.pop()
            if old_tree == new_tree:
                continue
            old_entries = trees.entries(old_tree) if old_tree else {}
            new_entries = trees.entries(new_tree) if new_tree else {}
            for name, child in node.items():
                if name == _FILE:
                    continue
                before, after = old_entries.get(name), new_entries.get(name)
                if before == after:
                    continue
                path = prefix + name
                if _FILE in child:
                    old_file, new_file = _as_file(before), _as_file(after)
                    if old_file != new_file:
                        found[path] = (old_file, new_file)
                if len(child) > (_FILE in child):
                    todo.append((child, path + b"/", _as_tree(before), _as_tree(after)))
        return found


def _as_file(entry: Entry | None) -> Entry | None:
    return entry if entry is not None and is_file(entry[0]) else None


def _as_tree(entry: Entry | None) -> bytes | None:
    return entry[1] if entry is not None and stat.S_ISDIR(entry[0]) else None
