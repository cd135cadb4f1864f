"""A chunk on its way through ranking: what each stage knows of it."""

from __future__ import annotations

from dataclasses import dataclass, field

from docdex.index_format.records import ChunkRecord

from .loaded import LoadedSegment


@dataclass
class Candidate:
    segment: LoadedSegment
    position: int  # the segment's position in its version
    index: int  # chunk index in that segment
    bm25: float = 0.0
    bm25_rank: int = 0  # 1-based; 0 = not in the BM25 list
    dense: float = 0.0  # best window cosine (computed for every candidate)
    dense_rank: int = 0
    score: float = 0.0
    _record: ChunkRecord | None = field(default=None, repr=False, compare=False)

    @property
    def key(self) -> tuple[int, int]:
        return self.position, self.index

    @property
    def match(self) -> str:
        """Which retriever found it: "bm25", "dense" or "both"."""
        if self.bm25_rank and self.dense_rank:
            return "both"
        return "bm25" if self.bm25_rank else "dense"

    @property
    def chunk(self) -> ChunkRecord:
        """The chunk's record, read once per search: the fusion, the rerank, the confidence
        and the hits all read it, and each read is a `pread` and a decode."""
        if self._record is None:
            self._record = self.segment.chunks[self.index]
        return self._record


def by_score(candidates: list[Candidate]) -> list[Candidate]:
    """Highest score first; ties keep their order."""
    return sorted(candidates, key=lambda c: -c.score)
