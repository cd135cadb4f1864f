"""Where the SDK's answers depart from the protocol, put right in front of it.

- docdex offers no prompts: `initialize` does not advertise the capability, and
  `prompts/get` names no prompt (-32602, not the SDK's code 0 and a logged traceback).
- A call to a tool that does not exist is the protocol error -32602 the specification lists,
  not a tool result with `isError`.
- `tools/list` has one page: a cursor it never gave is refused (-32602), as
  `resources/list` refuses one.
"""

from __future__ import annotations

from typing import Any

from mcp.server.context import CallNext, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS

from .resources import CONNECTING


def keep_to_the_protocol(mcp: MCPServer) -> None:
    """Call once every tool is registered: the tools' names are read at the first call."""
    tools: list[str] = []

    async def check(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
        params = ctx.params if isinstance(ctx.params, dict) else {}
        if ctx.method == "prompts/get":
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"no prompt named {params.get('name')!r}: docdex offers no prompts",
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
            return _without_prompts(result)
        return result

    mcp.middleware.append(check)


def _without_prompts(result: dict[str, Any]) -> dict[str, Any]:
    capabilities = result.get("capabilities")
    if not isinstance(capabilities, dict) or "prompts" not in capabilities:
        return result
    rest = {k: v for k, v in capabilities.items() if k != "prompts"}
    return {**result, "capabilities": rest}
