"""Which sources a caller may read: a token limited to some sources (its `SourceLimit`) sees
those sources only, in every answer, as if the others were not indexed at all.

A limit names configured sources (the names in docdex.toml); a source's every indexed ref
(`source@ref` entries) goes with it. `Docs.for_caller` applies one to every answer; this
module holds the rules: which manifest entries a caller sees, the scope its searches run
in (the engine's own `Scope`, so that other sources never become candidates, and whose
`visible` entries are all `low_confidence` counts), and the refusals it gets, which list the
caller's sources only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TypeVar

import msgspec

from docdex.errors import InvalidArgument, NotFound, shown
from docdex.index_format.records import ServedPage, SourceState
from docdex.index_format.ref_names import base_of
from docdex.server.engine import Engine, Scope, VersionReader

V = TypeVar("V")
SCOPE_KEY = "docdex.limit"  # where the transports keep a request's limit (an ASGI scope's key)
NOTHING = Scope(pages=frozenset())  # no page passes: a caller none of whose sources is indexed


class SourceLimit(msgspec.Struct, frozen=True):
    """The sources a caller may read; `sources` None: every source, those added later too."""

    sources: frozenset[str] | None = None

    @property
    def unlimited(self) -> bool:
        return self.sources is None

    def allows(self, name: str) -> bool:
        """Whether the configured source `name` is one of the caller's."""
        return self.sources is None or name in self.sources

    def admits(self, key: str, state: SourceState | None) -> bool:
        """Whether the manifest entry `key` (a source or `source@ref`) is the caller's."""
        if self.sources is None:
            return True
        return state is not None and base_of(key, state) in self.sources

    def states(self, states: Mapping[str, SourceState]) -> dict[str, SourceState]:
        """The entries of `states` the caller sees."""
        return {key: state for key, state in states.items() if self.admits(key, state)}

    def named(self, items: Mapping[str, V]) -> dict[str, V]:
        """`items` keyed by configured source name, those the caller may read."""
        return {name: value for name, value in items.items() if self.allows(name)}

    def names(self, names: Iterable[str]) -> list[str]:
        return [name for name in names if self.allows(name)]

    # --- over one version -----------------------------------------------------------------

    def entries(self, index: VersionReader) -> list[str]:
        """The version's manifest entries the caller sees, sorted."""
        return sorted(self.states(index.manifest.sources))

    def admits_page(self, index: VersionReader, page: ServedPage) -> bool:
        return self.admits(page.source, index.manifest.sources.get(page.source))

    def admits_id(self, index: VersionReader, doc_id: str) -> bool:
        """Whether a document id's entry (the part before ':') is the caller's."""
        key = doc_id.partition(":")[0]
        return self.admits(key, index.manifest.sources.get(key))

    def check_source(self, index: VersionReader, source: str) -> None:
        """InvalidArgument unless `source` is "" or an entry the caller sees, naming only the
        caller's entries as valid: another source is as unknown as one never indexed."""
        if self.sources is None:
            index.check_source(source)
        elif source and source not in self.states(index.manifest.sources):
            valid = ", ".join(self.entries(index)) or "(none indexed yet)"
            raise InvalidArgument(f"unknown source {shown(source)}; valid sources: {valid}")

    def scope(
        self,
        engine: Engine,
        source: str = "",
        ref: str = "",
        path_prefix: str = "",
        tags: Sequence[str] = (),
    ) -> Scope:
        """The engine's scope for the request, narrowed to the caller's entries: the
        searches' candidates come from those entries only."""
        self.check_source(engine.index, source)
        scope = engine.scope(source, ref, path_prefix, tags)
        if self.sources is None:
            return scope
        mine = frozenset(self.entries(engine.index))
        entries = (scope.entries & mine) if scope.entries else _defaults(engine.index, mine)
        if entries:
            return msgspec.structs.replace(scope, entries=entries, visible=mine)
        if ref:  # only other sources index this ref: the answer an unknown ref gets
            raise NotFound(
                f"no source indexes ref {shown(ref)}; list_sources shows each source's refs"
            )
        return NOTHING


def _defaults(index: VersionReader, entries: frozenset[str]) -> frozenset[str]:
    """The default-ref entries among `entries` (a search without a ref reads those)."""
    states = index.manifest.sources
    return frozenset(key for key in entries if states[key].default_ref)


EVERY_SOURCE = SourceLimit()


def limit_in(scope: Mapping[str, object] | None) -> SourceLimit:
    """The limit the HTTP layer put in a request's ASGI scope: none there (a server that
    requires no token, or stdio's `None`) is every source."""
    limit = scope.get(SCOPE_KEY) if scope is not None else None
    return limit if isinstance(limit, SourceLimit) else EVERY_SOURCE
