"""Work that runs in a thread beside a process's main job (the poller beside `serve`, the
watch loop beside `docdex mcp --watch`)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def in_background(
    name: str, work: Callable[[threading.Event], None], join_s: float = 5.0
) -> Iterator[None]:
    """Run `work(stop)` in a daemon thread while the block runs; leaving the block sets
    `stop` and waits up to `join_s` for the thread to return."""
    stop = threading.Event()
    thread = threading.Thread(target=work, args=(stop,), name=name, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=join_s)
