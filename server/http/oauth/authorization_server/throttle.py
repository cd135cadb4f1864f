"""Budgets of attempts by key over a sliding window of an injected clock, the budgets wrong
admin secrets are charged to, and who a request comes from.

A `Window` counts, for each key, what happened within the last `window` seconds and says
when a key has spent its `limit`. It keeps at most `max_keys` keys, forgetting the one idle
longest, so that strangers inventing keys (addresses, client ids) cannot grow it.

`WrongSecrets` holds what a wrong admin secret costs whoever typed it (adr/0038, "The
admin secret"); none of it ever decides about a right one, which consent.py compares first:

    MAX_WRONG_PER_REQUEST   the request it was typed into ends (provider.wrong_secret)
    MAX_WRONG_UNTRUSTED     a client the owner never authorized is forgotten
    MAX_WRONG_PER_CLIENT    within WINDOW_S, for one client, from the address that started
                            its requests: that address may start no more for it (`shut_out`)
    MAX_WRONG_OVERALL       within WINDOW_S, from everyone: then every wrong secret ends its
                            request, and its client if never authorized, at once (`pressed`)
"""

from __future__ import annotations

import ipaddress
from collections import OrderedDict, deque
from collections.abc import Hashable

from starlette.requests import Request

from .token_store import UNUSED_CLIENT_S, Clock

MAX_KEYS = 10_000
WINDOW_S = 300.0
MAX_WRONG_PER_REQUEST = 3
MAX_WRONG_UNTRUSTED = 10  # over the life of a client never authorized (a day at most)
MAX_WRONG_PER_CLIENT = 10
MAX_WRONG_OVERALL = 100
_ALL = "all"  # the one key of the overall window


class Window:
    def __init__(self, clock: Clock, limit: int, window: float, max_keys: int = MAX_KEYS):
        self.clock, self.limit, self.window, self.max_keys = clock, limit, window, max_keys
        self._times: OrderedDict[Hashable, deque[float]] = OrderedDict()

    def count(self, key: Hashable) -> int:
        """What `key` did within the window."""
        times = self._times.get(key)
        if times is None:
            return 0
        cutoff = self.clock() - self.window
        while times and times[0] <= cutoff:
            times.popleft()
        if not times:
            del self._times[key]
        return len(times)

    def spent(self, key: Hashable) -> bool:
        return self.count(key) >= self.limit

    def record(self, key: Hashable) -> None:
        times = self._times.setdefault(key, deque())
        times.append(self.clock())
        if len(times) > self.limit:  # what lies past the limit changes no answer
            times.popleft()
        self._times.move_to_end(key)
        while len(self._times) > self.max_keys:
            self._times.popitem(last=False)

    def take(self, key: Hashable) -> bool:
        """Record one more for `key` unless it has spent its budget (then False)."""
        if self.spent(key):
            return False
        self.record(key)
        return True

    def refund(self, key: Hashable) -> None:
        """Give back the last one `take` recorded for `key`."""
        times = self._times.get(key)
        if times:
            times.pop()

    def retry_after(self, key: Hashable) -> int:
        """Seconds until `key` may act again (0: now)."""
        if not self.spent(key):
            return 0
        return max(1, int(self._times[key][0] + self.window - self.clock()) + 1)


class WrongSecrets:
    def __init__(self, clock: Clock) -> None:
        self._by_client = Window(clock, MAX_WRONG_PER_CLIENT, WINDOW_S)  # (requester, client)
        self._untrusted = Window(clock, MAX_WRONG_UNTRUSTED, UNUSED_CLIENT_S)  # by client
        self._overall = Window(clock, MAX_WRONG_OVERALL, WINDOW_S, max_keys=1)

    def shut_out(self, requester: str, client_id: str) -> bool:
        """Whether `requester` may start no request for `client_id` for now."""
        return self._by_client.spent((requester, client_id))

    def charge(self, requester: str, client_id: str, trusted: bool) -> tuple[bool, bool]:
        """Count one wrong secret for a request `requester` started for `client_id` (`trusted`:
        one the owner authorized before): (pressed, forget), whether every budget of all is
        spent now and whether to forget the client."""
        self._overall.record(_ALL)
        self._by_client.record((requester, client_id))
        pressed = self._overall.spent(_ALL)
        if trusted:
            return pressed, False
        self._untrusted.record(client_id)
        return pressed, pressed or self._untrusted.spent(client_id)


def requester(request: Request) -> str:
    """Who sent `request`: the peer's address, or the client's as a proxy on loopback says it
    (uvicorn believes X-Forwarded-For from 127.0.0.1 and ::1 only; docs/deploy.md). An IPv6
    address stands for its /64, which one subscriber usually holds whole."""
    host = request.client.host if request.client is not None else ""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if not isinstance(address, ipaddress.IPv6Address):
        return host
    if address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(ipaddress.ip_network(f"{address}/64", strict=False))
