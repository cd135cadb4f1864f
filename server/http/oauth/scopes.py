"""Which scope an MCP message needs: docdex:reindex for a `reindex` call, docdex:read
(which the guard already required) for everything else.

/mcp reads each request's body before the SDK sees it (app.py's PostOnly); a call the
request's grant does not allow is answered 403 with `error="insufficient_scope"` and the
scopes to ask for, as the MCP authorization specification has it, so a client can step up
(ask the owner again for more) and retry.
"""

from __future__ import annotations

import json

from starlette.types import Scope, Send

from .guard import GRANT, Grant, send_challenge
from .settings import READ_SCOPE, REINDEX_SCOPE

SCOPED_TOOLS = {"reindex": REINDEX_SCOPE}


def needed_scope(body: bytes) -> str:
    """The scope the JSON-RPC message `body` needs beyond docdex:read ("" for none)."""
    if not any(name.encode() in body for name in SCOPED_TOOLS):
        return ""  # the common case, without parsing the body twice
    try:
        message = json.loads(body)
    except ValueError:
        return ""
    if not isinstance(message, dict) or message.get("method") != "tools/call":
        return ""
    params = message.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    return SCOPED_TOOLS.get(name, "") if isinstance(name, str) else ""


async def refused_scope(scope: Scope, body: bytes, send: Send) -> bool:
    """Answer 403 when the request's grant lacks the scope `body` needs; whether it did.
    A request without a grant (no OAuth configured) needs no scope."""
    grant = scope.get(GRANT)
    if not isinstance(grant, Grant):
        return False
    needed = needed_scope(body)
    if not needed or grant.allows(needed):
        return False
    ask = f"{READ_SCOPE} {needed}"  # what the call needs, read included (a step-up keeps it)
    await send_challenge(send, 403, grant.resource_metadata, "insufficient_scope", ask)
    return True
