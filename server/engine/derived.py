"""What a version computes from its own data at first use and keeps while it is served.

- the identifier vocabulary: every term of the `ident` field, one a line, which literal
  queries scan for terms containing them (adr/0022);
- the terms of section headings, by chunk and by heading text (many sections share a
  heading: "Parameters", "-Path"), bounded so that a long-lived version of a large corpus
  does not come to hold every chunk's;
- the IDF of each WordPiece over the stored token vectors, for MaxSim.

Each is computed once, by whichever search needs it first; concurrent searches wait for it
rather than compute it twice.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar

import numpy as np
import tantivy

from docdex.index_format.text import IDENT_FIELD, TextAnalysis
from docdex.index_format.token_vectors import TokenArrays

Key = TypeVar("Key", bound=Hashable)


class BoundedMemo(Generic[Key]):
    """Terms remembered by key, at most `limit` of them (all forgotten when full)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._terms: dict[Key, list[str]] = {}

    def get(self, key: Key, compute: Callable[[], list[str]]) -> list[str]:
        terms = self._terms.get(key)
        if terms is None:
            terms = compute()
            if len(self._terms) >= self.limit:
                self._terms.clear()
            self._terms[key] = terms
        return terms

    def __len__(self) -> int:
        return len(self._terms)


class Derived:
    """The derived data of one version (see the module's docstring)."""

    def __init__(self, searcher: tantivy.Searcher, analysis: TextAnalysis, kept: int) -> None:
        self._searcher = searcher
        self._analysis = analysis
        self._vocabulary_lock = threading.Lock()
        self._idf_lock = threading.Lock()
        self._vocabulary: str | None = None
        self._token_idf: np.ndarray | None = None
        self.section_terms: BoundedMemo[tuple[int, int]] = BoundedMemo(kept)
        self.heading_terms: BoundedMemo[str] = BoundedMemo(kept)

    @property
    def vocabulary_ready(self) -> bool:
        return self._vocabulary is not None

    @property
    def token_idf_ready(self) -> bool:
        return self._token_idf is not None

    def identifier_vocabulary(self) -> str:
        """Every term of the `ident` field, one a line, with a newline at both ends."""
        with self._vocabulary_lock:
            if self._vocabulary is None:
                terms = self._searcher.terms_with_prefix(IDENT_FIELD, "")
                self._vocabulary = "\n".join(["", *(term for term, _ in terms), ""])
            return self._vocabulary

    def heading_terms_of(self, heading: str) -> list[str]:
        return self.heading_terms.get(heading, lambda: self._analysis.terms(heading))

    def token_idf(
        self, tokens: Sequence[tuple[TokenArrays | None, np.ndarray]], skip: np.ndarray
    ) -> np.ndarray:
        """Per WordPiece id: log(1 + N / df) over the live chunks' stored tokens (0 for
        skipped tokens). `tokens`: each segment's token arrays and live chunks."""
        with self._idf_lock:
            if self._token_idf is None:
                self._token_idf = _idf(tokens, skip)
            return self._token_idf


def _idf(tokens: Sequence[tuple[TokenArrays | None, np.ndarray]], skip: np.ndarray) -> np.ndarray:
    vocab = len(skip)
    df = np.zeros(vocab, dtype=np.int64)
    chunks = 0
    for arrays, live in tokens:
        if arrays is None:
            continue
        owner = np.repeat(np.arange(len(arrays.offsets) - 1), np.diff(arrays.offsets))
        ids = np.asarray(arrays.ids, dtype=np.int64)
        alive = live[owner]
        pairs = np.unique(owner[alive] * vocab + ids[alive])
        df += np.bincount(pairs % vocab, minlength=vocab)[:vocab]
        chunks += int(live.sum())
    idf = np.log1p(max(chunks, 1) / (1.0 + df))
    idf[skip] = 0.0
    return idf.astype(np.float32)
