"""Deadlines and a bound for `docdex serve`'s HTTP connections (adr/0023).

uvicorn's HTTP/1.1 handler arms no timer before a request head is complete, so a peer that
connects and sends nothing, or a request line and headers a byte at a time, holds its socket
for ever; the token is checked only once the head is complete, so anyone who can reach the
port could hold every file descriptor. `GuardedH11` adds to uvicorn's h11 handler, with the
settings of `ConnectionLimits` (runtime/environment.py):

- a header deadline: from accept, and on a keep-alive connection from the end of the
  previous response, to the end of the next request head; data arriving does not extend
  it. An overdue peer gets `408` when part of a head arrived, and is closed without a word
  when it sent nothing;
- the idle keep-alive timeout: uvicorn's `timeout_keep_alive`;
- a bound on open connections: past it, the connections that have waited longest for a
  request head are closed (the slow ones), never one whose request is being answered, so
  new clients are not turned away while slow peers hold sockets.

Nothing times a request once its head is complete: bodies, slow readers and long answers
(MCP calls) run as long as they need; a reverse proxy bounds those (docs/deploy.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from typing import Any

import h11
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

from docdex.runtime.environment import ConnectionLimits

log = logging.getLogger("docdex.server")

WARN_EVERY_S = 60.0
REQUEST_TIMEOUT = b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


class ConnectionGuard:
    """One server's open connections, and those waiting for a request head, longest first."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self.open: set[GuardedH11] = set()
        self.waiting: dict[GuardedH11, None] = {}  # insertion order: longest waiting first
        self.closed_for_room = 0  # since the last warning
        self.next_warning = 0.0  # monotonic time

    def opened(self, conn: GuardedH11) -> None:
        """Count `conn` in, and make room: close the longest-waiting heads (`conn` itself,
        last, when every other connection is answering a request)."""
        self.open.add(conn)
        while len(self.open) > self.limits.max_connections and self.waiting:
            next(iter(self.waiting)).give_up()
            self.closed_for_room += 1
        if self.closed_for_room and time.monotonic() >= self.next_warning:
            self._warn()

    def _warn(self) -> None:
        """One line a minute at most: a flood of slow peers must not flood the log too."""
        log.warning(
            "%d connections open (DOCDEX_MAX_CONNECTIONS): closed %d waiting for a request "
            "head to make room",
            len(self.open),
            self.closed_for_room,
        )
        self.closed_for_room = 0
        self.next_warning = time.monotonic() + WARN_EVERY_S

    def awaiting_head(self, conn: GuardedH11) -> None:
        self.waiting.pop(conn, None)
        self.waiting[conn] = None

    def stopped_waiting(self, conn: GuardedH11) -> None:
        self.waiting.pop(conn, None)

    def closed(self, conn: GuardedH11) -> None:
        self.waiting.pop(conn, None)
        self.open.discard(conn)


class GuardedH11(H11Protocol):
    """uvicorn's h11 handler under a `ConnectionGuard`: a deadline on every request head, and
    a place in the guard's count."""

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
        *,
        guard: ConnectionGuard,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.guard = guard
        self.head_deadline: asyncio.TimerHandle | None = None

    def connection_made(  # type: ignore[override]  # uvicorn's own override narrows it too
        self, transport: asyncio.Transport
    ) -> None:
        super().connection_made(transport)
        self._await_head()
        self.guard.opened(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_waiting()
        self.guard.closed(self)
        super().connection_lost(exc)

    def handle_events(self) -> None:
        cycle = self.cycle
        super().handle_events()
        if self.cycle is not cycle:  # a request head was parsed: its answer is not timed
            self._stop_waiting()

    def on_response_complete(self) -> None:
        if not self.transport.is_closing():  # kept alive: the next head is due in time
            self._await_head()
        super().on_response_complete()  # may parse a pipelined head at once

    def give_up(self) -> None:
        """Close this connection, whose request head is overdue or which makes room: 408
        when part of a head arrived, nothing for a peer that sent nothing."""
        self._stop_waiting()
        self.guard.closed(self)
        if self.transport.is_closing():
            return
        pending, _ = self.conn.trailing_data
        if pending:
            self.transport.write(REQUEST_TIMEOUT)
        with contextlib.suppress(h11.LocalProtocolError):
            self.conn.send(h11.ConnectionClosed())
        self.transport.close()

    def _await_head(self) -> None:
        self._stop_waiting()
        self.head_deadline = self.loop.call_later(self.guard.limits.header_timeout, self.give_up)
        self.guard.awaiting_head(self)

    def _stop_waiting(self) -> None:
        if self.head_deadline is not None:
            self.head_deadline.cancel()
            self.head_deadline = None
        self.guard.stopped_waiting(self)


def guarded_http(limits: ConnectionLimits) -> functools.partial[GuardedH11]:
    """The `http` protocol factory for uvicorn.Config: one guard for the server."""
    return functools.partial(GuardedH11, guard=ConnectionGuard(limits))
