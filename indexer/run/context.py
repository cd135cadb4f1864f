"""What one indexing run is asked to do (`RunContext`), what it gathers across sources
(`RunState`), one ref of a source within it (`SourceRun`), and what one source may spend
(`SourceBudget`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from docdex.errors import DocdexError
from docdex.index_format.config import (
    Settings,
    SourceConfig,
)
from docdex.index_format.layout import DataDir
from docdex.index_format.records import (
    ChunkRef,
    EmbedderInfo,
    Manifest,
    SourceState,
    StoredPage,
)
from docdex.indexer.chunking.include_syntax import IncludeBudget
from docdex.indexer.sources.refs import FoundRef, RefFamily

from .passage_model import LazyModel
from .report import SourceReport
from .stream import SegmentStream
from .textindex import TextIndexBuilder, text_outdated

Dirty = dict[str, set[str] | None]  # source -> paths changed in its working tree (None: all)


class IndexingError(DocdexError):
    """A run cannot start (bad configuration, unknown source)."""


class OverBudget(DocdexError):
    """A source ran past its time budget in a run."""


class SourceAbandoned(DocdexError):
    """A source failed after it began to change what the run publishes (old pages removed,
    new ones streamed): the run throws its work away and starts again without the source,
    which keeps its last good pages."""

    def __init__(self, source: str, error: str) -> None:
        super().__init__(f"{source}: {error}")
        self.source = source
        self.error = error


@dataclass(frozen=True)
class RunContext:
    """What a run is asked to do, and with what: fixed from its start to its end."""

    data: DataDir
    settings: Settings
    previous: Manifest | None  # the version the run starts from
    version: int  # the version it publishes
    model: EmbedderInfo  # the model's identity: content hashes and the manifest record it
    passage_model: LazyModel  # the model itself, loaded at its first use
    rebuild: bool  # re-read every file (asked for, first run, or other chunker settings)
    worktree: bool = False  # checkouts: index the working tree instead of the branch head
    dirty: Dirty | None = None  # per source, paths to look at (None: all)
    damaged_segments: frozenset[str] = frozenset()  # segments whose vectors are not copied
    damaged_versions: tuple[int, ...] = ()  # dropped once this run has published
    salvaged: bool = False  # started from a damaged version: every source is read again
    salvaged_vectors: dict[str, ChunkRef] = field(default_factory=dict)  # its intact chunks
    source_timeout_s: float | None = None  # what one source may take (None: no limit)
    clock: Callable[[], float] = time.monotonic

    @property
    def model_changed(self) -> bool:
        """The version the run starts from was embedded by another model: every source is
        embedded again, and none may keep its old pages."""
        return self.previous is not None and self.previous.embedder.id != self.model.id

    @property
    def text_outdated(self) -> bool:
        """The previous text index is of an older analysis: rebuilt from every source."""
        return text_outdated(self.previous)

    def dirty_paths(self, source: str) -> set[str] | None:
        return None if self.dirty is None else self.dirty.get(source, set())


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


@dataclass
class RunState:
    """What the run gathers across sources: tombstones and reusable vectors of removed
    pages, the pages it keeps, the new sources' states, and where its new pages go (the
    stream of dense segments and the text index, whose writer opens at its first use)."""

    text: TextIndexBuilder
    stream: SegmentStream
    tombstones: dict[str, set[int]]
    reusable: dict[str, ChunkRef]  # content hash -> a chunk whose vectors may be copied
    states: dict[str, SourceState]
    deleted_pages: list[str] = field(default_factory=list)
    kept_pages: dict[str, list[StoredPage]] = field(default_factory=dict)  # touched sources
    reports: list[SourceReport] = field(default_factory=list)
    removed_sources: list[str] = field(default_factory=list)
    compacted: bool = False
    salvaged: bool = False  # nothing of the old segments stays live (recovery.py)
    spending: Spending = field(default_factory=Spending)
    given_up: dict[str, str] = field(default_factory=dict)  # source -> why: not indexed again


@dataclass
class SourceRun:
    """One ref of a source within a run (its default ref, or another of its `refs`): its
    configuration, what the previous version holds of it, and the report the run fills in."""

    config: SourceConfig
    key: str  # its manifest entry: the source's name, or "source@ref" (index-format/ref_names.py)
    ref: FoundRef | None  # None: the default ref (the branch, or a checkout's working tree)
    family: RefFamily  # the source's entries in the previous version
    previous: SourceState | None
    config_hash: str  # of the settings that decide which files are read, and how
    report: SourceReport
    budget: SourceBudget  # shared by the source's refs

    @property
    def name(self) -> str:
        return self.key

    @property
    def old_pages(self) -> dict[str, StoredPage]:
        """path -> page of the previous version, read at the first use (a ref that did not
        move never reads its page table)."""
        return self.family.pages_of(self.key) if self.key in self.family.states else {}
