"""Progress for long operations: a bar on a terminal; in logs and pipes, a line every few
seconds (what is done of the total, the rate, and an estimate of the time left)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

BAR_EVERY_S = 0.1
LINE_EVERY_S = 5.0  # a log line this often, at most


class Progress:
    def __init__(
        self,
        label: str,
        total: int,
        stream: TextIO | None = None,
        unit: str = "chunks",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = label
        self.total = max(total, 0)
        self.unit = unit
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        self.bar = self.stream.isatty()
        self.clock = clock
        self.started = clock()
        self._last_shown = self.started

    def advance(self, n: int = 1) -> None:
        self.done += n
        if not self.total:
            return
        now = self.clock()
        every = BAR_EVERY_S if self.bar else LINE_EVERY_S
        if now - self._last_shown >= every or (self.bar and self.done >= self.total):
            self._last_shown = now
            self._show(now)

    def close(self) -> None:
        """The last figure: the bar's end, or (when lines were written) the closing line."""
        if not self.total:
            return
        if self.bar:
            self._show(self.clock())
            self.stream.write("\n")
        elif self._last_shown > self.started:
            self._show(self.clock())
        self.stream.flush()

    def _show(self, now: float) -> None:
        elapsed = max(now - self.started, 1e-6)
        rate = self.done / elapsed
        if self.bar:
            width = 30
            filled = int(width * min(1.0, self.done / self.total))
            bar = "#" * filled + "-" * (width - filled)
            left = f", {_duration(self._left(rate))} left" if self.done < self.total else ""
            self.stream.write(
                f"\r{self.label} [{bar}] {self.done}/{self.total} ({_rate(rate)}/s{left})"
            )
        else:
            left = f", about {_duration(self._left(rate))} left" if self.done < self.total else ""
            self.stream.write(
                f"{self.label}: {self.done:,}/{self.total:,} {self.unit} "
                f"({self.done / self.total:.0%}), {_rate(rate)}/s{left}\n"
            )
        self.stream.flush()

    def _left(self, rate: float) -> float:
        return (self.total - self.done) / rate if rate > 0 else float("inf")


def _rate(rate: float) -> str:
    return f"{rate:,.0f}" if rate >= 10 else f"{rate:.1f}"


def _duration(seconds: float) -> str:
    if seconds == float("inf"):
        return "an unknown time"
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"
