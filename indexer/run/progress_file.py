"""The run's `state/progress.json` (index_format.run_progress): what it reads and embeds,
written at most every PROGRESS_EVERY_S on the run's clock, so that /health, list_sources
and `docdex inspect` can say how far it is."""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable

import msgspec

from docdex.index_format.layout import DataDir
from docdex.index_format.run_progress import (
    EMBEDDING,
    READING,
    RunProgress,
    clear_progress,
    write_progress,
)
from docdex.runtime.times import iso_utc

PROGRESS_EVERY_S = 2.0

log = logging.getLogger("docdex.pipeline")


class ProgressFile:
    """The progress of one run; `data` None writes nothing (a run nobody watches)."""

    def __init__(
        self,
        data: DataDir | None,
        clock: Callable[[], float] = time.monotonic,
        every_s: float = PROGRESS_EVERY_S,
    ) -> None:
        self.data = data
        self.clock = clock
        self.every_s = every_s
        self.pid = os.getpid()
        self.state = RunProgress(self.pid, iso_utc(), iso_utc(), READING)
        self.written_at: float | None = None
        self.embedding_started: float | None = None

    def start(self, sources: list[str]) -> None:
        self._set(True, sources=sources)

    def reading(self, source: str, done: int, total: int) -> None:
        self._set(done >= total, phase=READING, source=source, pages_done=done, pages_total=total)

    def published(self, version: int) -> None:
        self._set(True, published=version)

    def embedding(self, chunks: tuple[int, int], windows_done: int) -> None:
        """`chunks` (done, total) of the chunks the run found without vectors."""
        now = self.clock()
        if self.embedding_started is None:
            self.embedding_started = now
        done, total = chunks
        took = now - self.embedding_started
        rate = windows_done / took if took > 0 and windows_done else 0.0
        per_chunk = windows_done / done if done else 0.0
        windows_total = windows_done + round(per_chunk * (total - done))
        eta = (windows_total - windows_done) / rate if rate else None
        self._set(
            done >= total or not done,
            phase=EMBEDDING,
            chunks_done=done,
            chunks_total=total,
            windows_done=windows_done,
            windows_total=windows_total,
            windows_per_s=round(rate, 1),
            eta_s=None if eta is None else round(eta, 1),
        )

    def close(self) -> None:
        if self.data is not None:
            with contextlib.suppress(OSError):
                clear_progress(self.data, self.pid)

    def _set(self, force: bool, **fields) -> None:
        self.state = msgspec.structs.replace(self.state, **fields)
        if self.data is None:
            return
        now = self.clock()
        if not force and self.written_at is not None and now - self.written_at < self.every_s:
            return
        self.written_at = now
        try:
            write_progress(self.data, msgspec.structs.replace(self.state, updated_at=iso_utc()))
        except OSError as exc:  # a full disk: the run says so itself, the progress is a nicety
            log.debug("progress not written: %s", exc)
