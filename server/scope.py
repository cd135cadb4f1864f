"""Which manifest entries a request reads: a `source` and a `ref` argument turned into
entry keys (index-format/refs.py). Without a ref, a search reads each source's default ref
only, so that a page indexed at several refs does not come back once per ref."""

from __future__ import annotations

from docdex.index_format.refs import base_of, entries_of, resolve_ref

from .errors import SearchError, shown
from .search import Entries
from .snapshot import Snapshot


def searched_entries(snapshot: Snapshot, source: str, ref: str) -> Entries:
    """The entries to search: the source's (or every source's) entry for `ref`, else the
    default entries; empty when that is every entry."""
    states = snapshot.manifest.sources
    if ref:
        bases = [source] if source else sorted({base_of(k, s) for k, s in states.items()})
        keys = {key for base in bases if (key := resolve_ref(states, base, ref))}
        if not keys:
            raise SearchError(_no_ref(snapshot, source, ref))
        return frozenset(keys)
    if source:
        return frozenset([source])
    defaults = {key for key, state in states.items() if state.default_ref}
    return frozenset() if len(defaults) == len(states) else frozenset(defaults)


def entry_doc_id(snapshot: Snapshot, doc_id: str, ref: str) -> str:
    """`doc_id` as the id of the same path at `ref` (SOURCE:PATH -> SOURCE@REF:PATH)."""
    if not ref:
        return doc_id
    source, _, path = doc_id.partition(":")
    key = resolve_ref(snapshot.manifest.sources, base_of(source, _state(snapshot, source)), ref)
    if key is None:
        raise SearchError(_no_ref(snapshot, source.partition("@")[0], ref))
    return f"{key}:{path}"


def _state(snapshot: Snapshot, key: str):
    state = snapshot.manifest.sources.get(key)
    if state is None:
        raise SearchError(
            f"unknown source {shown(key)}; valid sources: {', '.join(snapshot.sources) or '(none)'}"
        )
    return state


def _no_ref(snapshot: Snapshot, source: str, ref: str) -> str:
    states = snapshot.manifest.sources
    if source:
        known = ", ".join(name or "(default)" for name in entries_of(states, source))
        return (
            f"source {shown(source)} does not index ref {shown(ref)}; its refs: {known or '(none)'}"
        )
    return f"no source indexes ref {shown(ref)}; list_sources shows each source's refs"
