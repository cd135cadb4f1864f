"""`docdex serve`: the MCP server (streamable HTTP at /mcp) plus /health, /api/* and the
search page at / (routes.py lists the routes).

    uvicorn ─ SecurityHeaders ─ HostCheck ─ BearerAuth ─ Starlette ─┬─ /          the page
                                                                     ├─ /health    status
                                                                     ├─ /api/...   search, pages
                                                                     └─ /mcp       MCPServer:
            search_docs, query_docs, get_document, list_sources, reindex ──────────┘

    server/boot.py        the model, the first version, timed; the versions' loader
    server/answers/       `Docs`: the logic of every tool and route
    server/mcp/tools.py   the MCP tools over `Docs`    routes.py  the HTTP routes over `Docs`
    search_page.py        the search page's files (static/), the security headers (CSP)
    server/mcp/deferred.py  /mcp, built from the SDK in a thread once the server listens
    access.py             bind policy, Host and Origin check, bearer token
    named_tokens.py       named tokens (`docdex auth token`), each maybe limited to sources
    grants.py             what a request's token allows: scopes, the sources it may read
    connections.py        header deadline, idle keep-alive, bound on open connections
                          (uvicorn's h11 handler under a guard)
    PostOnly              /mcp answers POST only (405 for GET: no sessions, no stream to open)

`HttpSettings` is what the command line and the environment chose: address, token, extra
Host names and connection limits.

Every request leases one index version from the `VersionHolder` and answers from it alone,
as the caller its token's `Grant` names sees it (`Docs.for_caller`): a token limited to some
sources reads those only, in every route and tool. The server never writes the index:
`reindex` files a request under state/queue/.
"""

from __future__ import annotations

import contextlib
import errno
import socket
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING

import msgspec
import uvicorn
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import JSONResponse
from starlette.routing import Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from docdex.errors import DocdexError
from docdex.index_format.config import ConfigError, load_config
from docdex.index_format.layout import DataDir
from docdex.model.model_environment import UNCONFIGURED, ModelEnvironment
from docdex.runtime.environment import DEFAULT_HOST, DEFAULT_PORT, ConnectionLimits
from docdex.server.answers.docs import Docs
from docdex.server.boot import Boot, open_docs
from docdex.server.mcp.deferred import DeferredMCP
from docdex.server.mcp.envelope import parse

from .access import OPEN_PATHS, BearerAuth, HostCheck, allowed_hosts, check_bind
from .access import transport_security as make_transport_security
from .connection_limits import with_fd_room
from .connections import guarded_http
from .named_tokens import NamedTokens
from .oauth.protected_resource.guard import Guard
from .oauth.protected_resource.scopes import refused_scope
from .oauth.settings import AuthMode, AuthSettings
from .routes import MCP_PATH, http_routes
from .search_page import SecurityHeaders, open_paths

if TYPE_CHECKING:
    from docdex.model.protocol import TextEmbedder as Embedder

    from .oauth.setup import OAuthParts

__all__ = ["Docs", "HttpSettings", "build_app", "serve"]


class HttpSettings(msgspec.Struct, frozen=True, kw_only=True):
    """Where and how `docdex serve` listens (its flags over DOCDEX_HOST, DOCDEX_PORT,
    DOCDEX_TOKEN, DOCDEX_ALLOWED_HOSTS and the connection limits' variables)."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    token: str | None = None  # required of every request but the open paths' (access.py)
    allowed_hosts: tuple[str, ...] = ()  # Host names besides the bound address's
    limits: ConnectionLimits = ConnectionLimits()
    insecure: bool = False  # bind beyond loopback without a token
    auth: AuthSettings = AuthSettings()  # --auth oauth or jwt, the public URL (oauth/settings.py)


def build_app(
    docs: Docs,
    host: str = "127.0.0.1",
    token: str | None = None,
    extra_hosts: list[str] | None = None,
    on_mcp_ready: Callable[[], None] = lambda: None,
    oauth: OAuthParts | None = None,
    named: NamedTokens | None = None,
) -> Starlette:
    """The ASGI app. Its lifespan runs the version watcher and builds /mcp in the background
    (server/mcp/deferred.py), then runs the MCP session manager. `oauth`: the routes and
    verifiers of `--auth oauth` or `jwt` (oauth/setup.py), which take over from BearerAuth;
    `named`: the named tokens (`docdex auth token`) accepted beside $DOCDEX_TOKEN."""
    hosts = allowed_hosts(host, extra_hosts or [])
    mcp = DeferredMCP(lambda: _build_mcp_app(docs, host, hosts), on_ready=on_mcp_ready)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        docs.holder.start()
        mcp.start()
        yield
        await mcp.stop()
        docs.close()

    middleware = [Middleware(SecurityHeaders), Middleware(HostCheck, allowed=hosts)]
    unguarded = OPEN_PATHS | open_paths()
    if oauth is not None:
        statics = [named.verifier(oauth.resource_metadata)] if named is not None else []
        middleware.append(
            Middleware(
                Guard,
                resource_metadata=oauth.resource_metadata,
                verifiers=[*statics, *oauth.verifiers],
                token=token,
                open_paths=unguarded | oauth.open_paths,
            )
        )
    elif token or named is not None:
        middleware.append(Middleware(BearerAuth, token=token, open_paths=unguarded, named=named))
    required = bool(token) or oauth is not None or named is not None
    routes = [
        *http_routes(docs, required, oauth.resource if oauth else ""),
        *(oauth.routes if oauth else []),
    ]
    return Starlette(
        routes=[*routes, Mount("/", app=PostOnly(mcp, MCP_PATH))],
        middleware=middleware,
        lifespan=lifespan,
    )


class PostOnly:
    """405 (Allow: POST) for any other method on `path`: the server keeps no sessions, so
    there is no stream for GET to open (the SDK would hold an empty one open forever) and
    nothing for DELETE to end."""

    def __init__(self, app: ASGIApp, path: str) -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != self.path:
            await self.app(scope, receive, send)
        elif scope["method"] != "POST":
            body = {"error": f"{self.path} takes POST only (streamable HTTP, stateless)"}
            reply = JSONResponse(body, status_code=405, headers={"Allow": "POST"})
            await reply(scope, receive, send)
        else:
            await self._checked(scope, receive, send)

    async def _checked(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The body read first (up to the SDK's own bound, past which the SDK refuses it) and
        parsed once: a message that is no JSON-RPC request is answered here
        (server/mcp/envelope.py), and the scope a call needs is decided on what was parsed."""
        body, more = await _read_body(receive, MAX_CHECKED_BODY)
        message, problem = parse(body) if not more else (None, None)
        if problem is not None:
            await JSONResponse(problem.reply(), status_code=400)(scope, receive, send)
            return
        if await refused_scope(scope, message, send):  # a reindex call without its scope: 403
            return
        await self.app(scope, _replayed(body, more, receive), send)


MAX_CHECKED_BODY = 4 * 1024 * 1024  # the SDK's DEFAULT_MAX_REQUEST_BODY_SIZE


async def _read_body(receive: Receive, limit: int) -> tuple[bytes, bool]:
    """The request's body up to `limit` bytes, and whether more follows."""
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(parts), False
        parts.append(message.get("body", b""))
        size += len(parts[-1])
        if not message.get("more_body", False):
            return b"".join(parts), False
        if size > limit:
            return b"".join(parts), True


def _replayed(body: bytes, more: bool, receive: Receive) -> Receive:
    """`receive` with the body already read given back first."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": more}

    return replay


def _build_mcp_app(docs: Docs, host: str, hosts: list[str]):
    """The SDK's server with our tools and its streamable HTTP app (imports the SDK)."""
    from docdex.server.mcp.tools import build_mcp

    mcp = build_mcp(docs)
    app = mcp.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        transport_security=make_transport_security(hosts),
        host=host,
    )
    return mcp, app


def serve(
    data: DataDir,
    settings: HttpSettings,
    model: Future[Embedder] | None = None,
    on_listening: Callable[[], None] | None = None,
    model_environment: ModelEnvironment = UNCONFIGURED,
) -> int:
    """Run the server until interrupted. Returns the process exit code. `model`: the model
    already loading (query_model.start_loading), so that it overlaps the imports;
    `on_listening`: called once the socket listens; `model_environment`: what the models
    take from the environment (boot.open_docs). Raises BindRefused for an address the
    bind policy refuses (auth.check_bind)."""
    host, port, token = settings.host, settings.port, settings.token
    named = _named_tokens(data, bool(token) or settings.auth.oauth)
    check_bind(host, token, settings.insecure, settings.auth.oauth, named is not None)
    sock = bound_socket(host, port)  # a busy port is said now, before the index is read
    limits = with_fd_room(settings.limits)
    boot = Boot()
    docs = open_docs(data, boot, model, model_environment)
    base = f"http://{host if ':' not in host else f'[{host}]'}:{port}"
    app = build_app(
        docs,
        host,
        token,
        [*settings.allowed_hosts, *_public_host(settings.auth)],
        on_mcp_ready=lambda: boot.mark(f"ready: MCP at {base}{MCP_PATH}"),
        oauth=_oauth_parts(settings.auth, data),
        named=named,
    )
    auth = _auth_words(settings.auth, token, named is not None)

    def listening() -> None:
        boot.mark(f"listening: {base} ({auth}); /health and /api/search answer")
        if on_listening is not None:
            on_listening()

    server = _Uvicorn(_uvicorn_config(app, host, port, limits), listening)
    with sock:
        server.run(sockets=[sock])
    return 0 if server.started else 1


def _oauth_parts(auth: AuthSettings, data: DataDir) -> OAuthParts | None:
    """The OAuth routes and verifiers of `--auth oauth` or `jwt` (oauth/setup.py, which
    builds the routes from the MCP SDK at their first request)."""
    if auth.mode is AuthMode.TOKEN:
        return None
    from .oauth.setup import oauth_parts

    if auth.mode is AuthMode.OAUTH:
        data.state.mkdir(parents=True, exist_ok=True)
    return oauth_parts(auth, data.state, sources=lambda: configured_sources(data))


def _named_tokens(data: DataDir, guarded: bool) -> NamedTokens | None:
    """The named tokens, when the server requires tokens anyway (`guarded`) or holds one
    now: a server started with no credential at all stays open (named_tokens.py)."""
    named = NamedTokens(data.state)
    return named if guarded or named.any() else None


def configured_sources(data: DataDir) -> list[str]:
    """The names of the sources docdex.toml configures ([] when it cannot be read)."""
    try:
        return [source.name for source in load_config(data).sources]
    except ConfigError:
        return []


def _public_host(auth: AuthSettings) -> list[str]:
    """The public URL's host: a proxy that passes it on (and browsers, in Origin) use it."""
    return [auth.public_host] if auth.public_url else []


def _auth_words(auth: AuthSettings, token: str | None, named: bool = False) -> str:
    if auth.mode is AuthMode.OAUTH:
        how = f"OAuth, issuer {auth.issuer}"
    elif auth.mode is AuthMode.JWT:
        how = f"JWTs of {auth.issuer}"
    else:
        return "bearer token required" if token or named else "no token"
    return how + (" or a bearer token" if token or named else "") + f"; resource {auth.resource}"


class PortInUse(DocdexError):
    """The address to listen on is taken, or cannot be bound."""


def bound_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to host:port, for uvicorn to listen on; PortInUse, in one line,
    when it cannot be bound."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        # IPPROTO_TCP by name: connections accepted on it inherit the protocol, and asyncio
        # sets TCP_NODELAY only on sockets that say TCP (with 0, every answer on a kept-alive
        # connection waited about 40 ms for the client's delayed ACK of its headers)
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    except OSError as exc:
        raise PortInUse(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        taken = exc.errno == errno.EADDRINUSE
        why = "the port is in use (another docdex serve?)" if taken else exc.strerror
        raise PortInUse(
            f"cannot listen on {host}:{port}: {why}; choose another with --port or $DOCDEX_PORT"
        ) from None
    return sock


def _uvicorn_config(
    app: Starlette, host: str, port: int, limits: ConnectionLimits
) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_config=None,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=5,
        http=guarded_http(limits),  # type: ignore[arg-type]  # a protocol factory
        ws="none",  # no websocket routes: an Upgrade header is an ordinary request
        timeout_keep_alive=limits.idle_timeout,  # type: ignore[arg-type]  # float seconds
    )


class _Uvicorn(uvicorn.Server):
    """uvicorn that reports when its socket is listening."""

    def __init__(self, config: uvicorn.Config, on_listening: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_listening = on_listening

    async def startup(self, sockets=None) -> None:
        await super().startup(sockets)
        if self.started:
            self._on_listening()
