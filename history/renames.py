"""Which added files are renames of deleted ones, as `git diff -M` finds them: identical
content first, then content similar enough, scored as git and dulwich score it (the share
of the larger file made of line blocks both hold). Only adds are compared with deletes:
dulwich's RenameDetector also compares each add with every modified file (a copy source),
which on a range of a thousand edits and a few dozen new pages compared 38,000 pairs.

Both sides use it: the indexer to carry page dates across renames, the history package to
list renamed pages and follow them back. A file whose content the repository lacks (a
partial clone) cannot be compared: the adds that would have needed it are returned as
unchecked.
"""

from __future__ import annotations

import stat
from collections import Counter, defaultdict, deque
from collections.abc import Callable

from dulwich.diff_tree import RENAME_THRESHOLD

Entry = tuple[int, bytes]  # (mode, object id) of a tree entry
Read = Callable[[bytes], bytes | None]  # a blob's content by id; None when it is missing
MAX_RENAME_PAIRS = 100_000  # adds x deletes compared by content at most, else none are


def match_renames(
    added: dict[bytes, Entry],
    deleted: dict[bytes, Entry],
    read: Read,
    out_of_time: Callable[[], bool] = lambda: False,
) -> tuple[dict[bytes, bytes], set[bytes]]:
    """new path -> old path of the adds that are renames; and the adds whose content could
    not be compared: a file's content is missing, or `out_of_time` said to stop comparing."""
    by_blob: dict[Entry, deque[bytes]] = defaultdict(deque)
    for path, (mode, sha) in sorted(deleted.items()):
        by_blob[(stat.S_IFMT(mode), sha)].append(path)
    origins: dict[bytes, bytes] = {}
    for path, (mode, sha) in sorted(added.items()):
        candidates = by_blob.get((stat.S_IFMT(mode), sha))
        if candidates:
            origins[path] = candidates.popleft()
    unmatched = {path: added[path] for path in added if path not in origins}
    taken = set(origins.values())
    left = {path: deleted[path] for path in deleted if path not in taken}
    renamed, unchecked = _content_renames(unmatched, left, read, out_of_time)
    origins.update(renamed)
    return origins, unchecked


def _content_renames(
    added: dict[bytes, Entry],
    deleted: dict[bytes, Entry],
    read: Read,
    out_of_time: Callable[[], bool],
) -> tuple[dict[bytes, bytes], set[bytes]]:
    if not added or not deleted or len(added) * len(deleted) > MAX_RENAME_PAIRS:
        return {}, set()
    contents = _Contents(read)
    scored: list[tuple[int, bytes, bytes]] = []
    unchecked: set[bytes] = set()
    for new_path, (new_mode, new_sha) in sorted(added.items()):
        if out_of_time():
            unchecked.add(new_path)
            continue
        for old_path, (old_mode, old_sha) in sorted(deleted.items()):
            if stat.S_IFMT(new_mode) != stat.S_IFMT(old_mode):
                continue
            old_size, new_size = contents.size(old_sha), contents.size(new_sha)
            if old_size is None or new_size is None:
                unchecked.add(new_path)
                continue
            score = _similarity(contents, old_sha, old_size, new_sha, new_size)
            if score > RENAME_THRESHOLD:
                scored.append((-score, new_path, old_path))
    origins: dict[bytes, bytes] = {}
    taken: set[bytes] = set()
    for _, new_path, old_path in sorted(scored):
        if new_path not in origins and old_path not in taken:
            origins[new_path] = old_path
            taken.add(old_path)
    return origins, unchecked - set(origins)


class _Contents:
    """Each blob read once; its line blocks counted only if a comparison needs them."""

    def __init__(self, read: Read) -> None:
        self._read = read
        self._data: dict[bytes, bytes | None] = {}
        self._blocks: dict[bytes, Counter[bytes]] = {}

    def size(self, sha: bytes) -> int | None:
        if sha not in self._data:
            self._data[sha] = self._read(sha)
        data = self._data[sha]
        return None if data is None else len(data)

    def blocks(self, sha: bytes) -> Counter[bytes]:
        found = self._blocks.get(sha)
        if found is None:
            found = self._blocks[sha] = _blocks(self._data[sha] or b"")
        return found


def _blocks(data: bytes) -> Counter[bytes]:
    """Lines cut into pieces of at most 64 bytes, as git and dulwich count them."""
    blocks = Counter(data.splitlines(keepends=True))
    for line in [line for line in blocks if len(line) > 64]:
        count = blocks.pop(line)
        for start in range(0, len(line), 64):
            blocks[line[start : start + 64]] += count
    return blocks


def _similarity(contents: _Contents, old: bytes, old_size: int, new: bytes, new_size: int) -> int:
    """Percent of the larger file made of blocks both share (dulwich's and git's score)."""
    largest = max(old_size, new_size)
    if largest == 0:
        return 100
    if min(old_size, new_size) * 100 <= RENAME_THRESHOLD * largest:
        return 0  # too different in size to pass, whatever the content
    fewer, more = sorted((contents.blocks(old), contents.blocks(new)), key=len)
    common = sum(len(block) * min(n, more[block]) for block, n in fewer.items() if block in more)
    return common * 100 // largest
