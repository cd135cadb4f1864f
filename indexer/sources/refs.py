"""A source's refs besides its default branch (index-format/ref_names.py names them): which
branches and tags its `refs` patterns select in the repository, and what its refs as the
previous version indexed them lend a ref being read (adr/0017): vectors, by content hash,
and page dates, so that a new ref costs what it differs by, not what it holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from dulwich.repo import Repo

from docdex.index_format.config import ConfigError, SourceConfig, SourceError, validate_ref_pattern
from docdex.index_format.layout import DataDir
from docdex.index_format.records import ChunkRef, Manifest, SourceState, StoredPage
from docdex.index_format.ref_names import (
    RefKind,
    base_of,
    full_ref,
    ref_key,
    selected,
    supported_ref_name,
)
from docdex.index_format.store import load_pages
from docdex.indexer.git.repo import peeled_commit, ref_tips

from .changes import DatedPages, base_commit


@dataclass(frozen=True)
class FoundRef:
    """A branch or tag the patterns select, as the repository has it now."""

    key: str  # its manifest entry: "source@name"
    name: str  # short name
    kind: RefKind
    commit: str  # peeled: the commit an annotated tag names

    @property
    def full(self) -> str:
        return full_ref(self.kind, self.name)


class Discovered(NamedTuple):
    refs: list[FoundRef]
    ignored: list[str]  # sentences on selected refs that are not indexed, and why


def discover(repo: Repo, source: SourceConfig, default_branch: str) -> Discovered:
    """The branches and tags `source.refs` selects, other than the default branch. A tag
    with the name of an indexed branch gives way to it; refs whose names the ids cannot
    carry, or that lead to no commit, are left out. Each leaves a sentence in `ignored`."""
    patterns = _patterns(source)
    if not patterns:
        return Discovered([], [])
    tips = {
        kind: {n: sha for n, sha in ref_tips(repo, prefix).items() if selected(patterns, kind, n)}
        for kind, prefix in _REF_PREFIXES
    }
    branches = set(tips["branch"]) | {default_branch}
    found: list[FoundRef] = []
    ignored: list[str] = []
    for kind, named in tips.items():
        for name, sha in named.items():
            if kind == "branch" and name == default_branch:
                continue  # the source's own entry indexes it
            reason = _left_out(kind, name, branches)
            commit = None if reason else peeled_commit(repo, sha)
            if commit is None:
                ignored.append(f"{kind} {name}: {reason or 'it leads to no commit'}")
                continue
            found.append(FoundRef(ref_key(source.name, name), name, kind, commit))
    return Discovered(found, ignored)


_REF_PREFIXES: tuple[tuple[RefKind, str], ...] = (("branch", "refs/heads/"), ("tag", "refs/tags/"))


def _patterns(source: SourceConfig) -> list[str]:
    try:
        return [validate_ref_pattern(p) for p in source.refs]
    except ConfigError as exc:
        raise SourceError(f"source {source.name!r}: {exc}") from None


def _left_out(kind: RefKind, name: str, branches: set[str]) -> str:
    if not supported_ref_name(name):
        return (
            "its name is not indexed (letters, digits, '.', '_', '+', '-' and '/' only, at "
            "most 128 characters)"
        )
    if kind == "tag" and name in branches:
        return "a branch of the same name is indexed"
    return ""


@dataclass
class RefFamily:
    """One source's entries in the previous version (its default ref and its other refs),
    read only when a ref of the source changes and needs them."""

    data: DataDir
    states: dict[str, SourceState]  # key -> state, entries with pages only
    pages: dict[str, dict[str, StoredPage]] = field(default_factory=dict)  # key -> path -> page
    lent: dict[str, set[str]] = field(default_factory=dict)  # key -> paths already lent

    @classmethod
    def of(cls, data: DataDir, source: str, previous: Manifest | None) -> RefFamily:
        entries = previous.sources if previous else {}
        return cls(
            data,
            {
                key: state
                for key, state in entries.items()
                if base_of(key, state) == source and state.pages_file
            },
        )

    def pages_of(self, key: str) -> dict[str, StoredPage]:
        if key not in self.pages:
            stored = load_pages(self.data, self.states[key].pages_file, StoredPage)
            self.pages[key] = {p.path: p for p in stored}
        return self.pages[key]

    def lend_vectors(self, reusable: dict[str, ChunkRef], paths: set[str] | None) -> None:
        """The chunks of the source's refs may lend their vectors to a text they share with
        a ref being indexed, so that a ref differing from another in a few files embeds only
        what those files do not share. A ref read in full (`paths` None) borrows from every
        page, wherever its text moved; a push from the pages at the paths it touches only,
        which keeps it cheap in a source with many refs."""
        for key in self.states:
            pages = self.pages_of(key)
            lent = self.lent.setdefault(key, set())
            for path in (set(pages) if paths is None else paths) - lent:
                page = pages.get(path)
                for ref in page.refs() if page else ():
                    reusable.setdefault(ref.content_hash, ref)
                lent.add(path)

    def dates_for(self, commit: str) -> DatedPages | None:
        """An entry whose page dates a ref read in full can start from, so that the walk
        through history covers only where the two differ: one at the same commit, else the
        default ref, else any with a commit."""
        ranked = sorted(
            self.states.items(), key=lambda kv: (kv[1].commit != commit, not kv[1].default_ref)
        )
        for key, state in ranked:
            since = base_commit(state)
            if since:
                return DatedPages(since, self.pages_of(key))
        return None
