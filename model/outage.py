"""An endpoint's failures as its client sees them: since when it fails and why (for /health
and list_sources). A client that searches use rests after each failure (`cooldown_s`):
requests fail at once with the last failure's sentence instead of waiting on it again,
and the failure's onset and its recovery are each logged once, not once a query. Another
client's failures are its caller's to report (an indexing run fails the source, `docdex
model list` prints the sentence)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import msgspec

from docdex.runtime.times import iso_utc

from .protocol import EmbedderUnavailable

T = TypeVar("T")
log = logging.getLogger("docdex.model")


class Failure(msgspec.Struct, frozen=True):
    error: str  # the last failure's sentence (redacted where it was made)
    since: str  # ISO 8601 UTC: the first failure since the endpoint last answered


class Outage:
    """Whether the endpoint of `what` ("embedder", "reranker") at `url` is failing."""

    def __init__(
        self,
        what: str,
        url: str,
        cooldown_s: float = 0.0,  # after a failure, fail at once for this long (0: never)
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.what = what
        self.url = url
        self.cooldown_s = cooldown_s
        self.clock = clock
        self.failure: Failure | None = None
        self._failed_at = 0.0
        self._lock = threading.Lock()

    def guard(self, request: Callable[[], T]) -> T:
        """`request()`, unless the endpoint rests after a failure; its EmbedderUnavailable
        is recorded, and an answer after failures ends them."""
        failure = self.failure
        if failure is not None and self.clock() - self._failed_at < self.cooldown_s:
            raise EmbedderUnavailable(failure.error)
        try:
            answer = request()
        except EmbedderUnavailable as exc:
            self._failed(str(exc))
            raise
        if self.failure is not None:
            self._answered()
        return answer

    def _failed(self, error: str) -> None:
        with self._lock:
            onset = self.failure is None
            since = iso_utc() if self.failure is None else self.failure.since
            self.failure = Failure(error, since)
            self._failed_at = self.clock()
        if onset and self.cooldown_s:
            log.warning(
                "the %s is failing (searches go on without it; said again when it answers): %s",
                self.what,
                error,
            )

    def _answered(self) -> None:
        with self._lock:
            ended, self.failure = self.failure, None
        if ended is not None and self.cooldown_s:
            log.info(
                "the %s at %s answers again (failing since %s)", self.what, self.url, ended.since
            )


def failure_of(model: object) -> Failure | None:
    """How the endpoint behind `model` is failing (None: it answers, or `model` is not an
    endpoint's client: those hold an `outage`)."""
    outage = getattr(model, "outage", None)
    return outage.failure if isinstance(outage, Outage) else None
