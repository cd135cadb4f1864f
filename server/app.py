"""`docdex serve`: the MCP server (streamable HTTP at /mcp) plus /health, /api/search and /.

    uvicorn ─ HostCheck ─ BearerAuth ─ Starlette ─┬─ /          what this is, .mcp.json
                                                   ├─ /health    status, versions, run metrics
                                                   ├─ /api/search
                                                   └─ /mcp       MCPServer: search_docs,
                                                                 query_docs, get_document,
                                                                 list_sources, reindex

    boot.py       logging, the model, the first version, timed; the versions' loader
    documents.py  `Docs`: the logic of every tool and route (validation.py, pages.py,
                  health.py, reindex.py hold its parts)
    tools.py      the MCP tools over `Docs`      routes.py  the HTTP routes over `Docs`
    auth.py       bind policy, Host check, bearer token

Every request leases one index version from the `VersionHolder` and answers from it alone.
The server never writes the index: `reindex` files a request under state/queue/.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable

import uvicorn
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Mount

from docdex.index_format.layout import DataDir

from .auth import BearerAuth, BindRefused, HostCheck, allowed_hosts, check_bind
from .auth import transport_security as make_transport_security
from .boot import Boot, load_snapshot, open_docs, setup_logging
from .documents import Docs
from .routes import MCP_PATH, http_routes
from .tools import build_mcp

__all__ = ["Docs", "build_app", "load_snapshot", "serve"]


def build_app(
    docs: Docs,
    host: str = "127.0.0.1",
    token: str | None = None,
    extra_hosts: list[str] | None = None,
) -> Starlette:
    """The ASGI app. Its lifespan runs the MCP session manager and the version watcher."""
    mcp = build_mcp(docs)
    hosts = allowed_hosts(host, extra_hosts or [])
    mcp_app = mcp.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        transport_security=make_transport_security(hosts),
        host=host,
    )

    @contextlib.asynccontextmanager
    async def lifespan(app):
        docs.holder.start()
        async with mcp.session_manager.run():
            yield
        docs.holder.stop()

    middleware = [Middleware(HostCheck, allowed=hosts)]
    if token:
        middleware.append(Middleware(BearerAuth, token=token))
    return Starlette(
        routes=[*http_routes(docs, bool(token)), Mount("/", app=mcp_app)],
        middleware=middleware,
        lifespan=lifespan,
    )


def serve(data: DataDir, host: str = "127.0.0.1", port: int = 8085, insecure: bool = False) -> int:
    """Run the server until interrupted. Returns the process exit code."""
    setup_logging()
    token = os.environ.get("DOCDEX_TOKEN", "").strip() or None
    try:
        check_bind(host, token, insecure)
    except BindRefused as exc:
        print(f"docdex: error: {exc}", file=sys.stderr)
        return 1
    boot = Boot()
    docs = open_docs(data, boot)
    extra = [h for h in os.environ.get("DOCDEX_ALLOWED_HOSTS", "").split(",") if h.strip()]
    app = build_app(docs, host=host, token=token, extra_hosts=extra)
    url = f"http://{host if ':' not in host else f'[{host}]'}:{port}{MCP_PATH}"
    auth = "bearer token required" if token else "no token"
    server = _Uvicorn(
        _uvicorn_config(app, host, port), lambda: boot.mark(f"ready: MCP at {url} ({auth})")
    )
    server.run()
    return 0 if server.started else 1


def _uvicorn_config(app: Starlette, host: str, port: int) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_config=None,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=5,
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
