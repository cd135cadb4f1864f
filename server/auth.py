"""Who may talk to the server: bind address policy, Host header check, bearer token.

- Binding a non-loopback address needs a token (DOCDEX_TOKEN) unless `--insecure`.
- Every request's Host header must name this server (DNS-rebinding protection); the MCP
  transport checks it again for /mcp with the same list (TransportSecuritySettings).
- With a token, every path except the open ones (`/`, `/clients.txt`, `/health` and the
  search page's static files, which reveal no document text) needs
  `Authorization: Bearer <token>`; the comparison is constant-time.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
import socket
from collections.abc import Iterable
from typing import TYPE_CHECKING

from starlette.types import ASGIApp, Receive, Scope, Send

if TYPE_CHECKING:
    from mcp.server.transport_security import TransportSecuritySettings

OPEN_PATHS = frozenset({"/", "/clients.txt", "/health"})
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
WILDCARD_HOSTS = ("0.0.0.0", "::", "")
UNAUTHORIZED = "missing or wrong token: send the header 'Authorization: Bearer <DOCDEX_TOKEN>'"


class BindRefused(Exception):
    """The address may not be bound with the current settings."""


# --- bind policy ---------------------------------------------------------------------------


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name: we do not resolve it, so it counts as reachable from outside


def server_token() -> str | None:
    """DOCDEX_TOKEN, when it is set to something."""
    return os.environ.get("DOCDEX_TOKEN", "").strip() or None


def check_bind(host: str, token: str | None, insecure: bool) -> None:
    """Refuse to expose the index beyond this machine without a token (or --insecure)."""
    if is_loopback(host) or token or insecure:
        return
    raise BindRefused(
        f"refusing to listen on {host or '0.0.0.0'} without a token: anyone who can reach it "
        "could read the indexed documents. Set DOCDEX_TOKEN (clients then send "
        "'Authorization: Bearer <token>'), bind 127.0.0.1, or pass --insecure"
    )


# --- Host header (DNS rebinding) -------------------------------------------------------------


def allowed_hosts(host: str, extra: Iterable[str] = ()) -> list[str]:
    """Host header values this server answers to: loopback names, the bound address (for a
    wildcard bind, this machine's names and addresses), and `extra` (DOCDEX_ALLOWED_HOSTS)."""
    names = [*LOOPBACK_NAMES]
    if host in WILDCARD_HOSTS:
        names += _machine_names()
    elif not is_loopback(host):
        names.append(_bracketed(host))
    names += [h.strip() for h in extra if h.strip()]
    out: list[str] = []
    for name in dict.fromkeys(n.lower() for n in names):
        out += [name, f"{name}:*"]
    return out


def transport_security(hosts: list[str]) -> TransportSecuritySettings:
    from mcp.server.transport_security import TransportSecuritySettings  # the SDK loads late

    origins = [f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


def host_allowed(host: str, allowed: list[str]) -> bool:
    host = host.lower()
    if host in allowed:
        return True
    return any(a.endswith(":*") and host.startswith(a[:-1]) for a in allowed)


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _machine_names() -> list[str]:
    names = [socket.gethostname(), socket.getfqdn()]
    try:
        infos = socket.getaddrinfo(socket.gethostname(), None)
    except OSError:
        infos = []
    names += [_bracketed(str(info[4][0])) for info in infos]
    return names


class HostCheck:
    """Answer 421 to a request whose Host header is not one of ours."""

    def __init__(self, app: ASGIApp, allowed: list[str]) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not host_allowed(_header(scope, b"host"), self.allowed):
            message = "Invalid Host header: this docdex server does not answer to that name"
            await _send_json(send, 421, {"error": message})
            return
        await self.app(scope, receive, send)


# --- bearer token ----------------------------------------------------------------------------


class BearerAuth:
    """Require `Authorization: Bearer <token>` on every path but the open ones."""

    def __init__(self, app: ASGIApp, token: str, open_paths: frozenset[str] = OPEN_PATHS):
        if not token:
            raise ValueError("BearerAuth needs a non-empty token")
        self.app = app
        self._token = token.encode()
        self._open = open_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["path"] not in self._open
            and not self._authorized(_header(scope, b"authorization"))
        ):
            await _send_json(send, 401, {"error": UNAUTHORIZED}, [(b"www-authenticate", b"Bearer")])
            return
        await self.app(scope, receive, send)

    def _authorized(self, header: str) -> bool:
        scheme, _, given = header.partition(" ")
        if scheme.lower() != "bearer":
            return False
        return hmac.compare_digest(given.strip().encode(), self._token)


# --- helpers ---------------------------------------------------------------------------------


def _header(scope: Scope, name: bytes) -> str:
    for key, value in scope.get("headers", ()):
        if key == name:
            return value.decode("latin-1")
    return ""


async def _send_json(
    send: Send, status: int, body: dict, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})
