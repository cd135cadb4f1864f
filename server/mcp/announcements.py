"""Clients that stay connected learn of new versions: when the version swapped in serves
other pages than the one before (an entry's page table changed, an entry came or went),
`notifications/resources/list_changed` goes to

- every `subscriptions/listen` stream that asked for it (protocol 2026-07-28: over
  streamable HTTP the answer to that request is the stream; over stdio too);
- the client of a handshake protocol version (2025-06-18, 2025-11-25) over stdio, on its
  connection.

A caller limited to some sources is told only of changes to its sources. docdex's HTTP
transport keeps no sessions, so a client of a handshake version over HTTP has no stream to
be told on: it learns of a new version by asking again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import Any

from mcp.server.context import CallNext, ServerRequestContext
from mcp.server.session import ServerSession
from mcp.shared.subscriptions import ResourcesListChanged, ServerEvent
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from docdex.index_format.records import SourceState
from docdex.index_format.ref_names import base_of
from docdex.server.answers.source_limits import SourceLimit
from docdex.server.engine import Engine

log = logging.getLogger("docdex.server")

Listener = Callable[[ServerEvent], None]


def changed_sources(old: Mapping[str, SourceState], new: Mapping[str, SourceState]) -> set[str]:
    """The configured sources whose served pages differ between two manifests' entries."""

    def pages(state: SourceState | None) -> tuple[str, object, int] | None:
        return (state.pages_file, state.pages_sum, state.files) if state else None

    return {
        base_of(key, (new.get(key) or old[key]))
        for key in old.keys() | new.keys()
        if pages(old.get(key)) != pages(new.get(key))
    }


class Announcements:
    """The subscription bus of one MCP server (`MCPServer(subscriptions=...)`), and the
    stdio connection of a handshake version, told when the served pages change. Each
    listener keeps the source limit of the caller that opened it."""

    def __init__(
        self,
        limit_now: Callable[[], SourceLimit],
        follow: Callable[[Callable[[Engine | None, Engine], None]], None],
    ) -> None:
        self._limit_now = limit_now
        self._follow = follow  # registers `swapped` with the version holder, at the first request
        self._listeners: dict[object, tuple[Listener, SourceLimit]] = {}
        self._stdio: tuple[ServerSession, SourceLimit] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # --- the SDK's SubscriptionBus ---------------------------------------------------------

    async def publish(self, event: ServerEvent) -> None:
        for listener, _limit in list(self._listeners.values()):
            _deliver(listener, event)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Called by the SDK's listen handler within the listen request: its caller's."""
        token = object()
        self._listeners[token] = (listener, self._limit_now())
        self._someone_listens()

        def unsubscribe() -> None:
            self._listeners.pop(token, None)

        return unsubscribe

    # --- what docdex adds -------------------------------------------------------------------

    async def middleware(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
        """Notes a stdio client's connection (a request that came with no HTTP request) of
        a handshake version."""
        if ctx.request is None and ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            self._stdio = (ctx.session, self._limit_now())
            self._someone_listens()
        return await call_next(ctx)

    def _someone_listens(self) -> None:
        """Note the server's loop and follow the versions, once: until someone is to be
        told, nothing is followed."""
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
            self._follow(self.swapped)

    def swapped(self, old: Engine | None, new: Engine) -> None:
        """The version holder's listener (its thread): announce a version whose pages
        changed on the server's loop."""
        loop = self._loop
        if old is None or loop is None or loop.is_closed():
            return
        sources = changed_sources(old.index.manifest.sources, new.index.manifest.sources)
        if sources:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                asyncio.run_coroutine_threadsafe(self.announce(sources), loop)

    async def announce(self, sources: set[str]) -> None:
        log.info("resources changed (%s): telling connected clients", ", ".join(sorted(sources)))
        event = ResourcesListChanged()
        for listener, limit in list(self._listeners.values()):
            if any(limit.allows(source) for source in sources):
                _deliver(listener, event)
        if self._stdio is not None:
            session, limit = self._stdio
            if any(limit.allows(source) for source in sources):
                try:
                    await session.send_resource_list_changed()
                except Exception:  # noqa: BLE001 - a client gone: nobody left to tell
                    log.info("could not tell the stdio client of the change", exc_info=True)


def _deliver(listener: Listener, event: ServerEvent) -> None:
    try:
        listener(event)
    except Exception:  # noqa: BLE001 - one listener must not keep the others from hearing
        log.exception("a subscription listener failed")
