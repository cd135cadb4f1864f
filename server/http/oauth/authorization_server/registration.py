"""/register: the SDK's dynamic client registration (RFC 7591), bounded, since anyone who
reaches the server may register (adr/0038):

    MAX_REGISTRATION_BYTES        the whole request body (413 past it: routes.py)
    MAX_FIELD_CHARS               each field: a string's length, or the JSON of each list item
                                  or of an object (400, naming the field)
    MAX_LIST_ITEMS                each list (redirect_uris, contacts, grant_types, ...)
    REGISTRATIONS_PER_REQUESTER   registrations from one address within REGISTRATION_WINDOW_S
                                  (429 past it; one refused for its metadata does not count)

With these, 500 clients (the store's bound, store.MAX_CLIENTS) keep state/oauth.json under
about 4 MB, and a full store makes room by forgetting the oldest client never authorized.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mcp.server.auth.handlers.register import RegistrationHandler
from starlette.requests import Request
from starlette.responses import Response

from .throttle import Window, requester
from .token_endpoints import oauth_error
from .token_store import Clock

MAX_REGISTRATION_BYTES = 8 * 1024
MAX_FIELD_CHARS = 2000
MAX_LIST_ITEMS = 10
REGISTRATIONS_PER_REQUESTER = 10
REGISTRATION_WINDOW_S = 3600.0


@dataclass
class RegistrationEndpoint:
    handler: RegistrationHandler
    registrations: Window  # by requester

    @classmethod
    def over(cls, handler: RegistrationHandler, clock: Clock) -> RegistrationEndpoint:
        window = Window(clock, REGISTRATIONS_PER_REQUESTER, REGISTRATION_WINDOW_S)
        return cls(handler, window)

    async def handle(self, request: Request) -> Response:
        oversized = oversized_field(await request.body())
        if oversized is not None:
            return oauth_error(400, "invalid_client_metadata", oversized)
        who = requester(request)
        if not self.registrations.take(who):
            wait = self.registrations.retry_after(who)
            description = (
                f"more than {REGISTRATIONS_PER_REQUESTER} clients registered from this "
                f"address within {int(REGISTRATION_WINDOW_S)} s: try again in {wait} s"
            )
            return oauth_error(
                429, "temporarily_unavailable", description, {"Retry-After": str(wait)}
            )
        answer = await self.handler.handle(request)  # reads the body Starlette kept
        if answer.status_code != 201:
            self.registrations.refund(who)
        return answer


def oversized_field(body: bytes) -> str | None:
    """Which field of a registration request is too large, as a sentence; None when none is
    (or the body is not a JSON object: the SDK's handler says what is wrong with it)."""
    try:
        fields: Any = json.loads(body)
    except ValueError:
        return None
    if not isinstance(fields, dict):
        return None
    for name, value in fields.items():
        items = value if isinstance(value, list) else [value]
        if isinstance(value, list) and len(value) > MAX_LIST_ITEMS:
            return f"{name[:40]} has more than {MAX_LIST_ITEMS} items"
        if any(_size(item) > MAX_FIELD_CHARS for item in items):
            return f"{name[:40]} is longer than {MAX_FIELD_CHARS} characters"
    return None


def _size(value: object) -> int:
    return len(value) if isinstance(value, str) else len(json.dumps(value))
