"""The text of a markdown file in a commit, or why it is not indexed: a symlink is read
through to its target, and a file too large, UTF-16 encoded, binary or not valid UTF-8
becomes a FileProblem instead of text. `decode_markdown` is shared with the working-tree
path (worktree.py), so both snapshots refuse the same files for the same reasons.
"""

from __future__ import annotations

import codecs
import stat

from dulwich.repo import Repo

from docdex.index_format.records import FileProblem

from .diffs import FileEntry
from .links import resolve_links
from .repo import read_blob

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
    return decode_markdown(entry.path, read_blob(repo, blob), max_bytes)


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
