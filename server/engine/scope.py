"""Which manifest entries a request reads: a `source` and a `ref` argument turned into
entry keys (index-format/ref_names.py). Without a ref, a search reads each source's default ref
only, so that a page indexed at several refs does not come back once per ref."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from docdex.errors import InvalidArgument, NotFound, shown
from docdex.index_format.records import ServedPage, SourceState
from docdex.index_format.ref_names import UnknownRef, base_of, entries_of, resolve_ref

from .loaded import LoadedVersion

Entries = frozenset[str]  # the manifest entries searched (a source, or "source@ref"); empty: all


class Scope(msgspec.Struct, frozen=True):
    """What a search may return: chunks of these entries, under this path prefix, of these
    pages (the tags filter); every part is applied inside both retrievals. `visible`: the
    entries a caller limited to some sources may read, whose chunks alone the search's
    `low_confidence` counts (confidence.py), as if no other entry were indexed."""

    entries: Entries = frozenset()  # empty: every entry
    path_prefix: str = ""
    pages: frozenset[str] | None = None  # doc ids; None: any page
    visible: Entries | None = None  # None: every entry (an unlimited caller)

    @property
    def everything(self) -> bool:
        return not self.entries and not self.path_prefix and self.pages is None

    def reads(self, key: str) -> bool:
        """Whether the search reads the entry `key`: one of `entries` (any, when empty) that
        the caller may see."""
        searched = not self.entries or key in self.entries
        return searched and (self.visible is None or key in self.visible)

    def admits(self, page: ServedPage) -> bool:
        return (
            (not self.entries or page.source in self.entries)
            and page.path.startswith(self.path_prefix)
            and (self.pages is None or page.doc_id in self.pages)
        )


def tagged_pages(version: LoadedVersion, tags: Sequence[str]) -> frozenset[str] | None:
    """The pages carrying any of `tags` (case-folded); None when no tag is asked for."""
    wanted = {tag.strip().casefold() for tag in tags if tag.strip()}
    if not wanted:
        return None
    return frozenset(
        page.doc_id
        for page in version.pages.values()
        if wanted & {tag.casefold() for tag in page.tags}
    )


def check_source(version: LoadedVersion, source: str) -> None:
    if source and source not in version.manifest.sources:
        raise InvalidArgument(
            f"unknown source {shown(source)}; valid sources: {valid_sources(version.sources)}"
        )


def valid_sources(sources: Sequence[str]) -> str:
    return ", ".join(sources) or "(none indexed yet)"


def searched_entries(version: LoadedVersion, source: str, ref: str) -> Entries:
    """The entries to search: the source's (or every source's) entry for `ref`, else the
    default entries; empty when that is every entry."""
    states = version.manifest.sources
    if ref:
        bases = [source] if source else sorted({base_of(k, s) for k, s in states.items()})
        keys = {key for base in bases if (key := resolve_ref(states, base, ref))}
        if not keys:
            raise _no_ref(version, source, ref)
        return frozenset(keys)
    if source:
        return frozenset([source])
    defaults = {key for key, state in states.items() if state.default_ref}
    return frozenset() if len(defaults) == len(states) else frozenset(defaults)


def entry_doc_id(version: LoadedVersion, doc_id: str, ref: str) -> str:
    """`doc_id` as the id of the same path at `ref` (SOURCE:PATH -> SOURCE@REF:PATH)."""
    if not ref:
        return doc_id
    source, _, path = doc_id.partition(":")
    key = resolve_ref(version.manifest.sources, base_of(source, _state(version, source)), ref)
    if key is None:
        raise _no_ref(version, source.partition("@")[0], ref)
    return f"{key}:{path}"


def _state(version: LoadedVersion, key: str) -> SourceState:
    state = version.manifest.sources.get(key)
    if state is None:
        raise InvalidArgument(
            f"unknown source {shown(key)}; valid sources: {', '.join(version.sources) or '(none)'}"
        )
    return state


def _no_ref(version: LoadedVersion, source: str, ref: str) -> NotFound:
    states = version.manifest.sources
    if source:
        known = ", ".join(name or "(default)" for name in entries_of(states, source))
        return NotFound(
            f"source {shown(source)} does not index ref {shown(ref)}; its refs: {known or '(none)'}"
        )
    return UnknownRef(f"no source indexes ref {shown(ref)}")
