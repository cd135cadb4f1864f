"""Who may talk to the server: bind address policy, Host header check, bearer token.

- Binding a non-loopback address needs a token (DOCDEX_TOKEN) unless `--insecure`.
- Every request's Host header, and its Origin header when it has one, must name this server
  (DNS-rebinding protection). Both are parsed (scheme, host, port) and compared exactly, host
  names case-insensitively; a value that passes is rewritten in lower case, so that the MCP
  transport's own check for /mcp (TransportSecuritySettings, same list, looser prefix
  matching) accepts exactly what this one accepted.
- With a token, every path except the open ones (`/`, `/clients.txt`, `/health` and the
  search page's static files, which reveal no document text) needs
  `Authorization: Bearer <token>`: $DOCDEX_TOKEN, compared in constant time on the header's
  bytes, or a named token (named_tokens.py), which may read some sources only; the request's
  `Grant` (grants.py) says which. /health without a token says only whether the server is
  up (routes.py).
- The token must be printable ASCII: HTTP clients disagree on how to send anything else
  (curl sends UTF-8, browsers Latin-1, httpx refuses), so such a token is refused at start
  (runtime/environment.py reads DOCDEX_TOKEN).
"""

from __future__ import annotations

import ipaddress
import json
import socket
from collections.abc import Iterable
from typing import TYPE_CHECKING

from starlette.types import ASGIApp, Receive, Scope, Send

from docdex.errors import DocdexError

from .grants import Grant, Grants, granted, static_grant

if TYPE_CHECKING:
    from mcp.server.transport_security import TransportSecuritySettings

OPEN_PATHS = frozenset({"/", "/clients.txt", "/health"})
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
WILDCARD_HOSTS = ("0.0.0.0", "::", "")
UNAUTHORIZED = "missing or wrong token: send the header 'Authorization: Bearer <DOCDEX_TOKEN>'"


class BindRefused(DocdexError):
    """The address may not be bound with the current settings."""


# --- bind policy ---------------------------------------------------------------------------


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name: we do not resolve it, so it counts as reachable from outside


def check_bind(
    host: str, token: str | None, insecure: bool, oauth: bool = False, named: bool = False
) -> None:
    """Refuse to expose the index beyond this machine without a token, OAuth (`oauth`: --auth
    oauth or jwt), a named token (`named`: `docdex auth token`) or --insecure."""
    if is_loopback(host) or token or insecure or oauth or named:
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
    """The MCP transport's settings: the same names as HostCheck. HostCheck runs first and
    lower-cases what it lets through, and the SDK accepts every such value (its prefix
    matching is looser), so HostCheck's exact rule is the one that decides."""
    from mcp.server.transport_security import TransportSecuritySettings  # the SDK loads late

    origins = [f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


def split_host(value: str) -> tuple[str, str] | None:
    """(host, port) of a Host header value (`name`, `name:port`, `[v6]`, `[v6]:port`), host
    in lower case and port "" when absent; None when it is not of that form."""
    value = value.lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        host, rest = value[: end + 1], value[end + 1 :]
        if rest and not rest.startswith(":"):
            return None
        port = rest[1:]
    else:
        host, _, port = value.partition(":")
        if ":" in port:
            return None
    if not host or any(c in host for c in "@/\\?#%, \t") or not host.isascii():
        return None
    if port and not (port.isascii() and port.isdigit() and len(port) <= 5):
        return None
    if value.endswith(":") and not port:
        return None
    return host, port


def host_allowed(host: str, allowed: list[str]) -> bool:
    """Whether a Host header value names one of `allowed` (from allowed_hosts: `name`
    matches without a port, `name:*` with any numeric port, `name:port` that port)."""
    parts = split_host(host)
    if parts is None:
        return False
    name, port = parts
    if not port:
        return name in allowed
    return f"{name}:*" in allowed or f"{name}:{port}" in allowed


def origin_allowed(origin: str, allowed: list[str]) -> bool:
    """Whether an Origin header value is `http(s)://` + a Host value host_allowed accepts
    (nothing else: no user info, path, query or fragment)."""
    scheme, sep, rest = origin.lower().partition("://")
    return bool(sep) and scheme in ("http", "https") and host_allowed(rest, allowed)


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
    """Answer 421 to a request whose Host header is not one of ours, 403 to one whose Origin
    header (when present) is not; pass the others on with both values in lower case."""

    def __init__(self, app: ASGIApp, allowed: list[str]) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        hosts = _headers(scope, b"host")
        if len(hosts) != 1 or not host_allowed(hosts[0], self.allowed):
            message = "Invalid Host header: this docdex server does not answer to that name"
            await _send_json(send, 421, {"error": message})
            return
        origins = _headers(scope, b"origin")
        if len(origins) > 1 or any(not origin_allowed(o, self.allowed) for o in origins):
            message = "Invalid Origin header: requests from other sites are refused"
            await _send_json(send, 403, {"error": message})
            return
        scope = dict(scope)
        scope["headers"] = [
            (key, value.lower() if key in (b"host", b"origin") else value)
            for key, value in scope.get("headers", ())
        ]
        await self.app(scope, receive, send)


# --- bearer token ----------------------------------------------------------------------------


class BearerAuth:
    """Require `Authorization: Bearer <token>` on every path but the open ones: $DOCDEX_TOKEN
    (every source), or a named token of `named` (named_tokens.py, maybe limited to some sources).
    The request's `Grant` goes on in the scope (grants.py)."""

    def __init__(
        self,
        app: ASGIApp,
        token: str | None,
        open_paths: frozenset[str] = OPEN_PATHS,
        named: Grants | None = None,
    ):
        if not token and named is None:
            raise ValueError("BearerAuth needs a non-empty token or named tokens")
        self.app = app
        self._token = token.encode() if token else b""
        self._open = open_paths
        self._named = named

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            grant = self._grant(_header(scope, b"authorization"))
            if grant is None and scope["path"] not in self._open:
                headers = [(b"www-authenticate", b"Bearer")]
                await _send_json(send, 401, {"error": UNAUTHORIZED}, headers)
                return
            if grant is not None:  # /health shows its details only then (is_authorized)
                scope = dict(scope)
                granted(scope, grant)
        await self.app(scope, receive, send)

    def _grant(self, header: str) -> Grant | None:
        """$DOCDEX_TOKEN (static_grant), else a named token, by its hash."""
        scheme, _, given = header.partition(" ")
        if scheme.lower() != "bearer" or not given.strip():
            return None
        sent = given.strip()
        grant = static_grant(sent, self._token)
        if grant is None and self._named is not None:
            grant = self._named.grant(sent)
        return grant


# --- helpers ---------------------------------------------------------------------------------


def _header(scope: Scope, name: bytes) -> str:
    values = _headers(scope, name)
    return values[0] if values else ""


def _headers(scope: Scope, name: bytes) -> list[str]:
    return [value.decode("latin-1") for key, value in scope.get("headers", ()) if key == name]


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
