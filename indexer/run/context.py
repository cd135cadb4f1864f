"""The context of one indexing run: what it is asked to do (`RunContext`), what it gathers
across sources (`RunState`), and the errors that stop it (`IndexingError`) or give up on one
of its sources (`SourceAbandoned`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from docdex.errors import DocdexError
from docdex.index_format.config import Settings
from docdex.index_format.layout import DataDir
from docdex.index_format.records import (
    ChunkRef,
    EmbedderInfo,
    IndexedPage,
    Manifest,
    SourceState,
    StoredPage,
)

from .passage_model import LazyModel
from .progress_file import ProgressFile
from .report import SourceReport
from .source_budget import Spending
from .storage.stream import SegmentStream
from .storage.text_index import TextIndexBuilder, TextIndexRef, text_outdated

Dirty = dict[str, set[str] | None]  # source -> paths changed in its working tree (None: all)


class IndexingError(DocdexError):
    """A run cannot start (bad configuration, unknown source)."""


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
    progress: ProgressFile = field(
        default_factory=lambda: ProgressFile(None)
    )  # state/progress.json

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
    # versions published while an entry was still being read, and the last one's text index
    partial_versions: list[int] = field(default_factory=list)
    partial_text: TextIndexRef | None = None

    def remove_page(self, page: IndexedPage) -> None:
        """The page leaves the new version: its chunks leave the text index, are tombstoned
        in their segments, and lend their vectors by content hash."""
        self.deleted_pages.append(page.doc_id)
        self.text.delete_page(page.doc_id)
        for ref in page.refs():
            self.tombstones.setdefault(ref.segment, set()).add(ref.index)
            if ref.has_vectors:
                self.reusable.setdefault(ref.content_hash, ref)
