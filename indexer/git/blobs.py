"""The text of a markdown file in a commit, or why it is not indexed: a symlink is read
through to its target, and a file too large, UTF-16 encoded, binary, not valid UTF-8, a Git
LFS pointer, a submodule or missing from the object store (a partial clone) becomes a
FileProblem instead of text. `decode_markdown` is shared with the working-tree path
(worktree.py) and the includes' readers, so every snapshot refuses the same files for the
same reasons.
"""

from __future__ import annotations

import codecs
import stat

from dulwich.repo import Repo

from docdex.index_format.records import CHUNK_ID, FileProblem

from .diffs import FileEntry
from .links import resolve_links
from .repo import MissingObject, is_gitlink, read_blob

_BINARY_PROBE = 8192
_LFS_POINTER = b"version https://git-lfs.github.com/spec/"
_LFS_POINTER_MAX_BYTES = 1024  # git-lfs writes pointers of about 130 bytes


def read_markdown(repo: Repo, commit: str, entry: FileEntry, max_bytes: int) -> str | FileProblem:
    """The text of `entry` as of `commit` (a commit or tree sha; the tree is only needed to
    follow symlinks), or a FileProblem saying why it is not indexed."""
    if (named := page_path_problem(entry.path)) is not None:
        return named
    if is_gitlink(entry.mode):
        return FileProblem(
            entry.path,
            f"a git submodule (commit {entry.blob[:12]} of another repository); its pages are "
            "not indexed: add that repository as a source of its own",
        )
    try:
        blob = entry.blob.encode("ascii")
        if stat.S_ISLNK(entry.mode):
            target = resolve_links(repo, commit, [entry])[entry.path]
            if isinstance(target, FileProblem):
                return target
            blob = target
        data = read_blob(repo, blob)
    except MissingObject as exc:
        return missing_content(entry.path, exc)
    return decode_markdown(entry.path, data, max_bytes)


def page_path_problem(path: str) -> FileProblem | None:
    """A page whose path ends like a chunk id (`a.md#chunk0`) would share its id with a
    chunk of another page: it is not indexed."""
    if CHUNK_ID.search(path) is None:
        return None
    return FileProblem(
        path,
        "its name ends like a chunk id (`#chunkN`), so its id would name a chunk of another "
        "page; not indexed: rename the file",
    )


def missing_content(path: str, missing: MissingObject) -> FileProblem:
    return FileProblem(
        path,
        f"its content ({missing.kind} {missing.sha[:12]}) is missing from the repository (a "
        "partial or filtered clone?); not indexed: fetch the missing objects (`git fetch "
        "--refetch`) or index a full clone",
    )


def decode_markdown(path: str, data: bytes, max_bytes: int) -> str | FileProblem:
    if len(data) > max_bytes:
        return FileProblem(
            path,
            f"file is {len(data):,} bytes, over the max_file_bytes setting ({max_bytes:,}); "
            "not indexed",
        )
    if data.startswith(_LFS_POINTER) and len(data) <= _LFS_POINTER_MAX_BYTES:
        return FileProblem(
            path,
            "a Git LFS pointer: the page's text is in LFS storage, not in the repository; not "
            "indexed (commit markdown to git itself, not to LFS)",
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
