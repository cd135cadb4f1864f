"""Symlinks in a commit's tree: which of the selected files are links, what each one leads
to, and which links lead somewhere else than at the previous commit. A link's page depends on
its target as well as on the link itself, so a link is read again when its target moves or
changes although the link did not. Resolution is `indexer/git/symlinks.py`'s, fed with tree
entries, so a link never leads out of the tree.
"""

from __future__ import annotations

import functools
import stat
from collections.abc import Iterable

from dulwich.repo import Repo

from docdex.index_format.config import SourceError
from docdex.index_format.records import FileProblem

from . import symlinks
from .diffs import FileEntry, list_in_globs
from .repo import MissingObject, read_blob, root_tree
from .trees import TreeReader

LinkTarget = bytes | FileProblem  # the blob a symlink leads to, or why it is not followed


def list_links(
    repo: Repo, commit: str, include: list[str], exclude: list[str]
) -> dict[str, FileEntry]:
    """The symlinks among the files the globs select."""
    return list_in_globs(repo, commit, include, exclude, TreeReader.symlinks)


def resolve_links(
    repo: Repo, commit_or_tree: str, links: Iterable[FileEntry]
) -> dict[str, LinkTarget]:
    """What each symlink leads to in the tree of `commit_or_tree`, never leaving it."""
    reader = TreeReader(repo)
    root = root_tree(repo, commit_or_tree)
    return {link.path: _follow_symlink(repo, reader, root, link) for link in links}


def retargeted_links(
    repo: Repo, old_commit: str | None, new_commit: str, links: list[FileEntry]
) -> list[FileEntry]:
    """The `links` of new_commit that lead to other content (or another problem) than at
    old_commit: all of them when old_commit is None or gone from the object store."""
    new = resolve_links(repo, new_commit, links)
    try:
        old = resolve_links(repo, old_commit, links) if old_commit else {}
    except (SourceError, KeyError):  # the old commit, or objects of its tree, were pruned
        old = {}
    return [link for link in links if link.path not in old or old[link.path] != new[link.path]]


def _follow_symlink(repo: Repo, reader: TreeReader, root: bytes, link: FileEntry) -> LinkTarget:
    try:
        target = read_blob(repo, link.blob.encode("ascii"))
        resolved = symlinks.resolve(
            root, link.path, target, functools.partial(_tree_entry, repo, reader)
        )
    except MissingObject as exc:  # a partial clone: the link, or a tree on its way
        return FileProblem(link.path, f"symlink not followed: {exc}")
    if resolved.file is None:
        return FileProblem(link.path, f"{resolved.problem}: {target.decode('utf-8', 'replace')}")
    return resolved.file


def _tree_entry(
    repo: Repo, reader: TreeReader, tree: bytes, name: bytes
) -> symlinks.Entry[bytes, bytes]:
    found = reader.entries(tree).get(name)
    if found is None:
        return symlinks.Entry("missing")
    mode, sha = found
    if stat.S_ISLNK(mode):
        return symlinks.Entry("link", target=read_blob(repo, sha))
    if stat.S_ISDIR(mode):
        return symlinks.Entry("dir", directory=sha)
    if stat.S_ISREG(mode):
        return symlinks.Entry("file", file=sha)
    return symlinks.Entry("missing")  # a gitlink
