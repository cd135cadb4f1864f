"""Polling remote sources: a thread beside `docdex serve` files a queue request (origin
"poll") for each remote source whose `poll_interval` has passed; the worker takes it like
any other request, so the fetch and the indexing happen in the single writer. A fetch that
brings no new commit publishes nothing (the pipeline sees the head it already indexed).

When each source was last polled is kept in state/poll.json (wall-clock seconds), so a
restart does not poll everything again; a source never polled is polled at once.
"""

from __future__ import annotations

import logging
import threading
import time

import msgspec

from docdex.index_format.config import Config, SourceError, load_config, source_kind
from docdex.index_format.layout import DataDir, write_atomic
from docdex.index_format.queue import IndexRequest, file_request, pending_requests
from docdex.runtime.logs import log_event

from .threads import in_background

log = logging.getLogger("docdex.poller")

TICK_S = 30.0  # how often the thread looks for due sources

_stamps = msgspec.json.Decoder(dict[str, float])


def due_sources(config: Config, last_polled: dict[str, float], now: float) -> list[str]:
    """Remote sources whose poll interval has passed (an interval <= 0 turns polling off)."""
    due = []
    for source in config.sources:
        if source.poll_interval <= 0 or not _is_remote(source.location):
            continue
        if now - last_polled.get(source.name, float("-inf")) >= source.poll_interval:
            due.append(source.name)
    return due


def _is_remote(location: str) -> bool:
    try:
        return source_kind(location) == "remote"
    except SourceError:
        return False


def poll_once(data: DataDir, now: float | None = None) -> list[IndexRequest]:
    """File a request for every due remote source (unless one is still queued)."""
    if not data.marker.exists():
        return []  # no index here yet: nothing to keep fresh
    now = time.time() if now is None else now
    config = load_config(data)
    stamps = read_stamps(data)
    due = due_sources(config, stamps, now)
    queued = {r.source for r in pending_requests(data) if r.origin == "poll"}
    filed = [file_request(data, name, origin="poll") for name in due if name not in queued]
    for request in filed:
        log_event(log, "poll", source=request.source, request=request.id)
    configured = {s.name for s in config.sources}
    stamps = {n: t for n, t in stamps.items() if n in configured} | dict.fromkeys(due, now)
    data.state.mkdir(parents=True, exist_ok=True)
    write_atomic(data.state / "poll.json", msgspec.json.encode(stamps))
    return filed


def read_stamps(data: DataDir) -> dict[str, float]:
    try:
        return _stamps.decode((data.state / "poll.json").read_bytes())
    except (OSError, msgspec.DecodeError):
        return {}


def polling(data: DataDir, tick_s: float = TICK_S):
    """A context manager: the polling thread runs while its block does (around the server)."""
    return in_background("docdex-poller", lambda stop: _poll_until(data, stop, tick_s))


def _poll_until(data: DataDir, stop: threading.Event, tick_s: float) -> None:
    while True:
        try:
            poll_once(data)
        except Exception as exc:  # the thread outlives a bad config or a full disk
            log_event(log, "poll-failed", logging.WARNING, error=str(exc))
        if stop.wait(tick_s):
            return
