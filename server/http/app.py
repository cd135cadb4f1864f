"""`docdex serve`: the MCP server (streamable HTTP at /mcp) plus /health, /api/* and the
search page at / (routes.py lists the routes).

    uvicorn ─ SecurityHeaders ─ HostCheck ─ BearerAuth ─ Starlette ─┬─ /          the page
                                                                     ├─ /health    status
                                                                     ├─ /api/...   search, pages
                                                                     └─ /mcp       MCPServer:
            search_docs, query_docs, get_document, list_sources, reindex ──────────┘

    boot.py       logging, the model, the first version, timed; the versions' loader
    documents.py  `Docs`: the logic of every tool and route (validation.py, pages.py,
                  health.py, reindex.py hold its parts)
    tools.py      the MCP tools over `Docs`      routes.py  the HTTP routes over `Docs`
    webpage.py    the search page's files (web/), the security headers (CSP)
    deferred_mcp.py  /mcp, built from the SDK in a thread once the server listens
    auth.py       bind policy, Host and Origin check, bearer token
    connections.py  header deadline, idle keep-alive, bound on open connections (uvicorn's
                  h11 handler under a guard; settings in connection_limits.py)
    PostOnly      /mcp answers POST only (405 for GET: no sessions, so no stream to open)

Every request leases one index version from the `VersionHolder` and answers from it alone.
The server never writes the index: `reindex` files a request under state/queue/.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING

import uvicorn
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import JSONResponse
from starlette.routing import Mount
from starlette.types import ASGIApp, Receive, Scope, Send

from docdex.index_format.layout import DataDir
from docdex.server.answers.docs import Docs
from docdex.server.boot import Boot, load_snapshot, open_docs, setup_logging
from docdex.server.mcp.deferred import DeferredMCP

from .auth import OPEN_PATHS, BearerAuth, HostCheck, allowed_hosts, check_bind, server_token
from .auth import transport_security as make_transport_security
from .connections import guarded_http
from .limits import ConnectionLimits, limits_from_env, with_fd_room
from .page import SecurityHeaders, open_paths
from .routes import MCP_PATH, http_routes

if TYPE_CHECKING:
    from docdex.model.embedder import Embedder

__all__ = ["Docs", "build_app", "load_snapshot", "serve"]


def build_app(
    docs: Docs,
    host: str = "127.0.0.1",
    token: str | None = None,
    extra_hosts: list[str] | None = None,
    on_mcp_ready: Callable[[], None] = lambda: None,
) -> Starlette:
    """The ASGI app. Its lifespan runs the version watcher and builds /mcp in the background
    (deferred_mcp.py), then runs the MCP session manager."""
    hosts = allowed_hosts(host, extra_hosts or [])
    mcp = DeferredMCP(lambda: _build_mcp_app(docs, host, hosts), on_ready=on_mcp_ready)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        docs.holder.start()
        mcp.start()
        yield
        await mcp.stop()
        docs.holder.stop()

    middleware = [Middleware(SecurityHeaders), Middleware(HostCheck, allowed=hosts)]
    if token:
        middleware.append(Middleware(BearerAuth, token=token, open_paths=OPEN_PATHS | open_paths()))
    return Starlette(
        routes=[*http_routes(docs, bool(token)), Mount("/", app=PostOnly(mcp, MCP_PATH))],
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
        if scope["type"] == "http" and scope["path"] == self.path and scope["method"] != "POST":
            body = {"error": f"{self.path} takes POST only (streamable HTTP, stateless)"}
            reply = JSONResponse(body, status_code=405, headers={"Allow": "POST"})
            await reply(scope, receive, send)
            return
        await self.app(scope, receive, send)


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
    host: str = "127.0.0.1",
    port: int = 8085,
    insecure: bool = False,
    model: Future[Embedder] | None = None,
    on_listening: Callable[[], None] | None = None,
    limits: ConnectionLimits | None = None,
) -> int:
    """Run the server until interrupted. Returns the process exit code. `model`: the model
    already loading (model.start_loading), so that it overlaps the imports; `on_listening`:
    called once the socket listens; `limits`: the connections' deadlines and bound (default:
    from the environment, connections.py). Raises BindRefused for an address the bind policy
    refuses (auth.check_bind), LimitsRefused for a bad DOCDEX_* connection setting."""
    setup_logging()
    token = server_token()
    check_bind(host, token, insecure)
    limits = with_fd_room(limits or limits_from_env())
    boot = Boot()
    docs = open_docs(data, boot, model)
    extra = [h for h in os.environ.get("DOCDEX_ALLOWED_HOSTS", "").split(",") if h.strip()]
    base = f"http://{host if ':' not in host else f'[{host}]'}:{port}"
    auth = "bearer token required" if token else "no token"
    app = build_app(
        docs, host, token, extra, on_mcp_ready=lambda: boot.mark(f"ready: MCP at {base}{MCP_PATH}")
    )

    def listening() -> None:
        boot.mark(f"listening: {base} ({auth}); /health and /api/search answer")
        if on_listening is not None:
            on_listening()

    server = _Uvicorn(_uvicorn_config(app, host, port, limits), listening)
    server.run()
    return 0 if server.started else 1


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
