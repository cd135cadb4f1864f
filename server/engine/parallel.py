"""A query's independent parts (BM25, each segment's graph) run on every core at once:
Tantivy's and hnswlib's searches release the GIL. The calling thread takes tasks too, so
a query never waits for a helper that is busy with another query's work (adr/0029)."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import Any

HELPERS = max(0, (os.cpu_count() or 1) - 1)  # threads beside the caller; 0: all in the caller

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def run_shared(tasks: Sequence[Callable[[], Any]]) -> list[Any]:
    """Each task's result, in the order given; the first exception raised is re-raised
    once every task has finished."""
    if len(tasks) <= 1 or HELPERS == 0:
        return [task() for task in tasks]
    with start(tasks) as batch:
        return batch.join()


def start(tasks: Sequence[Callable[[], Any]]) -> Batch:
    """`tasks` begun on the helpers now, while the caller does other work; `join` runs
    what no helper has taken. Used as a context manager, no task outlives the block."""
    batch = Batch(tasks)
    if HELPERS and tasks:
        pool = _helpers()
        for _ in range(min(HELPERS, len(tasks))):
            pool.submit(batch.drain)
    return batch


@contextlib.contextmanager
def helpers(count: int) -> Iterator[None]:
    """`count` helper threads inside the block: the benches time a query on one thread
    beside the same query on every core."""
    global HELPERS
    before, HELPERS = HELPERS, count
    try:
        yield
    finally:
        HELPERS = before


def _helpers() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(HELPERS, thread_name_prefix="docdex-search")
        return _pool


class Batch:
    """Tasks taken one at a time by whichever thread is free; a helper that starts after
    the last task was taken returns at once."""

    def __init__(self, tasks: Sequence[Callable[[], Any]]) -> None:
        self._tasks = tasks
        self._results: list[Any] = [None] * len(tasks)
        self._next = 0
        self._left = len(tasks)
        self._error: BaseException | None = None
        self._lock = threading.Lock()
        self._done = threading.Event()
        if not tasks:
            self._done.set()

    def join(self) -> list[Any]:
        """Run the tasks no helper has taken, wait for the rest, return every result."""
        self.drain()
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._results

    def drain(self) -> None:
        while (i := self._take()) is not None:
            error = None
            try:
                self._results[i] = self._tasks[i]()
            except BaseException as raised:  # re-raised in the caller's thread
                error = raised
            self._finish(error)

    def __enter__(self) -> Batch:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Tasks not yet taken never start; the ones running are waited for."""
        with self._lock:
            self._left -= len(self._tasks) - self._next
            self._next = len(self._tasks)
            if self._left == 0:
                self._done.set()
        self._done.wait()

    def _take(self) -> int | None:
        with self._lock:
            if self._next == len(self._tasks):
                return None
            self._next += 1
            return self._next - 1

    def _finish(self, error: BaseException | None) -> None:
        with self._lock:
            self._error = self._error or error
            self._left -= 1
            if self._left == 0:
                self._done.set()
