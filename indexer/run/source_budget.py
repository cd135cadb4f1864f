"""What one configured source may spend in a run (`SourceBudget`: time, the bytes its pages
include), and the budget of the source the run is indexing now (`Spending`), which the
segment stream checks before each group of texts it embeds."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from docdex.errors import DocdexError
from docdex.indexer.chunking.include_syntax import IncludeBudget


class OverBudget(DocdexError):
    """A source ran past its time budget in a run."""


@dataclass
class SourceBudget:
    """What one configured source may spend in a run: time from its start, checked at each
    file, commit walked and group of texts embedded, and the bytes its pages include."""

    source: str
    timeout_s: float | None
    clock: Callable[[], float]
    includes: IncludeBudget = field(default_factory=IncludeBudget)
    started: float = 0.0

    def __post_init__(self) -> None:
        self.started = self.clock()

    def check(self) -> None:
        if self.timeout_s is not None and self.clock() - self.started > self.timeout_s:
            raise OverBudget(
                f"indexing it took longer than its time budget ({self.timeout_s:g} s: a "
                "source may take half of cycle_timeout_s), so it was stopped and its last "
                f"indexed pages keep serving; `docdex index {self.source}` shows what is "
                "slow, and a larger cycle_timeout_s gives it more time"
            )


@dataclass
class Spending:
    """The budget of the source a run is indexing now (None between sources)."""

    current: SourceBudget | None = None

    def check(self) -> None:
        if self.current is not None:
            self.current.check()
