"""Which scope an MCP message needs: docdex:reindex for a `reindex` call, docdex:read
(which the guard already required) for everything else.

/mcp reads each request's body before the SDK sees it (app.py's PostOnly) and parses it once
(server/mcp/envelope.py); the scope is decided on that parsed message, as the SDK will
decode it, never on its bytes (`"\\u0072eindex"` is `reindex` too). A call the request's
grant does not allow is answered 403 with `error="insufficient_scope"` and the scopes to ask
for, as the MCP authorization specification has it, so a client can step up (ask the owner
again for more) and retry. The reindex tool checks the grant again itself
(server/mcp/caller.py), whatever path a call takes.
"""

from __future__ import annotations

from typing import Any

from starlette.types import Scope, Send

from docdex.server.http.oauth.settings import READ_SCOPE, REINDEX_SCOPE

from .guard import GRANT, Grant, send_challenge

SCOPED_TOOLS = {"reindex": REINDEX_SCOPE}


def needed_scope(message: Any) -> str:
    """The scope the parsed JSON-RPC message (or batch of them) needs beyond docdex:read
    ("" for none)."""
    for item in message if isinstance(message, list) else [message]:
        if not isinstance(item, dict) or item.get("method") != "tools/call":
            continue
        params = item.get("params")
        name = params.get("name") if isinstance(params, dict) else None
        if isinstance(name, str) and name in SCOPED_TOOLS:
            return SCOPED_TOOLS[name]
    return ""


async def refused_scope(scope: Scope, message: Any, send: Send) -> bool:
    """Answer 403 when the request's grant lacks the scope the parsed `message` needs;
    whether it did. A request without a grant (no credential configured) needs no scope."""
    grant = scope.get(GRANT)
    if not isinstance(grant, Grant):
        return False
    needed = needed_scope(message)
    if not needed or grant.allows(needed):
        return False
    ask = f"{READ_SCOPE} {needed}"  # what the call needs, read included (a step-up keeps it)
    await send_challenge(send, 403, grant.resource_metadata, "insufficient_scope", ask)
    return True
