"""Includes: MkDocs snippets and Hugo/Jekyll include tags, resolved inside the repository
(adr/0018).

Recognised, one per line, outside fenced code:

    --8<-- "path"                      MkDocs (pymdownx.snippets), also 'path' or bare path
    {% include path %}                 Jekyll, from _includes/ (parameters after it ignored)
    {% include_relative path %}        Jekyll, beside the page
    {{< include "path" >}}             Hugo include / readfile shortcodes, {{% ... %}} too
    {{< readfile file="path" >}}

A path is looked for, in order, beside the page, at the repository root and under the
conventional folders (`docs/`, `snippets/`, `includes/`, `_includes/`, `content/`); the
first file that exists is read. A path that is absolute, has a `..` that leaves the
repository, or names no file is left alone (the line stays as written). Files are read
through a `PathReader` that sees only the tree being indexed (the commit's tree, or the
working tree with symlinks leaving it refused), at most `MAX_INCLUDE_BYTES` each and
`MAX_INCLUDES` per page, nested `MAX_DEPTH` deep.
"""

from __future__ import annotations

import logging
import os
import posixpath
import re
import stat
from collections.abc import Callable
from pathlib import Path

from dulwich.object_store import tree_lookup_path
from dulwich.repo import Repo

from docdex.index_format.config import SourceConfig, source_kind
from docdex.index_format.layout import DataDir
from docdex.indexer.git.blobs import decode_markdown
from docdex.indexer.git.repo import read_blob, to_bytes
from docdex.indexer.sources.remote import mirror_path

_log = logging.getLogger(__name__)

PathReader = Callable[[str], "str | None"]  # repository path -> text, None if unreadable

MAX_INCLUDE_BYTES = 200_000
MAX_INCLUDES = 32  # per page, nested ones counted
MAX_DEPTH = 3

_SNIPPET = re.compile(r"""^[ \t]*--8<--[ \t]+(?:"([^"\n]+)"|'([^'\n]+)'|(\S+))[ \t]*$""")
_JEKYLL = re.compile(
    r"^[ \t]*\{%-?[ \t]*(include|include_relative)[ \t]+([^\s%]+)[^%]*-?%\}[ \t]*$"
)
_HUGO = re.compile(
    r"""^[ \t]*\{\{[<%][ \t]*(?:include|readfile)[ \t]+(?:file[ \t]*=[ \t]*)?"""
    r"""(?:"([^"\n]+)"|'([^'\n]+)'|([^\s>%]+))[^>%]*[>%]\}\}[ \t]*$"""
)
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_FOLDERS = ("", "docs", "snippets", "includes", "_includes", "content")


def include_lines(lines: list[str]) -> dict[int, tuple[str, list[str]]]:
    """Line index -> (kind, candidate paths as written) of each include line outside fences."""
    found: dict[int, tuple[str, list[str]]] = {}
    fence = ""
    for index, line in enumerate(lines):
        if fence:
            stripped = line.strip()
            if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
                fence = ""
            continue
        opening = _FENCE.match(line)
        if opening:
            fence = opening.group(1)
            continue
        if "--8<--" in line and (m := _SNIPPET.match(line)):
            found[index] = ("snippet", [_first(m)])
        elif "{%" in line and (m := _JEKYLL.match(line)):
            found[index] = (m.group(1), [m.group(2).strip("\"'")])
        elif "{{" in line and (m := _HUGO.match(line)):
            found[index] = ("hugo", [_first(m)])
    return found


def _first(match: re.Match[str]) -> str:
    return next(group for group in match.groups() if group)


def candidates(kind: str, written: str, page_path: str) -> list[str]:
    """Repository paths to try for an include written as `written` in `page_path`, safe ones
    only (relative, inside the repository)."""
    if not written or written.startswith(("/", "\\")) or "\\" in written or "\0" in written:
        return []
    here = posixpath.dirname(page_path)
    if kind == "include_relative":
        bases = [here]
    elif kind == "include":
        bases = ["_includes", "", here]
    else:
        bases = [here, *_FOLDERS]
    paths = [written]
    if kind == "snippet" and ":" in written:  # "file.md:section" / "file.md:1:5"
        paths.append(written.split(":", 1)[0])
    out: list[str] = []
    for path in paths:
        for base in bases:
            joined = posixpath.normpath(posixpath.join(base, path))
            if joined in (".", "..") or joined.startswith("../") or joined.startswith("/"):
                continue
            if joined not in out:
                out.append(joined)
    return out


def commit_reader(path: str, commit: str, max_bytes: int = MAX_INCLUDE_BYTES) -> PathReader:
    """Regular files of `commit`'s tree in the repository at `path` (symlinks are not
    followed). The repository is opened per read: includes are rare, and nothing stays open."""

    def read(file: str) -> str | None:
        try:
            with Repo(path) as repo:
                tree = repo[commit.encode("ascii")].tree  # type: ignore[attr-defined]
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


DRAFT_SKIPPED = "draft: true in its front matter; not indexed (drafts = true keeps drafts)"


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
