"""`docdex mcp`: the same MCP tools over stdin/stdout, for clients that launch their servers
(Claude Desktop and other stdio-only clients).

It reads the data directory like `docdex serve` does, with no lock (several can run beside
`serve` and the worker), and follows new versions as they are published. stdout carries the
protocol only; logs go to stderr. Before the first index exists it still answers: the tools
say that nothing is indexed yet. A client that writes its requests and closes stdin at once
(a pipe) gets every answer: the SDK ends the session at end of input and cancels what is
still running, so the read side here waits, at end of input, until every request read has
been answered.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from concurrent.futures import Future
from io import TextIOWrapper
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, cast

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import ErrorData, JSONRPCError, JSONRPCRequest, JSONRPCResponse

from docdex.index_format.layout import DataDir
from docdex.model.model_environment import UNCONFIGURED, ModelEnvironment
from docdex.server.boot import Boot, open_docs

from .envelope import Refusal, refusal

if TYPE_CHECKING:
    from docdex.model.protocol import TextEmbedder as Embedder


def serve_stdio(
    data: DataDir,
    model: Future[Embedder] | None = None,
    model_environment: ModelEnvironment = UNCONFIGURED,
) -> int:
    """Answer MCP requests on stdin/stdout until the client closes them."""
    boot = Boot()
    docs = open_docs(data, boot, model, model_environment)
    from .tools import build_mcp  # the SDK's import is the slowest part of a start

    mcp = build_mcp(docs)
    boot.mark("MCP over stdio ready")
    docs.holder.start()
    try:
        anyio.run(serve_until_answered, mcp)
    finally:
        docs.close()
    return 0


ANSWERS_AFTER_EOF_S = 60.0  # at end of input, the longest wait for the answers still due


async def serve_until_answered(mcp: MCPServer) -> None:
    """The SDK's `run_stdio_async`, with end of input held back until every request read
    has been answered."""
    server = mcp._lowlevel_server  # what run_stdio_async runs; the SDK has no public name
    pending = _Pending()
    stdin = TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
    lines = _CheckedLines(anyio.wrap_file(stdin))
    async with stdio_server(stdin=cast(Any, lines)) as (read_stream, write_stream):
        writing = _Writing(write_stream, pending)
        lines.refuse = writing.refuse
        await server.run(
            _Reading(read_stream, pending), writing, server.create_initialization_options()
        )


class _CheckedLines:
    """stdin's lines as the SDK reads them, but for those that are no JSON-RPC message:
    those are answered here (envelope.py), since the SDK would answer them with nothing."""

    def __init__(self, lines: AsyncIterable[str]) -> None:
        self._lines = lines
        self.refuse: Callable[[Refusal], Awaitable[None]] | None = None

    def __aiter__(self) -> AsyncIterator[str]:
        return self._checked()

    async def _checked(self) -> AsyncIterator[str]:
        async for line in self._lines:
            if not line.strip():
                continue
            problem = refusal(line)
            if problem is None:
                yield line
            elif self.refuse is not None:
                await self.refuse(problem)


class _Pending:
    """The ids of the requests read and not answered yet."""

    def __init__(self) -> None:
        self.ids: set[Any] = set()
        self.none_left = anyio.Event()
        self.none_left.set()

    def read(self, item: object) -> None:
        if isinstance(item, SessionMessage) and isinstance(item.message, JSONRPCRequest):
            if not self.ids:
                self.none_left = anyio.Event()
            self.ids.add(item.message.id)

    def written(self, item: SessionMessage) -> None:
        if isinstance(item.message, JSONRPCResponse | JSONRPCError):
            self.ids.discard(item.message.id)
            if not self.ids:
                self.none_left.set()


class _Wrapped:
    """A stream of the SDK's stdio transport, wrapped: closing it closes the inner one."""

    def __init__(self, inner: Any, pending: _Pending) -> None:
        self._inner = inner
        self._pending = pending

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class _Reading(_Wrapped):
    """The read side of stdio: at end of input, it ends once nothing is pending."""

    def __getattr__(self, name: str) -> Any:  # last_context and the like: the inner stream's
        return getattr(self._inner, name)

    async def receive(self) -> Any:
        try:
            item = await self._inner.receive()
        except anyio.EndOfStream:
            with anyio.move_on_after(ANSWERS_AFTER_EOF_S):
                await self._pending.none_left.wait()
            raise
        self._pending.read(item)
        return item

    def __aiter__(self) -> _Reading:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


class _Writing(_Wrapped):
    """The write side of stdio, noting each answer as it goes out."""

    async def send(self, item: SessionMessage, /) -> None:
        await self._inner.send(item)
        self._pending.written(item)

    async def refuse(self, problem: Refusal) -> None:
        error = ErrorData(code=problem.code, message=problem.message)
        await self._inner.send(
            SessionMessage(JSONRPCError(jsonrpc="2.0", id=problem.id, error=error))
        )
