"""What a request's credential allows: its `Grant`, put in the ASGI scope by whichever check
accepted the credential (access.py's BearerAuth, oauth/protected_resource/guard.py's Guard)
and read by the routes and /mcp. A grant names its scopes and the sources its caller may
read; a request without one (a server with no credential configured) reads every source
(answers/source_limits.py's `limit_in`)."""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

import msgspec

from docdex.server.answers.reindex import REINDEX_KEY
from docdex.server.answers.source_limits import SCOPE_KEY, SourceLimit

GRANT = "docdex.grant"  # the scope key of the request's Grant
STATIC_CLIENT = "DOCDEX_TOKEN"  # the client a grant of $DOCDEX_TOKEN names
READ_SCOPE = "docdex:read"  # search_docs, query_docs, get_document, list_sources, resources
REINDEX_SCOPE = "docdex:reindex"  # the reindex tool
ALL_SCOPES: tuple[str, ...] = (READ_SCOPE, REINDEX_SCOPE)


class Grant(msgspec.Struct, frozen=True, kw_only=True):
    """What a request's token allows, and where its client learns how to get more."""

    client_id: str
    scopes: frozenset[str]
    resource_metadata: str = ""  # "" without OAuth
    sources: frozenset[str] | None = None  # the sources it may read; None: every source

    def allows(self, scope: str) -> bool:
        return scope in self.scopes

    @property
    def limit(self) -> SourceLimit:
        return SourceLimit(self.sources)


Verifier = Callable[[str], Awaitable["Grant | None"]]  # a bearer token -> its grant, or None


class Grants(Protocol):
    """Where a bearer token's grant is looked up (named_tokens.py's NamedTokens)."""

    def grant(self, token: str, resource_metadata: str = "") -> Grant | None: ...


def static_grant(sent: str, token: bytes, resource_metadata: str = "") -> Grant | None:
    """Every scope when `sent` is $DOCDEX_TOKEN (`token`, b"" when unset): compared in
    constant time, on the bytes sent (the header was decoded as Latin-1: encoding it back
    gives them)."""
    if not token or not hmac.compare_digest(sent.encode("latin-1"), token):
        return None
    return Grant(
        client_id=STATIC_CLIENT, scopes=frozenset(ALL_SCOPES), resource_metadata=resource_metadata
    )


def is_authorized(scope: Mapping[str, Any]) -> bool:
    """Whether the request came with a credential that reads the index (False when no
    check ran: a server that requires none)."""
    grant = scope.get(GRANT)
    return isinstance(grant, Grant) and grant.allows(READ_SCOPE)


def granted(scope: dict, grant: Grant) -> None:
    """Put `grant` in a request's (copied) ASGI scope, with what the answers read of it: its
    source limit (source_limits.py's SCOPE_KEY) and whether it may reindex (reindex.py's)."""
    scope[GRANT] = grant
    scope[SCOPE_KEY] = grant.limit
    scope[REINDEX_KEY] = grant.allows(REINDEX_SCOPE)


def stored_grant(
    client_id: str, scopes: list[str], sources: list[str] | None, resource_metadata: str
) -> Grant:
    """The grant of a token docdex stored (a named token, or its own server's): `sources`
    None reads every source."""
    return Grant(
        client_id=client_id,
        scopes=frozenset(scopes),
        resource_metadata=resource_metadata,
        sources=None if sources is None else frozenset(sources),
    )
