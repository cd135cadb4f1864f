"""Which commits of a range touched each page: the commits reachable from `until` and not
from `since`, newest first (git log since..until), each compared with its parents at the
pages' paths only.

A commit touched a page when the page's file differs from its parent's; a merge, when it
differs from every parent's (a clean merge brings the branch's commits, which are listed
themselves; a merge that resolved a conflict in the page is listed too), as `git log --
PATH` shows them. Renames are followed back: where a commit adds a path the walk follows,
the rename matching of renames.py compares it with the commit's deletes, and the walk
follows the path it came from too. A commit whose parents the repository lacks (a shallow
clone's cut) is where history stops: what it changed cannot be told, and the answer says
so.

The range's commits are walked once (`RangeCommits`, bounded by the budget's commits) and
can be read again for each window of pages an answer shows.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from dulwich.diff_tree import tree_changes
from dulwich.objects import Commit, ObjectID
from dulwich.repo import Repo
from dulwich.walk import Walker

from .bounds import Budget
from .change_sets import DiffedPage, read_content
from .renames import match_renames
from .repositories import Ancestry, CommitInfo, commit_info
from .tree_paths import Entry, PathSet, TreeCache

Sides = tuple[Entry | None, Entry | None]  # a path's file before and after a commit


@dataclass(frozen=True, slots=True)
class Step:
    """One commit of a range: its tree and the parents the repository holds."""

    info: CommitInfo
    id: bytes
    tree: bytes
    parents: tuple[bytes, ...]
    cut: bool  # it has parents the repository lacks all of: what it changed is unknown


class RangeCommits:
    """The commits of `since`..`until`, newest first, walked as they are read; once read
    through, `complete` says whether the budget let the walk reach the range's end."""

    def __init__(self, repo: Repo, since: str, until: str, budget: Budget) -> None:
        self._repo = repo
        self._since = since
        self._until = until
        self._budget = budget
        self.ancestry = Ancestry(repo)
        self.complete = True
        self.note = ""

    def __iter__(self) -> Iterator[Step]:
        walker = Walker(
            self._repo.object_store,
            [ObjectID(self._until.encode("ascii"))],
            exclude=[ObjectID(self._since.encode("ascii"))] if self._since else None,
            get_parents=self.ancestry.readable_parents,
        )
        for entry in walker:
            if not self._budget.spend_commit():
                self.complete = False
                self.note = self._budget.spent_note("older commits of the range are not listed")
                return
            commit = entry.commit
            parents = self.ancestry.parents(commit)
            cut = not parents and not self.ancestry.is_root(commit)
            yield Step(commit_info(commit), commit.id, commit.tree, tuple(parents), cut)


@dataclass
class Attribution:
    """The commits that touched each page (in the order the pages were given)."""

    commits: list[list[str]]  # ids, newest first
    names: list[list[str]]  # the paths each page had, newest first
    infos: dict[str, CommitInfo] = field(default_factory=dict)  # of every commit listed
    complete: bool = True  # no page's history was left out (`note` says why)
    note: str = ""


def attribute(
    repo: Repo,
    trees: TreeCache,
    steps: Iterable[Step],
    pages: list[DiffedPage],
    budget: Budget,
    stop_after: int | None = None,
) -> Attribution:
    """The commits among `steps` that touched each page. The walk ends early once every
    page added in the range has been traced back to its first commit, or (`stop_after`)
    once the first page has more than that many commits."""
    walk = _Walk(repo, trees, pages)
    found = walk.found
    if not pages:
        return found
    if isinstance(steps, list):  # a walked range: every parent's tree is at hand
        walk.trees_of.update((step.id, step.tree) for step in steps)
    every_page_added = len(walk.unborn) == len(pages)
    for step in steps:
        if every_page_added and not walk.unborn:
            break
        if budget.timed_out():
            found.complete = False
            found.note = budget.spent_note("older commits of these pages are not listed")
            break
        walk.visit(step)
        if stop_after is not None and len(found.commits[0]) > stop_after:
            del found.commits[0][stop_after:]
            found.complete = False
            found.note = f"the newest {stop_after} commits are listed; there are older ones"
            break
    return found


class _Walk:
    def __init__(self, repo: Repo, trees: TreeCache, pages: list[DiffedPage]) -> None:
        self.repo = repo
        self.trees = trees
        self.traced: dict[bytes, list[int]] = {}
        self.paths = PathSet()
        self.unborn = {n for n, page in enumerate(pages) if page.kind == "added"}
        self.found = Attribution(
            [[] for _ in pages],
            [[page.path, *([page.old_path] if page.old_path else [])] for page in pages],
        )
        self.trees_of: dict[bytes, bytes] = {}  # commit id -> its tree, of the commits seen
        for n, page in enumerate(pages):
            for name in page.names():
                self._trace(name, n)

    def _trace(self, name: bytes, page: int) -> None:
        if page not in self.traced.setdefault(name, []):
            self.traced[name].append(page)
            self.paths.add(name)

    def visit(self, step: Step) -> None:
        self.trees_of[step.id] = step.tree
        if step.cut:
            return
        try:
            parent_trees = [self._tree_of(parent) for parent in step.parents]
            first = parent_trees[0] if parent_trees else None
            changed = self.paths.differing(self.trees, first, step.tree)
            for other in parent_trees[1:]:
                also = self.paths.differing(self.trees, other, step.tree)
                changed = {name: sides for name, sides in changed.items() if name in also}
        except KeyError:
            return  # a tree is missing: what this commit changed cannot be told
        born: list[tuple[int, bytes]] = []
        for name, (before, after) in sorted(changed.items()):
            for page in list(self.traced.get(name, [])):
                commits = self.found.commits[page]
                if step.info.id not in commits[-1:]:
                    commits.append(step.info.id)
                    self.found.infos[step.info.id] = step.info
                if before is None and after is not None:
                    born.append((page, name))
        if born:
            self._born(born, changed, first, step.tree)

    def _born(
        self,
        born: list[tuple[int, bytes]],
        changed: dict[bytes, Sides],
        parent_tree: bytes | None,
        tree: bytes,
    ) -> None:
        """Pages whose path first appears in the commit of `tree`: each renamed from another
        path, which the walk follows from here on, or added here, its first commit."""
        added = {name: sides[1] for name, sides in changed.items() if sides[1] is not None}
        wanted = {name: added[name] for _, name in born}
        origins = _renamed_from(self.repo, parent_tree, tree, wanted) if parent_tree else {}
        for page, name in born:
            origin = origins.get(name)
            if origin is None:
                self.unborn.discard(page)
                continue
            old_path = origin.decode("utf-8", "surrogateescape")
            if old_path not in self.found.names[page]:
                self.found.names[page].append(old_path)
            self._trace(origin, page)

    def _tree_of(self, commit: bytes) -> bytes:
        tree = self.trees_of.get(commit)
        if tree is None:
            found = self.repo.object_store[ObjectID(commit)]
            assert isinstance(found, Commit)
            tree = self.trees_of[commit] = found.tree
        return tree


def _renamed_from(
    repo: Repo, parent_tree: bytes, tree: bytes, added: dict[bytes, Entry]
) -> dict[bytes, bytes]:
    """new path -> old path of the `added` files a commit renamed (its deletes are the
    candidates)."""
    deleted: dict[bytes, Entry] = {}
    try:
        for change in tree_changes(repo.object_store, ObjectID(parent_tree), ObjectID(tree)):
            old = change.old
            if change.new is None and old is not None and old.path and old.mode and old.sha:
                deleted[old.path] = (old.mode, old.sha)
    except KeyError:
        return {}  # a tree is missing: the rename is not followed
    origins, _unchecked = match_renames(added, deleted, lambda sha: read_content(repo, sha))
    return origins
