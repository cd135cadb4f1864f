"""Which redirect URIs a client may register, and how the consent page's policy names one.

A redirect URI receives the authorization code, so only three kinds are accepted
(docs/adr/0038-oauth.md):

    https://HOST[:PORT]/...      HOST a DNS name (letters, digits, hyphens, dots) or an
                                 IP address
    http://LOOPBACK[:PORT]/...   127.0.0.0/8, [::1] or localhost: the code never leaves
                                 the machine (RFC 8252 7.3)
    com.example.app:/...         an app's own private-use scheme (RFC 8252 7.1): named
    cursor://...                 after a domain its maker holds in reverse order, or a
                                 one-word scheme that is no browser's, web's or system's

and none of them with a fragment (any `#`, RFC 6749 3.1.2), a user name or password before
the host, or more than MAX_URI_CHARS characters. Everything else (ws:, ftp:, about:, blob:,
view-source:, jar:, javascript:, data:, file:, ...) is refused, each with the reason. A
one-word scheme is accepted because real clients register them (Cursor's `cursor://`);
the schemes a browser or the system handles itself are the ones that could carry a code
somewhere else or run it. `csp_source` gives each accepted URI a source the consent page's
form-action names.
"""

from __future__ import annotations

import re
from urllib.parse import SplitResult, urlsplit

from docdex.server.http.access import is_loopback

MAX_URI_CHARS = 2000
_SCHEME = re.compile(r"[a-z][a-z0-9+\-]*")
_PRIVATE_SCHEME = re.compile(r"[a-z][a-z0-9+\-]*(\.[a-z0-9+\-]+)*")  # com.example.app, cursor
# Schemes a browser, the web or the system handles itself: never an app's own.
_NOT_PRIVATE = frozenset(
    [
        "about",
        "blob",
        "chrome",
        "chrome-extension",
        "data",
        "edge",
        "file",
        "filesystem",
        "ftp",
        "ftps",
        "intent",
        "jar",
        "javascript",
        "mailto",
        "moz-extension",
        "ms-settings",
        "resource",
        "sms",
        "tel",
        "urn",
        "vbscript",
        "view-source",
        "ws",
        "wss",
    ]
)
_DNS_NAME = re.compile(r"[a-z0-9]([a-z0-9\-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9\-]*[a-z0-9])?)*")


def redirect_refusal(uri: str) -> str | None:
    """Why `uri` may not be a redirect URI, as the end of a sentence that starts with the URI
    ("... has a fragment"); None when it may."""
    if len(uri) > MAX_URI_CHARS:
        return f"is longer than {MAX_URI_CHARS} characters"
    if "#" in uri:
        return "has a fragment (#...), which a redirect URI may not have (RFC 6749 3.1.2)"
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 (a port that is not a number raises here)
    except ValueError:
        return "is not a URI"
    if "@" in parts.netloc:
        return "names a user name or password before its host, which a redirect URI may not"
    scheme = parts.scheme.lower()
    if scheme in ("https", "http"):
        return _web_refusal(parts)
    if _PRIVATE_SCHEME.fullmatch(scheme) and scheme not in _NOT_PRIVATE:
        return None
    shown = f"the scheme {scheme}:" if _SCHEME.fullmatch(scheme) else "no scheme"
    return (
        f"uses {shown}, which is none of https, http to a loopback address, or an app's own "
        "scheme such as com.example.app:/callback (RFC 8252 7.1)"
    )


def _web_refusal(parts: SplitResult) -> str | None:
    host = (parts.hostname or "").lower()
    if not host:
        return "has no host"
    if parts.scheme.lower() == "http" and not is_loopback(host):
        return (
            "is plain HTTP to a host that is not loopback: a code sent there could be read "
            "on the way (http is for 127.0.0.1, [::1] and localhost; elsewhere use https)"
        )
    if not (_DNS_NAME.fullmatch(host) or _bracketed(parts)):
        return "has a host that is not a DNS name or an IP address"
    return None


def csp_source(uri: str) -> str:
    """The Content-Security-Policy source that lets a form's redirect reach `uri` (accepted
    by `redirect_refusal`): its origin; its scheme alone for an app's scheme or an IPv6 host,
    which a CSP host cannot name; "" for a URI that was never accepted."""
    if redirect_refusal(uri) is not None:
        return ""
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    if scheme not in ("https", "http") or _bracketed(parts):
        return f"{scheme}:"
    port = f":{parts.port}" if parts.port is not None else ""
    return f"{scheme}://{(parts.hostname or '').lower()}{port}"


def _bracketed(parts: SplitResult) -> bool:
    """Whether the host is an IPv6 address (urlsplit drops its brackets)."""
    return parts.netloc.startswith("[")
