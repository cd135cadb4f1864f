"""One row of the fault campaign: what was injected, how often, what was lost."""

import msgspec

from bench.summary import Figure


class Row(msgspec.Struct):
    scenario: str  # "crash", "disk-full", "damage", "concurrent", "soak", "cost", ...
    injected: str  # what was injected, in words ("kill -9 during compaction")
    count: int  # how many times
    lost: int  # how many times something was lost / wrong (the goal: 0)
    figures: dict[str, float] = {}  # any measured numbers (failed requests, p99 ms, ...)
    notes: str = ""


def as_figures(rows: list[Row]) -> list[Figure]:
    """The rows as a summary's figures, grouped by what was injected: how many times, how
    many lost (the target: none), then the row's own figures. The notes stay raw."""
    figures = []
    for row in rows:
        figures += [
            Figure(row.injected, "times", row.count, ""),
            Figure(row.injected, "lost", row.lost, "", "== 0", row.lost == 0),
            *(Figure(row.injected, name, value, "") for name, value in row.figures.items()),
        ]
    return figures
