"""Locks of the writing side, each a `flock` the kernel releases when its holder dies: the
writer lock (one indexing run at a time per data directory) and the watch lock (one process
at a time follows the checkouts' working trees)."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from docdex.errors import DocdexError
from docdex.index_format.layout import DataDir

WRITER_LOCK = "writer.lock"
WATCH_LOCK = "watch.lock"


class WriterBusy(DocdexError):
    def __init__(self, pid: str) -> None:
        super().__init__(f"another docdex indexer (pid {pid or '?'}) holds the writer lock")
        self.pid = pid


@contextmanager
def writer_lock(
    data: DataDir, wait: bool = True, on_wait: Callable[[str], None] | None = None
) -> Iterator[None]:
    """Hold the data directory's writer lock. A second writer waits (or raises WriterBusy
    with wait=False)."""
    with _flocked(data.state / WRITER_LOCK) as (fd, holder):
        if holder is not None:
            if not wait:
                raise WriterBusy(holder)
            if on_wait:
                on_wait(holder)
            fcntl.flock(fd, fcntl.LOCK_EX)
            _write_pid(fd)
        yield


@contextmanager
def watch_lock(data: DataDir) -> Iterator[str | None]:
    """Try to become the one process that indexes working trees as they change (`docdex
    watch`, `docdex mcp --watch`): yields None while this process holds the lock, else the
    pid of the process that does (and this one should only read)."""
    with _flocked(data.state / WATCH_LOCK) as (_fd, holder):
        yield holder


@contextmanager
def _flocked(path: Path) -> Iterator[tuple[int, str | None]]:
    """(descriptor, None) with `path` locked by this process, or (descriptor, the holder's
    pid as it wrote it) when another process holds it; the descriptor closes on exit."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield fd, os.pread(fd, 32, 0).decode(errors="replace").strip()
        else:
            _write_pid(fd)
            yield fd, None
    finally:
        os.close(fd)


def _write_pid(fd: int) -> None:
    """Who holds the lock, for messages only: a full disk does not keep a holder out."""
    os.ftruncate(fd, 0)
    with contextlib.suppress(OSError):
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
