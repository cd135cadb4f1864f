"""What a version computes from its own data at first use and keeps while it is served.

- the identifier vocabulary: every term of the `ident` field, one a line, which literal
  queries scan for terms containing them (adr/0022);
- the terms of section headings, by chunk and by heading text (many sections share a
  heading: "Parameters", "-Path"), bounded so that a long-lived version of a large corpus
  does not come to hold every chunk's;
- the IDF of each WordPiece over the stored token vectors, for MaxSim;
- how many live chunks some entries hold, and how many of them hold a term in a field: the
  statistics BM25 scores an entry's chunks by (lexical.py, adr/0044) and `low_confidence`
  counts a limited caller's words by (confidence.py);
- how many chunks the text index counts, deleted ones included, as Tantivy's BM25 does.

Each is computed once, by whichever search needs it first; concurrent searches wait for it
rather than compute it twice.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Generic, TypeVar

import numpy as np
import tantivy

from docdex.index_format.text import IDENT_FIELD, TextAnalysis, text_schema
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
        self._kept = kept
        self._counts_lock = threading.Lock()
        self._counts: dict[frozenset[str], EntryCounts] = {}
        self._indexed_total: int | None = None

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

    def entry_counts(self, entries: frozenset[str]) -> EntryCounts:
        """The chunk counts of `entries` (empty: none), kept while the version is served."""
        with self._counts_lock:
            counts = self._counts.get(entries)
            if counts is None:
                if len(self._counts) >= MAX_COUNTED_ENTRY_SETS:
                    self._counts.clear()
                counts = EntryCounts(self._searcher, self._analysis, entries, self._kept)
                self._counts[entries] = counts
            return counts

    def indexed_total(self) -> int:
        """How many chunks Tantivy's BM25 counts in the index: deleted ones too, until a
        merge drops them (read once from a score's explanation: no call gives it)."""
        if self._indexed_total is None:
            self._indexed_total = _indexed_total(self._searcher)
        return self._indexed_total

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


MAX_COUNTED_ENTRY_SETS = 256  # entry sets whose counts a version keeps (all forgotten when full)


class EntryCounts:
    """How many live chunks some entries hold, and how many of those hold a term in a
    field: one count query each, remembered (at most `limit` terms, all forgotten when
    full). Deleted chunks are never counted."""

    def __init__(
        self,
        searcher: tantivy.Searcher,
        analysis: TextAnalysis,
        entries: frozenset[str],
        limit: int,
    ) -> None:
        self._searcher, self._schema, self._limit = searcher, analysis.schema(), limit
        self._within = entries_query(entries)
        self._total: int | None = None
        self._holding: dict[tuple[str, str], int] = {}

    @property
    def total(self) -> int:
        if self._total is None:
            self._total = self._count(self._within)
        return self._total

    def holding(self, field: str, term: str) -> int:
        """How many of the chunks hold `term` in `field`."""
        found = self._holding.get((field, term))
        if found is None:
            term_query = tantivy.Query.term_query(self._schema, field, term)
            both = [(tantivy.Occur.Must, q) for q in (term_query, self._within)]
            found = self._count(tantivy.Query.boolean_query(both))
            if len(self._holding) >= self._limit:
                self._holding.clear()
            self._holding[field, term] = found
        return found

    def _count(self, query: tantivy.Query) -> int:
        unscored = tantivy.Query.const_score_query(query, 1.0)  # counted 2-3x sooner
        found = self._searcher.search(unscored, 1, count=True)
        return found.count or 0  # type: ignore[attr-defined]  # in tantivy, not in its stub


def entries_query(entries: frozenset[str]) -> tantivy.Query:
    """The chunks of `entries` (a manifest entry is the `source` field's value; none when
    `entries` is empty)."""
    if not entries:
        return tantivy.Query.empty_query()
    schema = text_schema()
    terms = [
        (
            tantivy.Occur.Should,
            tantivy.Query.term_query(schema, "source", key, index_option="basic"),
        )
        for key in sorted(entries)
    ]
    return tantivy.Query.boolean_query(terms)


def _indexed_total(searcher: tantivy.Searcher) -> int:
    found = searcher.search(tantivy.Query.all_query(), 1).hits
    if not found:
        return 0
    chunk_id = searcher.doc(found[0][1])["chunk_id"][0]
    query = tantivy.Query.term_query(text_schema(), "chunk_id", chunk_id)
    explained = json.loads(query.explain(searcher, found[0][1]).to_json())
    for step in _explanation_steps(explained):
        if step.get("description", "").startswith("N,"):
            return int(step["value"])
    return searcher.num_docs  # an explanation without the count: the live chunks


def _explanation_steps(step: dict) -> Iterator[dict]:
    yield step
    for detail in step.get("details", []):
        yield from _explanation_steps(detail)


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
