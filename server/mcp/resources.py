"""Pages as MCP resources, and the parts of the MCP surface that follow the index.

- The template docdex://{source}/{+path} reads a page's markdown (resources/read).
- resources/list pages through every indexed page, RESOURCE_PAGE at a time, with cursors.
  The SDK lists only resources registered up front, so a middleware answers it from the
  served version.
- Connecting (`initialize`, or `server/discover`) answers with instructions built from the
  index at that moment.

Each answers as the request's caller sees the index (caller.py): a token limited to some
sources lists, reads and is told of those only.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
from mcp.server.context import CallNext, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, ListResourcesResult, Resource
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from docdex.errors import DocdexError, InvalidArgument, NotFound
from docdex.server.answers.cursors import RESOURCE_PAGE
from docdex.server.answers.docs import Docs
from docdex.server.engine import RESOURCE_TEMPLATE
from docdex.server.versions import NoVersion

from .caller import Caller

log = logging.getLogger("docdex.server")

MARKDOWN = "text/markdown"
# How a client learns the instructions: `initialize` (handshake protocol versions) or
# `server/discover` (2026-07-28, which has no handshake).
CONNECTING = ("initialize", "server/discover")
PAGE_DESCRIPTION = (
    "An indexed markdown page as of its indexed commit, reassembled from its sections "
    "(line-aligned with the file). Long pages end with a note on reading on with get_document."
)


def add_resources(mcp: MCPServer, caller: Caller) -> None:
    @mcp.resource(
        RESOURCE_TEMPLATE,
        name="page",
        title="Documentation page",
        description=PAGE_DESCRIPTION,
        mime_type=MARKDOWN,
    )
    async def page(source: str, path: str) -> str:
        return await anyio.to_thread.run_sync(_read_page, caller(), source, path)

    async def follow_index(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
        if ctx.method == "resources/list":
            listed = await anyio.to_thread.run_sync(_list_pages, caller(), ctx.params)
            return _for_version(listed, ctx.protocol_version)
        result = await call_next(ctx)
        if ctx.method in CONNECTING and isinstance(result, dict):
            instructions = await anyio.to_thread.run_sync(caller().instructions)
            return _with_instructions(result, instructions)
        return result

    mcp.middleware.append(follow_index)


def _read_page(docs: Docs, source: str, path: str) -> str:
    try:
        return docs.read_page(source, path)
    except (InvalidArgument, NotFound) as exc:  # no such page: an id that cannot be, or is not
        raise ResourceNotFoundError(str(exc)) from None
    except DocdexError as exc:
        raise ResourceError(str(exc)) from None


def _list_pages(docs: Docs, params: Any) -> ListResourcesResult:
    cursor = params.get("cursor") if isinstance(params, dict) else None
    try:
        pages, next_cursor = docs.list_pages(
            cursor if isinstance(cursor, str) else "", RESOURCE_PAGE
        )
    except InvalidArgument as exc:
        raise MCPError(code=INVALID_PARAMS, message=str(exc)) from None
    except NoVersion:
        pages, next_cursor = [], ""
    return ListResourcesResult(
        resources=[
            Resource(
                uri=p.uri,
                name=p.path,
                title=p.title,
                description=p.description or None,
                mime_type=MARKDOWN,
            )
            for p in pages
        ],
        next_cursor=next_cursor or None,
    )


# Result fields of the 2026-07-28 protocol: a session that negotiated an older one gets none
_MODERN_ONLY = ("ttlMs", "cacheScope", "resultType")


def _for_version(result: ListResourcesResult, version: str) -> dict[str, Any]:
    """The result as the session's protocol version has it (a middleware that answers on
    its own owns the wire form; the SDK's sieve does not run)."""
    wire = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    if version in MODERN_PROTOCOL_VERSIONS:
        return wire
    return {k: v for k, v in wire.items() if k not in _MODERN_ONLY}


def _with_instructions(result: dict[str, Any], instructions: str) -> dict[str, Any]:
    return {**result, "instructions": instructions}
