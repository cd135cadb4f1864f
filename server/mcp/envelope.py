"""JSON-RPC envelopes the SDK takes wrongly, answered before it sees them.

The SDK reads an `id` of null, 1.5 or an object as a notification (no answer), answers a
missing `jsonrpc`, non-object `params` or a batch with -32602 and a pydantic dump, and
over stdio answers invalid JSON and batches with nothing at all. JSON-RPC 2.0 (and MCP,
which has no batches since 2025-06-18) says: -32700 for what is not JSON, -32600 for what
is not a request, with the id when one can be read, else null. Both transports check each
message here first (http/app.py, stdio.py); this module imports nothing of the SDK.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


class Refusal(NamedTuple):
    id: str | int | None
    code: int
    message: str

    def reply(self) -> dict[str, Any]:
        error = {"code": self.code, "message": self.message}
        return {"jsonrpc": "2.0", "id": self.id, "error": error}


def refusal(text: str | bytes) -> Refusal | None:
    """Why the message `text` is no JSON-RPC message, or None when it is one."""
    try:
        message = json.loads(text)
    except ValueError:
        return Refusal(None, PARSE_ERROR, "parse error: the message is not JSON")
    if isinstance(message, list):
        return Refusal(None, INVALID_REQUEST, "batches are not part of MCP: send one message")
    if not isinstance(message, dict):
        return Refusal(None, INVALID_REQUEST, "a JSON-RPC message is a JSON object")
    return _envelope_refusal(message)


def _envelope_refusal(message: dict[str, Any]) -> Refusal | None:
    ident = message.get("id")
    valid_id = isinstance(ident, str) or (isinstance(ident, int) and not isinstance(ident, bool))
    answer_to = ident if valid_id else None
    if message.get("jsonrpc") != "2.0":
        return Refusal(answer_to, INVALID_REQUEST, 'jsonrpc must be "2.0"')
    if "id" in message and not valid_id:
        return Refusal(
            None,
            INVALID_REQUEST,
            "id must be a string or an integer (a message without an id is a notification)",
        )
    if "method" in message:
        if not isinstance(message["method"], str):
            return Refusal(answer_to, INVALID_REQUEST, "method must be a string")
        if "params" in message and not isinstance(message["params"], dict):
            return Refusal(answer_to, INVALID_REQUEST, "params must be an object (by name)")
        return None
    if valid_id and ("result" in message or "error" in message):
        return None  # a response to a request of the server's
    return Refusal(answer_to, INVALID_REQUEST, "a message has a method, or answers a request")
