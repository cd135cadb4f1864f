"""What one call may spend reading history: commits walked, bytes of page content read and
time. A call checks its `Budget` as it goes; past a bound it stops where it is and its
answer says what it left out (`Budget.spent_note`), it never fails for it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import msgspec

Clock = Callable[[], float]  # seconds, monotonic (time.monotonic; a test passes its own)


class HistoryBounds(msgspec.Struct, frozen=True):
    # commits one call walks at most: the range's commits, a date looked up along a branch
    max_commits: Annotated[int, msgspec.Meta(ge=1)] = 10_000
    # bytes of page versions one call reads to count lines and find changed sections
    max_bytes: Annotated[int, msgspec.Meta(ge=0)] = 64_000_000
    # a page version larger than this is listed without its lines counted (the indexer's
    # max_file_bytes default: what it does not index, this does not diff)
    max_file_bytes: Annotated[int, msgspec.Meta(ge=0)] = 2_000_000
    max_seconds: Annotated[float, msgspec.Meta(gt=0)] = 5.0  # one call's time
    max_sections: Annotated[int, msgspec.Meta(ge=1)] = 20  # changed sections named per page
    max_page_commits: Annotated[int, msgspec.Meta(ge=1)] = 50  # commits listed per page, newest


class Budget:
    """One call's spending against its bounds. Each `spend_*` says whether the call may go
    on; once one says no, every later one does too, and `spent_note` says which bound ran
    out."""

    def __init__(self, bounds: HistoryBounds, clock: Clock) -> None:
        self.bounds = bounds
        self._clock = clock
        self._deadline = clock() + bounds.max_seconds
        self.commits = 0
        self.bytes = 0
        self.spent = ""  # the bound that ran out: "commits", "bytes", "time" ("" = none)

    def spend_commit(self) -> bool:
        self.commits += 1
        return self._within("commits", self.commits <= self.bounds.max_commits)

    def spend_bytes(self, size: int) -> bool:
        self.bytes += size
        return self._within("bytes", self.bytes <= self.bounds.max_bytes)

    def timed_out(self) -> bool:
        return not self._within("time", True)

    def _within(self, bound: str, ok: bool) -> bool:
        if self.spent:
            return False
        if not ok:
            self.spent = bound
        elif self._clock() > self._deadline:
            self.spent = "time"
        return not self.spent

    @property
    def deterministic(self) -> bool:
        """Whether what the call found depends only on its input: no time bound ran out,
        so the same call finds the same and its answer may be kept."""
        return self.spent != "time"

    def spent_note(self, what: str) -> str:
        """A sentence on the bound that ran out, `what` being what was left out."""
        bounds = self.bounds
        why = {
            "commits": f"the walk stopped at {bounds.max_commits:,} commits (max_commits)",
            "bytes": f"{bounds.max_bytes:,} bytes of page content were read (max_bytes)",
            "time": f"the call ran for {bounds.max_seconds:g} s (max_seconds)",
        }[self.spent]
        return f"{why}: {what}"
