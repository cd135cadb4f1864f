"""The settings of `docdex serve`'s connection deadlines and bound (connections.py), from
the environment, checked before the server starts:

    DOCDEX_HEADER_TIMEOUT   seconds from accept (or the previous response) to a full head: 10
    DOCDEX_IDLE_TIMEOUT     seconds a keep-alive connection may wait for its next request: 5
    DOCDEX_MAX_CONNECTIONS  open connections, past which the slowest heads are closed: 1000

Kept apart from connections.py, which imports uvicorn, so that `docdex serve` refuses a bad
value before it starts loading the model.
"""

from __future__ import annotations

import contextlib
import logging
import os
import resource
from collections.abc import Mapping
from typing import Any

import msgspec

log = logging.getLogger("docdex.server")

FD_RESERVE = 256  # descriptors kept for the index files, the model, logs and the worker


class LimitsRefused(ValueError):
    """A DOCDEX_* connection setting that is not a positive number."""


class ConnectionLimits(msgspec.Struct, frozen=True):
    header_timeout: float = 10.0  # seconds from accept / previous response to a full head
    idle_timeout: float = 5.0  # seconds a keep-alive connection may wait for its next request
    max_connections: int = 1000  # open connections, past which the slowest are closed


ENV_NAMES = {
    "header_timeout": "DOCDEX_HEADER_TIMEOUT",
    "idle_timeout": "DOCDEX_IDLE_TIMEOUT",
    "max_connections": "DOCDEX_MAX_CONNECTIONS",
}


def limits_from_env(environ: Mapping[str, str] = os.environ) -> ConnectionLimits:
    """The defaults, overridden by DOCDEX_HEADER_TIMEOUT, DOCDEX_IDLE_TIMEOUT (seconds) and
    DOCDEX_MAX_CONNECTIONS. Raises LimitsRefused for a value that is not a positive number."""
    given: dict[str, Any] = {}
    for field, name in ENV_NAMES.items():
        text = environ.get(name, "").strip()
        if not text:
            continue
        kind = int if field == "max_connections" else float
        try:
            value = kind(text)
        except ValueError:
            value = 0
        if not 0 < value < float("inf"):
            noun = "a whole number" if kind is int else "a number of seconds"
            raise LimitsRefused(f"{name} must be {noun} above 0, not {text[:40]!r}")
        given[field] = value
    return ConnectionLimits(**given)


def with_fd_room(limits: ConnectionLimits) -> ConnectionLimits:
    """`limits` once this process may open max_connections sockets besides its own files:
    the soft RLIMIT_NOFILE is raised towards the hard one (systemd's soft default is 1024);
    where the hard limit is too low, max_connections is lowered to fit, with a warning."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = limits.max_connections + FD_RESERVE
    if soft != resource.RLIM_INFINITY and soft < needed:
        raised = needed if hard == resource.RLIM_INFINITY else min(hard, needed)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            soft = raised
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return limits
    fitting = max(soft - FD_RESERVE, 16)
    log.warning(
        "max_connections lowered from %d to %d: this process may open only %d files",
        limits.max_connections,
        fitting,
        soft,
    )
    return msgspec.structs.replace(limits, max_connections=fitting)
