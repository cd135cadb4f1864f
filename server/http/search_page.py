"""The search page's files and the headers every response carries (docs/adr/0016-web-page.md).

The page is three static files in server/http/static/ (HTML, one ES module, one stylesheet) and an
icon: no build step, no CDN, nothing loaded from another origin. They are open without the
token (they hold no data); everything the page shows comes from /api/* and /health.

    GET /                 the page, for a browser (Accept: text/html); the plain-text client
                          configurations for anything else (curl), as before the page
    GET /static/NAME      app.js, style.css, icon.svg

Every response gets the security headers: a Content-Security-Policy that allows scripts,
styles, images and requests from this origin only (no inline script or style, no plugins,
no <base>, no framing), nosniff, and no Referer.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from importlib import resources

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",
        "font-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)
SECURITY_HEADERS = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
]
STATIC = "/static/"
SHELL = "index.html"
MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}


@dataclass(frozen=True)
class Asset:
    body: bytes
    media_type: str
    etag: str

    def response(self, request: Request) -> Response:
        """The file, or 304 when the browser's copy is current (it revalidates each time)."""
        headers = {"etag": self.etag, "cache-control": "no-cache"}
        if request.headers.get("if-none-match") == self.etag:
            return Response(status_code=304, headers=headers)
        return Response(self.body, media_type=self.media_type, headers=headers)


@cache
def assets() -> dict[str, Asset]:
    """The page's files by name, read once from the package."""
    folder = resources.files("docdex.server.http").joinpath("static")
    out = {}
    for item in folder.iterdir():
        suffix = "." + item.name.rpartition(".")[2]
        if item.is_file() and suffix in MEDIA_TYPES:
            body = item.read_bytes()
            etag = '"' + hashlib.sha256(body).hexdigest()[:20] + '"'
            out[item.name] = Asset(body, MEDIA_TYPES[suffix], etag)
    return out


def page_bytes() -> int:
    """What the page weighs, uncompressed: every file it loads."""
    return sum(len(asset.body) for asset in assets().values())


def open_paths() -> frozenset[str]:
    """The page's static files: served without the token."""
    return frozenset(STATIC + name for name in assets() if name != SHELL)


def wants_page(request: Request) -> bool:
    """A browser navigating here, rather than curl or a script reading the text."""
    return "text/html" in request.headers.get("accept", "")


def shell(request: Request) -> Response:
    return assets()[SHELL].response(request)


def static_routes() -> list[Route]:
    async def static(request: Request) -> Response:
        asset = assets().get(request.path_params["name"])
        if asset is None or request.path_params["name"] == SHELL:
            return Response("not found", status_code=404, media_type="text/plain")
        return asset.response(request)

    return [Route(STATIC + "{name}", static, methods=["GET", "HEAD"])]


class SecurityHeaders:
    """Add SECURITY_HEADERS to every HTTP response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name.lower() for name, _ in message.get("headers", [])}
                extra = [(n, v) for n, v in SECURITY_HEADERS if n not in names]
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        await self.app(scope, receive, with_headers)
