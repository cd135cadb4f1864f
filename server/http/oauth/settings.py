"""How `docdex serve` authenticates, as configuration: the mode, the public address that
names this server as an OAuth protected resource and issuer, the scopes.

The resource URI (`PUBLIC_URL/mcp`) and the issuer (`PUBLIC_URL`) come from `--public-url` or
`$DOCDEX_PUBLIC_URL`, never from a request's Host header: a token is bound to the name the
owner configured. A public URL must be https, unless its host is loopback (a test, or a
server only this machine reaches): over plain HTTP on a network, tokens and the admin
secret would travel in clear.
"""

from __future__ import annotations

import enum
import ipaddress
from urllib.parse import urlsplit

import msgspec

from docdex.errors import DocdexError
from docdex.server.http.grants import ALL_SCOPES as ALL_SCOPES  # the scopes, named where grants are
from docdex.server.http.grants import READ_SCOPE as READ_SCOPE
from docdex.server.http.grants import REINDEX_SCOPE as REINDEX_SCOPE

MCP_PATH = "/mcp"
MIN_ADMIN_SECRET = 16  # characters


class AuthMode(enum.Enum):
    """`--auth`: who hands out the credentials /mcp and /api accept."""

    TOKEN = "token"  # $DOCDEX_TOKEN alone (or nothing, on loopback)
    OAUTH = "oauth"  # docdex's own authorization server, beside $DOCDEX_TOKEN
    JWT = "jwt"  # JWTs of an existing identity provider (JWKS), beside $DOCDEX_TOKEN


class AuthConfigError(DocdexError):
    """The authentication settings cannot work together."""


class JwtSettings(msgspec.Struct, frozen=True, kw_only=True):
    """An existing identity provider: where its keys are, what its tokens must say."""

    jwks_url: str
    issuer: str
    audience: str = ""  # "" = the resource URI


class AuthSettings(msgspec.Struct, frozen=True, kw_only=True):
    """What `--auth`, `--public-url` and their variables chose, checked (`auth_settings`)."""

    mode: AuthMode = AuthMode.TOKEN
    public_url: str = ""  # scheme://host[:port], no path, no trailing slash
    admin_secret: str = ""  # oauth: the owner's secret on the consent page (memory only)
    jwt: JwtSettings | None = None

    @property
    def oauth(self) -> bool:
        """Whether OAuth guards the server (oauth or jwt): then it may bind beyond loopback."""
        return self.mode is not AuthMode.TOKEN

    @property
    def resource(self) -> str:
        """This server's resource URI (RFC 8707, RFC 9728): what tokens' audience must be."""
        return self.public_url + MCP_PATH

    @property
    def issuer(self) -> str:
        """The authorization server tokens come from: docdex itself, or the provider's."""
        return self.jwt.issuer if self.jwt is not None else self.public_url

    @property
    def audience(self) -> str:
        return (self.jwt.audience if self.jwt is not None else "") or self.resource

    @property
    def public_host(self) -> str:
        """The public URL's host name (bracketed when IPv6), as a Host header names it."""
        host = urlsplit(self.public_url).hostname or ""
        return f"[{host}]" if ":" in host else host


def auth_settings(
    mode: AuthMode,
    public_url: str,
    host: str,
    port: int,
    admin_secret: str = "",
    jwt: JwtSettings | None = None,
) -> AuthSettings:
    """The settings, checked; `public_url` "" means http://HOST:PORT, allowed on loopback only.
    Raises AuthConfigError with what to change."""
    if mode is AuthMode.TOKEN:
        return AuthSettings()
    url = public_url_checked(public_url or _local_url(host, port))
    if mode is AuthMode.OAUTH:
        return AuthSettings(mode=mode, public_url=url, admin_secret=_admin_secret(admin_secret))
    if jwt is None or not jwt.jwks_url or not jwt.issuer:
        raise AuthConfigError(
            "--auth jwt needs DOCDEX_JWKS_URL (the provider's keys) and DOCDEX_JWT_ISSUER "
            "(the iss its tokens carry)"
        )
    public_url_checked(jwt.jwks_url, what="DOCDEX_JWKS_URL", path_allowed=True)
    return AuthSettings(mode=mode, public_url=url, jwt=jwt)


def public_url_checked(url: str, what: str = "the public URL", path_allowed: bool = False) -> str:
    """`url` without a trailing slash when it is absolute http(s), https unless loopback."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise AuthConfigError(f"{what} must be an absolute http(s) URL, not {url[:80]!r}")
    if parts.query or parts.fragment or (parts.path not in ("", "/") and not path_allowed):
        raise AuthConfigError(
            f"{what} must be scheme://host[:port] with no path, query or fragment "
            f"(e.g. https://docs.example.com), not {url[:80]!r}"
        )
    if parts.scheme == "http" and not _loopback(parts.hostname):
        raise AuthConfigError(
            f"refusing {what} {url[:80]!r}: plain HTTP on a network address would carry tokens "
            "and the admin secret in clear; put docdex behind a TLS proxy and give its https:// "
            "address (docs/deploy.md)"
        )
    return url.strip().rstrip("/") if not path_allowed else url.strip()


def _local_url(host: str, port: int) -> str:
    if not _loopback(host.strip("[]")):
        raise AuthConfigError(
            f"--auth oauth or jwt on {host} needs the address clients reach: set --public-url "
            "or DOCDEX_PUBLIC_URL (e.g. https://docs.example.com)"
        )
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    return f"http://{shown}:{port}"


def _admin_secret(secret: str) -> str:
    if len(secret) < MIN_ADMIN_SECRET or not (secret.isascii() and secret.isprintable()):
        raise AuthConfigError(
            f"--auth oauth needs DOCDEX_ADMIN_SECRET: at least {MIN_ADMIN_SECRET} printable "
            "ASCII characters, typed on the consent page when a client asks to connect (e.g. "
            "from `python -c 'import secrets; print(secrets.token_urlsafe(24))'`)"
        )
    return secret


def _loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def same_resource(given: str, ours: str) -> bool:
    """RFC 8707 resource indicators compared as the SDK's bearer check compares them: scheme
    and host case aside, a trailing slash aside."""
    return _canonical(given) == _canonical(ours)


def _canonical(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    netloc, slash, path = rest.partition("/")
    return f"{scheme.lower()}{sep}{netloc.lower()}{slash}{path}".rstrip("/")
