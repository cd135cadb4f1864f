"""`docdex mcp`: the same MCP tools over stdin/stdout, for clients that launch their servers
(Claude Desktop and other stdio-only clients).

It reads the data directory like `docdex serve` does, with no lock (several can run beside
`serve` and the worker), and follows new versions as they are published. stdout carries the
protocol only; logs go to stderr. Before the first index exists it still answers: the tools
say that nothing is indexed yet.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import TYPE_CHECKING

import anyio

from docdex.index_format.layout import DataDir
from docdex.server.boot import Boot, open_docs

if TYPE_CHECKING:
    from docdex.model.embedder import Embedder


def serve_stdio(data: DataDir, model: Future[Embedder] | None = None) -> int:
    """Answer MCP requests on stdin/stdout until the client closes them."""
    boot = Boot()
    docs = open_docs(data, boot, model)
    from .tools import build_mcp  # the SDK's import is the slowest part of a start

    mcp = build_mcp(docs)
    boot.mark("MCP over stdio ready")
    docs.holder.start()
    try:
        anyio.run(mcp.run_stdio_async)
    finally:
        docs.holder.stop()
    return 0
