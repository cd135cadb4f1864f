"""Late interaction, the model's side: one forward pass gives both a window's pooled vector
and its tokens' vectors, for passages at index time and for a query at search time.

Token rows are the contextual MiniLM output of every content token of a text (the last
hidden state, L2-normalised), in text order; tokens repeated in a window's overlap are kept
once, special and punctuation-only tokens are dropped. How they are stored is the index
format's business (index_format/token_vectors.py, adr/0006).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import numpy as np

from .windows import mean_pooled, unit_rows

if TYPE_CHECKING:
    from .embedder import Embedder
    from .protocol import TextEmbedder

Tokens = tuple[np.ndarray, np.ndarray]  # a text's token vectors (n, dim) and WordPiece ids (n,)


def embed_with_tokens(
    embedder: Embedder, texts: list[str], progress: Callable[[int], None] | None = None
) -> tuple[np.ndarray, np.ndarray, list[Tokens]]:
    """Window vectors exactly as `Embedder.embed_texts` makes them (vectors, owner), and per
    text its token vectors (float16 unit rows) and ids (uint16). Each batch's rows are
    reduced to their content tokens as float16 at once, so no batch's hidden states outlive
    it (they would otherwise stay referenced until the whole group of texts is packed)."""
    windows, owner = embedder.token_windows(texts)
    vectors = np.empty((len(windows), embedder.info.dim), dtype=np.float32)
    rows: list[Tokens] = []
    if windows:
        rows = [_EMPTY] * len(windows)
        cuts = _overlap_cuts(owner, embedder.info.window_overlap)
        skip = embedder.skip_mask
        lengths = np.fromiter((len(w) for w in windows), dtype=np.int64, count=len(windows))
        for group in _token_batches(lengths, embedder.token_budget, embedder.max_batch):
            hidden, mask = embedder.hidden_states([windows[k] for k in group])
            vectors[group] = mean_pooled(hidden, mask)
            for j, k in enumerate(group):
                start, end = 1 + cuts[k], len(windows[k]) - 1
                ids = np.asarray(windows[k][start:end], dtype=np.uint16)
                rows[k] = _content_rows(hidden[j, start:end], ids, skip)
            if progress is not None:
                progress(len(group))
    return vectors, owner, _tokens_per_text(owner, rows, len(texts))


_EMPTY: Tokens = (np.zeros((0, 0), np.float16), np.zeros(0, np.uint16))


def _overlap_cuts(owner: np.ndarray, overlap: int) -> list[int]:
    """Per window, how many leading tokens its text's previous window already stored."""
    seen: set[int] = set()
    cuts = []
    for text in owner.tolist():
        cuts.append(overlap if text in seen else 0)
        seen.add(text)
    return cuts


@dataclass
class QueryEncoding:
    """The query's pooled vector and, from the same forward pass, its token vectors."""

    vector: np.ndarray  # (dim,) unit
    tokens: np.ndarray | None  # (n, dim) unit rows of the content tokens
    ids: np.ndarray | None  # (n,) WordPiece ids


def encode_query(embedder: TextEmbedder, text: str, with_tokens: bool) -> QueryEncoding:
    """One model run gives both what dense retrieval and MaxSim need (the embedder's
    `embed_query` and `token_vectors` would run it twice). Only the shipped model has
    token vectors: another gives its query vector alone."""
    if not with_tokens or not has_tokens(embedder):
        return QueryEncoding(embedder.embed_query(text), None, None)
    embedder = cast("Embedder", embedder)
    window = embedder.first_window(text)
    hidden, _ = embedder.hidden_states([window])
    vector = unit_rows(hidden[0].mean(axis=0, keepdims=True))[0]
    return QueryEncoding(
        vector=vector,
        tokens=unit_rows(hidden[0, 1:-1]),
        ids=np.asarray(window[1:-1], dtype=np.int64),
    )


def has_tokens(embedder: object) -> bool:
    """Whether `embedder` gives token vectors (the shipped model's `Embedder`), told
    without importing the model runtime."""
    return callable(getattr(embedder, "hidden_states", None))


def _token_batches(lengths: np.ndarray, budget: int, max_batch: int) -> list[np.ndarray]:
    """Window indexes sorted by length, grouped so batch size * longest <= budget."""
    order = np.argsort(lengths, kind="stable")
    groups, start = [], 0
    for end in range(1, len(order) + 1):
        size = end - start
        if end == len(order) or size >= max_batch or (size + 1) * lengths[order[end]] > budget:
            groups.append(order[start:end])
            start = end
    return groups


def _tokens_per_text(owner: np.ndarray, rows: list[Tokens], n_texts: int) -> list[Tokens]:
    parts: list[list[Tokens]] = [[] for _ in range(n_texts)]
    for text, part in zip(owner.tolist(), rows, strict=True):
        parts[text].append(part)
    return [
        (np.concatenate([v for v, _ in p]), np.concatenate([i for _, i in p])) if p else _EMPTY
        for p in parts
    ]


def _content_rows(vecs: np.ndarray, ids: np.ndarray, skip: np.ndarray) -> Tokens:
    """Keep content tokens, as float16 unit rows (half the memory until they are packed)."""
    if not len(ids):
        return vecs.astype(np.float16), ids
    keep = ~skip[np.minimum(ids, len(skip) - 1)]
    return unit_rows(vecs[keep]).astype(np.float16), ids[keep]
