"""Where the SDK's answers depart from the protocol, put right in front of it.

- docdex offers no prompts: connecting (`initialize`, `server/discover`) does not declare
  the capability, and its methods (`prompts/list`, `prompts/get`) are -32601, method not
  found, under every protocol version, as the SDK answers the methods of the other
  capabilities docdex does not declare (logging, completions). The SDK would answer
  prompts/list with an empty list: a server that answers a capability's methods has that
  capability, declared or not. Under 2026-07-28 the HTTP transport sends -32601 with status
  404, as that version says for a method the server does not implement.
- A call to a tool that does not exist is the protocol error -32602 the specification lists,
  not a tool result with `isError`.
- `tools/list` has one page: a cursor it never gave is refused (-32602), as
  `resources/list` refuses one.
- Connecting declares the change notifications docdex sends, and only those, under every
  protocol version: `resources.listChanged` (a new version's pages, announcements.py), not
  `tools.listChanged` (its tools never change) nor `resources.subscribe` (no one page is
  followed).
"""

from __future__ import annotations

from typing import Any

from mcp.server.context import CallNext, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, METHOD_NOT_FOUND

from .resources import CONNECTING

# The methods of the capabilities docdex does not declare, which the SDK serves anyway.
UNDECLARED = {"prompts/list": "prompts", "prompts/get": "prompts"}


def keep_to_the_protocol(mcp: MCPServer) -> None:
    """Call once every tool is registered: the tools' names are read at the first call."""
    tools: list[str] = []

    async def check(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
        params = ctx.params if isinstance(ctx.params, dict) else {}
        if ctx.method in UNDECLARED:
            raise MCPError(
                code=METHOD_NOT_FOUND,
                message=f"method not found: docdex offers no {UNDECLARED[ctx.method]}",
                data=ctx.method,
            )
        if ctx.method == "tools/call":
            if not tools:
                tools.extend(tool.name for tool in await mcp.list_tools())
            if params.get("name") not in tools:
                raise MCPError(
                    code=INVALID_PARAMS,
                    message=f"unknown tool {params.get('name')!r}; the tools are "
                    + ", ".join(tools),
                )
        if ctx.method == "tools/list" and params.get("cursor") is not None:
            raise MCPError(
                code=INVALID_PARAMS,
                message="cursor is not one tools/list returned: the tools come in one page",
            )
        result = await call_next(ctx)
        if ctx.method in CONNECTING and isinstance(result, dict):
            return _as_declared(result)
        return result

    mcp.middleware.append(check)


# The notification flags as docdex keeps them. Under 2026-07-28 the SDK sets them all, since
# it serves subscriptions/listen; under the handshake versions it sets none.
NOTIFICATIONS = {
    "tools": {"listChanged": False},
    "resources": {"listChanged": True, "subscribe": False},
}


def _as_declared(result: dict[str, Any]) -> dict[str, Any]:
    """A connecting result's capabilities as docdex has them: no prompts, the notifications
    it sends."""
    capabilities = result.get("capabilities")
    if not isinstance(capabilities, dict):
        return result
    declared = {k: v for k, v in capabilities.items() if k != "prompts"}
    for name, flags in NOTIFICATIONS.items():
        if isinstance(declared.get(name), dict):
            declared[name] = {**declared[name], **flags}
    return {**result, "capabilities": declared}
