"""/mcp, built after the server listens.

Importing the MCP SDK costs more CPU than loading the model and an index together (it builds
its protocol's pydantic models at import). So `docdex serve` listens with /health and
/api/search first and builds the SDK's app in a thread afterwards; an MCP request that
arrives before it is ready waits for it rather than failing (adr/0008).

The build starts at the first /mcp request or a short grace after the server starts,
whichever comes first, so that a request to /health or /api/search in that grace does not
share the GIL with the import (adr/0011).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

log = logging.getLogger("docdex.server")

BuildMCP = Callable[[], "tuple[MCPServer, ASGIApp]"]

BUILD_GRACE_S = 0.25
# Held by whoever imports the SDK in a thread (this build, the OAuth routes'): two threads
# importing its circular packages at once can deadlock in the import system.
SDK_IMPORT = threading.Lock()


class DeferredMCP:
    """An ASGI app that forwards to the SDK's streamable HTTP app once `build` has run.

    `start` (from the lifespan) runs `build` in a thread at the first /mcp request or after
    `grace` seconds, then keeps the SDK's session manager running until `stop`. Requests wait
    for the build; if it failed they get a 503 that says why."""

    def __init__(
        self,
        build: BuildMCP,
        on_ready: Callable[[], None] = lambda: None,
        grace: float = BUILD_GRACE_S,
    ) -> None:
        self._build = build
        self._on_ready = on_ready
        self._grace = grace
        self._wanted = asyncio.Event()
        self._ready = asyncio.Event()
        self._stopping = asyncio.Event()
        self._app: ASGIApp | None = None
        self._error: str | None = None
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        self._stopping.set()
        self._wanted.set()  # a server stopping in its grace builds nothing
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wanted.wait(), self._grace)
        if self._stopping.is_set():
            self._error = "the server is stopping"
            self._ready.set()
            return
        try:
            mcp, app = await asyncio.to_thread(self._locked_build)
        except Exception as exc:  # an SDK that cannot load: /mcp says so, the rest serves
            log.exception("the MCP endpoint could not be built")
            self._error = f"the MCP endpoint could not be built: {exc}"
            self._ready.set()
            return
        async with mcp.session_manager.run():
            self._app = app
            self._ready.set()
            self._on_ready()
            await self._stopping.wait()

    def _locked_build(self) -> tuple[MCPServer, ASGIApp]:
        with SDK_IMPORT:
            return self._build()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self._wanted.set()
            await self._ready.wait()
        if self._app is None:
            body = {"error": self._error or "the MCP endpoint is starting"}
            await JSONResponse(body, status_code=503)(scope, receive, send)
            return
        await self._app(scope, receive, send)
