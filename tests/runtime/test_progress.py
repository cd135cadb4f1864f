"""Long work shows progress (runtime/progress.py): a bar on a terminal, and in logs and pipes
a line every few seconds with what is done, the rate and the time left. The clock is
injected, so nothing here depends on the machine's speed."""

from __future__ import annotations

import io

from docdex.runtime.progress import LINE_EVERY_S, Progress


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_log_gets_a_line_every_few_seconds_with_the_time_left():
    log, clock = io.StringIO(), Clock()
    progress = Progress("embedding chunks", 1_000, log, clock=clock)
    for _ in range(10):  # 100 chunks a second
        clock.now += 1.0
        progress.advance(100)
    progress.close()
    lines = log.getvalue().splitlines()
    assert len(lines) == 10 // int(LINE_EVERY_S) + 1  # at 5 s, at 10 s, and the closing one
    assert lines[0] == "embedding chunks: 500/1,000 chunks (50%), 100/s, about 5 s left"
    assert lines[-1] == "embedding chunks: 1,000/1,000 chunks (100%), 100/s"
    assert "\r" not in log.getvalue()


def test_short_work_writes_no_line_to_a_log():
    log, clock = io.StringIO(), Clock()
    progress = Progress("embedding chunks", 10, log, clock=clock)
    clock.now += 1.0
    progress.advance(10)
    progress.close()
    assert log.getvalue() == ""


def test_a_terminal_gets_a_bar_with_the_time_left():
    terminal, clock = Terminal(), Clock()
    progress = Progress("embedding chunks", 600, terminal, clock=clock)
    clock.now += 60.0
    progress.advance(300)
    assert terminal.getvalue().endswith("300/600 (5.0/s, 1 min 00 s left)")
    clock.now += 60.0
    progress.advance(300)
    progress.close()
    assert terminal.getvalue().endswith("] 600/600 (5.0/s)\n")
