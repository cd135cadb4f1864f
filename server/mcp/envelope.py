"""JSON-RPC envelopes the SDK takes wrongly, answered before it sees them.

The SDK reads an `id` of null, 1.5 or an object as a notification (no answer), answers a
missing `jsonrpc`, non-object `params` or a batch with -32602 and a pydantic dump, and
over stdio answers invalid JSON and batches with nothing at all. JSON-RPC 2.0 (and MCP,
which has no batches since 2025-06-18) says: -32700 for what is not JSON, -32600 for what
is not a request, with the id when one can be read, else null. Both transports check each
message here first (http/app.py, stdio.py); this module imports nothing of the SDK.

A message nested deeper than MAX_DEPTH arrays and objects is a parse error too: no MCP
message needs a tenth of that, Python's parser gives up (RecursionError) near 1,000 levels
and pydantic's near 200, and a message refused here never reaches either.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
MAX_DEPTH = 64


class Refusal(NamedTuple):
    id: str | int | None
    code: int
    message: str

    def reply(self) -> dict[str, Any]:
        error = {"code": self.code, "message": self.message}
        return {"jsonrpc": "2.0", "id": self.id, "error": error}


class Parsed(NamedTuple):
    """A message as read: its JSON value (None when it is not JSON), and why it is no
    JSON-RPC message (None when it is one)."""

    message: Any
    refusal: Refusal | None


NOT_JSON = Refusal(None, PARSE_ERROR, "parse error: the message is not JSON")
TOO_DEEP = Refusal(
    None,
    PARSE_ERROR,
    f"parse error: the message is nested deeper than {MAX_DEPTH} levels of arrays and objects",
)


def parse(text: str | bytes) -> Parsed:
    """The message `text`, read once: what the transports check and decide on."""
    try:
        message = json.loads(text)
    except RecursionError:
        return Parsed(None, TOO_DEEP)
    except ValueError:
        return Parsed(None, NOT_JSON)
    if _openings(text) > MAX_DEPTH and _nested_deeper(message, MAX_DEPTH):
        return Parsed(None, TOO_DEEP)
    return Parsed(message, _message_refusal(message))


def refusal(text: str | bytes) -> Refusal | None:
    """Why the message `text` is no JSON-RPC message, or None when it is one."""
    return parse(text).refusal


def _openings(text: str | bytes) -> int:
    """How many `[` and `{` the text holds: no message nests deeper (most hold a few)."""
    if isinstance(text, bytes):
        return text.count(b"[") + text.count(b"{")
    return text.count("[") + text.count("{")


def _nested_deeper(value: Any, limit: int) -> bool:
    """Whether `value` holds arrays and objects more than `limit` levels deep (a level at a
    time, so that no depth can exhaust the stack)."""
    level = [value] if isinstance(value, list | dict) else []
    for _ in range(limit):
        level = [
            child
            for node in level
            for child in (node.values() if isinstance(node, dict) else node)
            if isinstance(child, list | dict)
        ]
        if not level:
            return False
    return True


def _message_refusal(message: Any) -> Refusal | None:
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
