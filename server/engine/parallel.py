"""A query's independent parts (BM25, each segment's graph) run on every core at once:
Tantivy's and hnswlib's searches release the GIL. The calling thread takes tasks too, so
a query never waits for a helper that is busy with another query's work (adr/0029)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import Any

CORES_LESS_ONE = max(0, (os.cpu_count() or 1) - 1)  # helpers beside the caller by default

_pools: dict[int, ThreadPoolExecutor] = {}  # helper count -> its threads, made at first use
_pools_lock = threading.Lock()


def run_shared(tasks: Sequence[Callable[[], Any]], helpers: int | None = None) -> list[Any]:
    """Each task's result, in the order given; the first exception raised is re-raised
    once every task has finished. `helpers`: threads beside the caller (None: one fewer than
    the cores; 0: every task in the caller)."""
    count = CORES_LESS_ONE if helpers is None else helpers
    if len(tasks) <= 1 or count == 0:
        return [task() for task in tasks]
    with start(tasks, count) as batch:
        return batch.join()


def start(tasks: Sequence[Callable[[], Any]], helpers: int | None = None) -> Batch:
    """`tasks` begun on the helpers now, while the caller does other work; `join` runs
    what no helper has taken. Used as a context manager, no task outlives the block."""
    batch = Batch(tasks)
    count = CORES_LESS_ONE if helpers is None else helpers
    if count and tasks:
        pool = _helpers(count)
        for _ in range(min(count, len(tasks))):
            pool.submit(batch.drain)
    return batch


def _helpers(count: int) -> ThreadPoolExecutor:
    """The process's `count` helper threads (the same ones for every query asking for as
    many)."""
    with _pools_lock:
        pool = _pools.get(count)
        if pool is None:
            pool = _pools[count] = ThreadPoolExecutor(count, thread_name_prefix="docdex-search")
        return pool


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
