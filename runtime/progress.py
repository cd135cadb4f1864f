"""Progress for long operations: a bar on a terminal, nothing in logs or pipes."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    def __init__(self, label: str, total: int, stream: TextIO | None = None) -> None:
        self.label = label
        self.total = max(total, 0)
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty() and self.total > 0
        self.started = time.monotonic()
        self._last_draw = 0.0

    def advance(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        if self.enabled and (now - self._last_draw > 0.1 or self.done >= self.total):
            self._last_draw = now
            self._draw(now)

    def close(self) -> None:
        if self.enabled:
            self._draw(time.monotonic())
            self.stream.write("\n")
            self.stream.flush()

    def _draw(self, now: float) -> None:
        width = 30
        share = min(1.0, self.done / self.total)
        filled = int(width * share)
        rate = self.done / max(now - self.started, 1e-6)
        bar = "#" * filled + "-" * (width - filled)
        self.stream.write(f"\r{self.label} [{bar}] {self.done}/{self.total} ({rate:.0f}/s)")
        self.stream.flush()
