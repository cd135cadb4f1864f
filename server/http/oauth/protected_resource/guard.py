"""docdex as an OAuth protected resource: who may call /mcp and /api, with which scopes.

Every request but the open paths' (the page's shell and files, /health, the metadata, the
authorization server's own endpoints) needs `Authorization: Bearer <token>`, one of:

- $DOCDEX_TOKEN (constant-time on its bytes): every scope, as before OAuth;
- a token of docdex's authorization server (oauth/authorization_server/) or a JWT of the
  configured identity provider (jwks.py), checked by a `Verifier`: issuer, audience (this
  server's resource URI), expiry; its scopes.

Without a valid token: 401 with `WWW-Authenticate: Bearer scope="docdex:read",
resource_metadata="..."` (RFC 9728), from which a client finds the authorization server and
asks to read only. A token without docdex:read: 403 `insufficient_scope`. The request's
`Grant` goes on in the scope (`GRANT`), so that /mcp can ask for docdex:reindex on the one
call that needs it (scopes.py), and /health shows its details to a request whose grant
reads (grants.py's `is_authorized`, as behind BearerAuth).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from starlette.types import ASGIApp, Receive, Scope, Send

from docdex.server.http.grants import GRANT, STATIC_CLIENT, Grant, Verifier, granted, static_grant
from docdex.server.http.oauth.settings import READ_SCOPE

__all__ = ["GRANT", "STATIC_CLIENT", "Grant", "Guard", "Verifier", "send_challenge"]


class Guard:
    def __init__(
        self,
        app: ASGIApp,
        resource_metadata: str,
        verifiers: Sequence[Verifier],
        token: str | None,
        open_paths: frozenset[str],
    ) -> None:
        self.app = app
        self.resource_metadata = resource_metadata
        self.verifiers = tuple(verifiers)
        self._token = token.encode() if token else b""
        self._open = open_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sent = _bearer(scope)
        grant = await self._grant(sent) if sent else None
        if scope["path"] not in self._open and not scope["path"].startswith("/.well-known/"):
            if grant is None:  # the scope a first authorization should ask for: read only
                await self._refuse(send, 401, "invalid_token" if sent else "", READ_SCOPE)
                return
            if not grant.allows(READ_SCOPE):
                await self._refuse(send, 403, "insufficient_scope", READ_SCOPE)
                return
        if grant is not None:  # /health shows its details when it reads (is_authorized)
            scope = dict(scope)
            granted(scope, grant)
        await self.app(scope, receive, send)

    async def _grant(self, token: str) -> Grant | None:
        static = static_grant(token, self._token, self.resource_metadata)
        if static is not None:
            return static
        for verify in self.verifiers:
            grant = await verify(token)
            if grant is not None:
                return grant
        return None

    async def _refuse(self, send: Send, status: int, error: str, needed: str) -> None:
        await send_challenge(send, status, self.resource_metadata, error, needed)


async def send_challenge(
    send: Send, status: int, resource_metadata: str, error: str = "", needed: str = ""
) -> None:
    """A 401 or 403 whose WWW-Authenticate says where the metadata is, and why and which
    scope when there is a why (RFC 6750 section 3: no error when no token came)."""
    parts = [f"{k}={_quoted(v)}" for k, v in (("error", error), ("scope", needed)) if v]
    if resource_metadata:  # "" for a named token without OAuth: there is nothing to discover
        parts.append(f"resource_metadata={_quoted(resource_metadata)}")
    description = {
        "": "this server needs a bearer token: see resource_metadata for where to get one",
        "invalid_token": "the token is unknown, revoked, expired or not issued for this server",
        "insufficient_scope": f"the token lacks the scope {needed}",
    }[error]
    body = json.dumps({"error": error or "unauthorized", "error_description": description})
    payload = body.encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(payload)).encode()),
        (b"www-authenticate", ("Bearer " + ", ".join(parts)).encode()),
        (b"cache-control", b"no-store"),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _bearer(scope: Scope) -> str:
    """The token of the request's Authorization header ("" when none, or not Bearer)."""
    for key, value in scope.get("headers", ()):
        if key == b"authorization":
            kind, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if kind.lower() == "bearer" else ""
    return ""
