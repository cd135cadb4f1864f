"""One row of the chaos campaign's table: what was injected, how often, what was lost."""

import msgspec


class Row(msgspec.Struct):
    scenario: str  # "crash", "disk-full", "damage", "concurrent", "soak", "slow-sockets", ...
    injected: str  # what was injected, in words ("kill -9 during compaction")
    count: int  # how many times
    lost: int  # how many times something was lost / wrong (the goal: 0)
    figures: dict[str, float] = {}  # any measured numbers (failed requests, p99 ms, ...)
    notes: str = ""
