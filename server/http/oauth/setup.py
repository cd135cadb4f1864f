"""The OAuth parts of the app for an `--auth` mode: routes, the guard's verifiers, the paths
open without a token.

    --auth oauth   the protected resource metadata, docdex's authorization server and its
                   consent page; tokens checked against the store
    --auth jwt     the protected resource metadata naming the provider; JWTs checked
                   against its JWKS (protected_resource/jwks.py)

The routes' handlers come from the MCP SDK, whose import costs more CPU than the rest of
start-up (adr/0008, adr/0011): they are built in a thread at the first request to one of
their paths (`LazyRoutes`), so `docdex serve` listens as soon as it does without OAuth.
Checking a token needs nothing of the SDK.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import msgspec
from starlette.routing import BaseRoute, Route, Router
from starlette.types import Receive, Scope, Send

from docdex.server.http.grants import Grant, Verifier, stored_grant
from docdex.server.mcp.deferred import SDK_IMPORT

from .authorization_server.token_store import Clock, OAuthStore
from .paths import AS_PATHS, PROTECTED_RESOURCE_PATHS, resource_metadata_url
from .protected_resource.jwks import JwksVerifier
from .settings import AuthMode, AuthSettings, same_resource

if TYPE_CHECKING:  # at run time the provider loads with the routes
    from .authorization_server.provider import Lifetimes


class OAuthParts(msgspec.Struct, frozen=True, kw_only=True):
    routes: list[BaseRoute]
    verifiers: list[Verifier]
    open_paths: frozenset[str]
    resource_metadata: str
    resource: str = ""  # the URL a client that takes only a URL is given (PUBLIC_URL/mcp)


def oauth_parts(
    settings: AuthSettings,
    state_dir: Path,
    clock: Clock = time.time,
    lifetimes: Lifetimes | None = None,
    sources: Callable[[], list[str]] = list,
) -> OAuthParts:
    """What `settings.mode` (OAUTH or JWT) adds to the app; `state_dir`: the data directory's
    state/, where the authorization server keeps its clients and tokens; `sources`: the
    configured sources, which the consent page offers to limit a client to."""
    metadata = resource_metadata_url(settings.public_url)
    if settings.mode is AuthMode.JWT:
        assert settings.jwt is not None  # auth_settings checked it
        jwks = JwksVerifier(settings.jwt.jwks_url, settings.issuer, settings.audience, clock=clock)
        return OAuthParts(
            routes=_lazy(PROTECTED_RESOURCE_PATHS, lambda: _resource_routes(settings)),
            verifiers=[jwks.grant_verifier(metadata)],
            open_paths=frozenset(),
            resource_metadata=metadata,
            resource=settings.resource,
        )
    store = OAuthStore(state_dir, clock)
    paths = (*PROTECTED_RESOURCE_PATHS, *AS_PATHS)
    return OAuthParts(
        routes=_lazy(paths, lambda: _server_routes(settings, store, clock, lifetimes, sources)),
        verifiers=[store_verifier(store, settings, metadata)],
        open_paths=frozenset(AS_PATHS),
        resource_metadata=metadata,
        resource=settings.resource,
    )


def store_verifier(store: OAuthStore, settings: AuthSettings, resource_metadata: str) -> Verifier:
    """A token of docdex's own authorization server: live in the store (not revoked, not
    expired by its clock), issued by this issuer for this resource."""

    async def verify(token: str) -> Grant | None:
        record = store.access_token(token)
        if record is None or record.issuer != settings.issuer:
            return None
        if not same_resource(record.resource, settings.resource):
            return None
        return stored_grant(record.client_id, record.scopes, record.sources, resource_metadata)

    return verify


def _resource_routes(settings: AuthSettings) -> list[BaseRoute]:
    from .routes import protected_resource_routes

    return protected_resource_routes(settings)


def _server_routes(
    settings: AuthSettings,
    store: OAuthStore,
    clock: Clock,
    lifetimes: Lifetimes | None,
    sources: Callable[[], list[str]],
) -> list[BaseRoute]:
    from .authorization_server.consent import Consent
    from .authorization_server.provider import LIFETIMES, DocdexProvider
    from .routes import authorization_server_routes, protected_resource_routes

    provider = DocdexProvider(store, settings, lifetimes or LIFETIMES, clock)
    consent = Consent(provider, settings.admin_secret, sources)
    return [*protected_resource_routes(settings), *authorization_server_routes(provider, consent)]


def _lazy(paths: tuple[str, ...], build: Callable[[], list[BaseRoute]]) -> list[BaseRoute]:
    app = LazyRoutes(build)
    return [Route(path, app) for path in dict.fromkeys(paths)]


class LazyRoutes:
    """An ASGI app answering with the routes `build` returns, built in a thread at the
    first request (which waits for them)."""

    def __init__(self, build: Callable[[], list[BaseRoute]]) -> None:
        self._build = build
        self._router: Router | None = None
        self._lock = asyncio.Lock()

    def _locked_build(self) -> list[BaseRoute]:
        with SDK_IMPORT:  # not beside /mcp's build (server/mcp/deferred.py)
            return self._build()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._router is None:
            async with self._lock:
                if self._router is None:
                    self._router = Router(await anyio.to_thread.run_sync(self._locked_build))
        await self._router(scope, receive, send)
