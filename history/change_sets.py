"""What changed between two trees, page by page: the pages a source's globs select (and a
path prefix, when asked) that were added, modified, deleted or renamed, from dulwich's tree
diff (cost follows the change: identical subtrees are skipped) and the rename matching of
renames.py (git diff -M's: an added page against the deleted ones); then, for the pages an
answer shows, the lines added and removed and the sections whose text changed
(`page_detail`).

A rename across the selection's edge is an add or a delete; a file that turns into a
symlink (or back) is a modification. Without the file contents a rename by similar content
cannot be checked (a partial clone): such a page is an add and a delete, and the answer
says so.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Literal

import msgspec
from dulwich.diff_tree import TreeChange, tree_changes
from dulwich.objects import ObjectID, TreeEntry
from dulwich.repo import Repo

from docdex.index_format.config import SourceError
from docdex.index_format.globs import matches

from .bounds import Budget
from .line_diffs import changed_hunks, line_counts, split_lines
from .outlines import Outline
from .page_contents import Unreadable, page_bytes
from .renames import Read, match_renames
from .tree_paths import Entry, TreeCache, is_file

ChangeKind = Literal["added", "modified", "deleted", "renamed"]
RENAMES_UNCHECKED = (
    "file contents are missing (a partial clone?): renames were matched by identical content "
    "only, so a page renamed and edited shows as deleted and added"
)


class Selection(msgspec.Struct, frozen=True):
    """The pages a range is read for: a source's globs, and a path prefix."""

    include: tuple[str, ...]
    exclude: tuple[str, ...] = ()
    path_prefix: str = ""

    def selects(self, path: str) -> bool:
        return path.startswith(self.path_prefix) and _in_globs(path, self.include, self.exclude)


@functools.lru_cache(maxsize=65_536)
def _in_globs(path: str, include: tuple[str, ...], exclude: tuple[str, ...]) -> bool:
    """Kept: a range's pages are matched again at each range that holds them."""
    return matches(path, list(include), list(exclude))


class PageChange(msgspec.Struct, frozen=True, omit_defaults=True):
    path: str  # the page's path at `until` (for a deleted page, where it was)
    kind: ChangeKind
    old_path: str = ""  # a renamed page's path at `since`
    commits: list[str] = []  # ids of the range's commits that touched it, newest first
    commits_omitted: int = 0  # older ones past the bound, not listed
    lines_added: int | None = None  # None: not counted (`note` says why)
    lines_removed: int | None = None
    sections: list[str] = []  # breadcrumbs of the sections whose text changed ("": the top)
    sections_omitted: int = 0  # changed sections past the bound, not named
    front_matter: bool = False  # its front matter changed
    note: str = ""


class PageDetail(msgspec.Struct, frozen=True):
    """What reading a page's two versions tells: lines, sections, front matter."""

    lines_added: int | None = None
    lines_removed: int | None = None
    sections: list[str] = []
    sections_omitted: int = 0
    front_matter: bool = False
    note: str = ""


@dataclass(frozen=True, slots=True)
class DiffedPage:
    """One page of a tree diff, with its entries on each side (None: absent)."""

    path: str
    kind: ChangeKind
    old_path: str
    old: Entry | None
    new: Entry | None

    def names(self) -> set[bytes]:
        """The paths the page had at either end."""
        return {
            name.encode("utf-8", "surrogateescape") for name in (self.path, self.old_path) if name
        }


def diff_selected(
    repo: Repo, old_tree: bytes | None, new_tree: bytes, selection: Selection, budget: Budget
) -> tuple[list[DiffedPage], str]:
    """The selected pages that differ from `old_tree` (None: nothing) to `new_tree`, in
    path order, and a note on the renames that could not be checked ("" if none)."""
    store = repo.object_store
    try:
        raw = list(tree_changes(store, _id(old_tree), ObjectID(new_tree)))
    except KeyError:
        raise SourceError(
            f"trees of {repo.path!r} are missing (a clone filtered by tree?): its history "
            "cannot be compared"
        ) from None
    pages = _type_changes_merged(_selected(raw, selection))
    pages, unchecked = _renames_paired(pages, lambda sha: read_content(repo, sha), budget)
    note = ""
    if unchecked:
        why = "renames by similar content were not all looked for"
        note = budget.spent_note(why) if budget.spent else RENAMES_UNCHECKED
    return sorted(pages, key=lambda page: page.path), note


def read_content(repo: Repo, sha: bytes) -> bytes | None:
    """A blob's content, None when the repository lacks it (a partial clone)."""
    try:
        return repo.object_store.get_raw(ObjectID(sha))[1]
    except KeyError:
        return None


def _id(tree: bytes | None) -> ObjectID | None:
    return None if tree is None else ObjectID(tree)


def _selected(raw: list[TreeChange], selection: Selection) -> list[DiffedPage]:
    def wanted(entry: TreeEntry | None) -> Entry | None:
        if entry is None or entry.path is None or entry.mode is None or entry.sha is None:
            return None
        if not is_file(entry.mode) or not selection.selects(_text(entry.path)):
            return None
        return entry.mode, entry.sha

    pages = []
    for change in raw:
        old, new = wanted(change.old), wanted(change.new)
        if old and new:
            assert change.new is not None
            pages.append(DiffedPage(_text(change.new.path or b""), "modified", "", old, new))
        elif old:
            assert change.old is not None
            pages.append(DiffedPage(_text(change.old.path or b""), "deleted", "", old, None))
        elif new:
            assert change.new is not None
            pages.append(DiffedPage(_text(change.new.path or b""), "added", "", None, new))
    return pages


def _type_changes_merged(pages: list[DiffedPage]) -> list[DiffedPage]:
    """A file turned into a symlink (or back) comes from the tree diff as a delete and an
    add of one path: one modification."""
    deleted = {page.path: page for page in pages if page.kind == "deleted"}
    merged = {
        page.path: DiffedPage(page.path, "modified", "", deleted[page.path].old, page.new)
        for page in pages
        if page.kind == "added" and page.path in deleted
    }
    kept = [page for page in pages if page.path not in merged]
    return [*kept, *merged.values()]


def _renames_paired(
    pages: list[DiffedPage], read: Read, budget: Budget
) -> tuple[list[DiffedPage], set[bytes]]:
    """Added pages that are renames of deleted ones, made one renamed page each; and the
    adds that could not be compared."""
    added = {_raw(p.path): p.new for p in pages if p.kind == "added" and p.new}
    deleted = {_raw(p.path): p.old for p in pages if p.kind == "deleted" and p.old}
    origins, unchecked = match_renames(added, deleted, read, budget.timed_out)
    if not origins:
        return pages, unchecked
    gone = {_text(old) for old in origins.values()}
    renamed = {_text(new): _text(old) for new, old in origins.items()}
    by_path = {p.path: p for p in pages if p.kind == "deleted"}
    out = []
    for page in pages:
        if page.path in renamed and page.kind == "added":
            origin = by_path[renamed[page.path]]
            out.append(DiffedPage(page.path, "renamed", origin.path, origin.old, page.new))
        elif not (page.kind == "deleted" and page.path in gone):
            out.append(page)
    return out, unchecked


def _raw(path: str) -> bytes:
    return path.encode("utf-8", "surrogateescape")


def _text(path: bytes) -> str:
    return path.decode("utf-8", "surrogateescape")


# --- a page's lines and sections ------------------------------------------------------------


def page_detail(
    repo: Repo,
    trees: TreeCache,
    page: DiffedPage,
    trees_at: tuple[bytes | None, bytes],
    budget: Budget,
    levels: int,
) -> PageDetail | None:
    """Lines added and removed and changed sections of `page` between the root trees
    `trees_at` (since, until); None when the budget ran out before it was read."""
    bounds = budget.bounds
    if budget.spent or budget.timed_out():
        return None
    try:
        old = _version(
            repo, trees, trees_at[0], page.old_path or page.path, page.old, bounds.max_file_bytes
        )
        new = _version(repo, trees, trees_at[1], page.path, page.new, bounds.max_file_bytes)
    except Unreadable as exc:
        return PageDetail(note=f"lines not counted: {exc}")
    if not budget.spend_bytes(len(old) + len(new)):
        return None
    old_lines, new_lines = split_lines(old), split_lines(new)
    hunks = changed_hunks(old_lines, new_lines)
    added, removed = line_counts(hunks)
    # Lines replaced are named by the sections they are in now; lines only removed, by the
    # sections they were in (the old version is outlined only then).
    outlines: dict[bool, Outline] = {}
    named: dict[str, None] = {}
    front_matter = False
    for a0, a1, b0, b1 in hunks:
        now = b1 > b0
        if now not in outlines:
            outlines[now] = Outline(_decoded(new if now else old), levels)
        start, end = (b0, b1) if now else (a0, a1)
        front_matter |= outlines[now].touches_front_matter(start, end)
        named.update(dict.fromkeys(_body_sections(outlines[now], start, end)))
    sections = list(named)
    kept = sections[: bounds.max_sections]
    return PageDetail(added, removed, kept, len(sections) - len(kept), front_matter)


def _body_sections(outline: Outline, start: int, end: int) -> list[str]:
    """The sections of lines [start, end) below the front matter (none when the lines are
    all front matter)."""
    if end > start and end <= outline.front_matter_end:
        return []
    return outline.sections(start, end)


def _version(
    repo: Repo, trees: TreeCache, tree: bytes | None, path: str, entry: Entry | None, max_bytes: int
) -> bytes:
    if entry is None or tree is None:
        return b""
    return page_bytes(repo, trees, tree, path, entry, max_bytes)


def _decoded(data: bytes) -> list[str]:
    """The lines of `data` as text, numbered as split_lines numbers them."""
    return data.decode("utf-8", "replace").replace("\r\n", "\n").split("\n")
