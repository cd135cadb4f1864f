"""The single-writer lock: one indexing run at a time per data directory."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from docdex.index_format.layout import DataDir


class WriterBusy(Exception):
    def __init__(self, pid: str) -> None:
        super().__init__(f"another docdex indexer (pid {pid or '?'}) holds the writer lock")
        self.pid = pid


@contextmanager
def writer_lock(
    data: DataDir, wait: bool = True, on_wait: Callable[[str], None] | None = None
) -> Iterator[None]:
    """Hold the data directory's writer lock. A second writer waits (or raises WriterBusy
    with wait=False); the kernel releases the lock if its holder dies."""
    data.state.mkdir(parents=True, exist_ok=True)
    fd = os.open(data.state / "writer.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
            if not wait:
                raise WriterBusy(holder) from None
            if on_wait:
                on_wait(holder)
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)
