"""What one indexing run is asked to do (`RunContext`), what it gathers across sources
(`RunState`), and one ref of a source within it (`SourceRun`)."""

from __future__ import annotations

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
from docdex.indexer.sources.refs import FoundRef, RefFamily

from .passage_model import LazyModel
from .report import SourceReport
from .stream import SegmentStream
from .textindex import TextIndexBuilder, text_outdated

Dirty = dict[str, set[str] | None]  # source -> paths changed in its working tree (None: all)


class IndexingError(DocdexError):
    """A run cannot start (bad configuration, unknown source)."""


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

    @property
    def text_outdated(self) -> bool:
        """The previous text index is of an older analysis: rebuilt from every source."""
        return text_outdated(self.previous)

    def dirty_paths(self, source: str) -> set[str] | None:
        return None if self.dirty is None else self.dirty.get(source, set())


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


@dataclass
class SourceRun:
    """One ref of a source within a run (its default ref, or another of its `refs`): its
    configuration, what the previous version holds of it, and the report the run fills in."""

    config: SourceConfig
    key: str  # its manifest entry: the source's name, or "source@ref" (index-format/refs.py)
    ref: FoundRef | None  # None: the default ref (the branch, or a checkout's working tree)
    family: RefFamily  # the source's entries in the previous version
    previous: SourceState | None
    config_hash: str  # of the settings that decide which files are read, and how
    report: SourceReport

    @property
    def name(self) -> str:
        return self.key

    @property
    def old_pages(self) -> dict[str, StoredPage]:
        """path -> page of the previous version, read at the first use (a ref that did not
        move never reads its page table)."""
        return self.family.pages_of(self.key) if self.key in self.family.states else {}
