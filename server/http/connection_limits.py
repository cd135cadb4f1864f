"""Room for `docdex serve`'s connection bound among the process's files.

The limits themselves (`ConnectionLimits`: DOCDEX_HEADER_TIMEOUT, DOCDEX_IDLE_TIMEOUT,
DOCDEX_MAX_CONNECTIONS) are read with the rest of the environment, before the server starts
loading the model (runtime/environment.py); connections.py enforces them.
"""

from __future__ import annotations

import contextlib
import logging
import resource

import msgspec

from docdex.runtime.environment import ConnectionLimits

log = logging.getLogger("docdex.server")

FD_RESERVE = 256  # descriptors kept for the index files, the model, logs and the worker


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
