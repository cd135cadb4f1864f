"""Authorization requests waiting for the owner's answer on the consent page, in memory.

They are bounded so that a flood from one requester evicts nobody else's (adr/0038): past
MAX_PER_CLIENT requests of one client from one requester, or MAX_PER_REQUESTER from one
requester, the oldest of that same group goes; past MAX_PENDING in all, a new request is
refused (`PendingFull`) and no request younger than its lifetime is evicted for it.
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from collections.abc import Callable

import msgspec

from docdex.errors import DocdexError

from .token_store import Clock

MAX_PENDING = 1000
MAX_PER_CLIENT = 5  # of one client from one requester
MAX_PER_REQUESTER = 20


class PendingFull(DocdexError):
    """MAX_PENDING requests wait already, none of them the requester's own."""


class Pending(msgspec.Struct, frozen=True, kw_only=True):
    """An authorization request waiting for the owner's answer on the consent page."""

    client_id: str
    client_name: str
    redirect_uri: str
    redirect_uri_explicit: bool
    state: str | None
    scopes: list[str]
    code_challenge: str
    expires_at: float
    requester: str = ""  # the address it came from (throttle.requester)


class PendingRequests:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._requests: OrderedDict[str, Pending] = OrderedDict()  # oldest first
        self._wrong: dict[str, int] = {}  # wrong secrets typed into each, by its id

    def add(self, request: Pending) -> str:
        """The new request's id, once its requester's oldest made room if need be."""
        self.expire()
        self._bound(lambda p: p.requester == request.requester, MAX_PER_REQUESTER)
        self._bound(
            lambda p: p.requester == request.requester and p.client_id == request.client_id,
            MAX_PER_CLIENT,
        )
        if len(self._requests) >= MAX_PENDING:
            raise PendingFull(f"{MAX_PENDING} authorization requests are waiting already")
        request_id = secrets.token_urlsafe(24)
        self._requests[request_id] = request
        return request_id

    def get(self, request_id: str) -> Pending | None:
        """The request, while it may still be answered."""
        request = self._requests.get(request_id)
        if request is None or request.expires_at <= self.clock():
            return None
        return request

    def take(self, request_id: str) -> Pending | None:
        """The request, answered: it is gone from here."""
        request = self.get(request_id)
        self.drop(request_id)
        return request

    def drop(self, request_id: str) -> None:
        self._requests.pop(request_id, None)
        self._wrong.pop(request_id, None)

    def drop_client(self, client_id: str) -> None:
        for request_id in self._ids(lambda p: p.client_id == client_id):
            self.drop(request_id)

    def wrong_secret(self, request_id: str) -> int:
        """One more wrong secret typed into the request: how many now."""
        self._wrong[request_id] = self._wrong.get(request_id, 0) + 1
        return self._wrong[request_id]

    def expire(self) -> None:
        now = self.clock()
        for request_id in self._ids(lambda p: p.expires_at <= now):
            self.drop(request_id)

    def _bound(self, mine: Callable[[Pending], bool], limit: int) -> None:
        """Room for one more of the group `mine`: its oldest go past `limit`."""
        ids = self._ids(mine)
        for request_id in ids[: max(0, len(ids) - limit + 1)]:
            self.drop(request_id)

    def _ids(self, which: Callable[[Pending], bool]) -> list[str]:
        return [request_id for request_id, p in self._requests.items() if which(p)]
