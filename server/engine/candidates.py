"""A chunk on its way through ranking: what each stage knows of it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from docdex.index_format.records import ChunkRecord

if TYPE_CHECKING:
    from .loaded import Snapshot


@dataclass
class Candidate:
    segment: int  # position in the snapshot's segments
    index: int  # chunk index in that segment
    bm25: float = 0.0
    bm25_rank: int = 0  # 1-based; 0 = not in the BM25 list
    dense: float = 0.0  # best window cosine (computed for every candidate)
    dense_rank: int = 0
    score: float = 0.0
    record: ChunkRecord | None = field(default=None, repr=False, compare=False)

    @property
    def match(self) -> str:
        if self.bm25_rank and self.dense_rank:
            return "both"
        return "bm25" if self.bm25_rank else "dense"

    def chunk(self, snapshot: Snapshot) -> ChunkRecord:
        """The chunk's record, read once per search: the fusion, the rerank, the confidence
        and the hits all read it, and each read is a `pread` and a decode."""
        if self.record is None:
            self.record = snapshot.segments[self.segment].chunks[self.index]
        return self.record
