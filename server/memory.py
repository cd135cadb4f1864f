"""Process-wide memory settings for `docdex serve`.

glibc gives each thread that allocates its own malloc arena (up to 8 per core), and the
server has many threads (the model's, the worker threads that run searches and MCP tools,
the version watcher's): their arenas hold freed memory apart. Capping them at two from inside
the process lowers the server's RSS; MALLOC_ARENA_MAX=2 in the environment, which glibc reads
before any allocation, lowers it further (docs/deploy.md; figures in adr/0008, "Threads").
"""

from __future__ import annotations

import ctypes
import ctypes.util

M_ARENA_MAX = -8  # glibc's mallopt parameter number
SERVER_ARENAS = 2


def limit_malloc_arenas(arenas: int = SERVER_ARENAS, preset: str = "") -> bool:
    """Cap glibc's malloc arenas; call before starting threads. `preset`: MALLOC_ARENA_MAX
    as the environment sets it, which glibc has read already and which wins. False where
    there is no glibc, or `preset` decided."""
    if preset:
        return False
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        mallopt = libc.mallopt if libc else None
    except (OSError, AttributeError):
        return False
    return bool(mallopt and mallopt(M_ARENA_MAX, arenas) == 1)
