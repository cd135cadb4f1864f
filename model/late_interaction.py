"""Late interaction, the model's side: one forward pass gives both a window's pooled vector
and its tokens' vectors, for passages at index time and for a query at search time.

Token rows are the contextual MiniLM output of every content token of a text (the last
hidden state, L2-normalised), in text order; tokens repeated in a window's overlap are kept
once, special and punctuation-only tokens are dropped. How they are stored is the index
format's business (index_format/tokens.py, adr/0006).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .windows import mean_pooled, unit_rows

if TYPE_CHECKING:
    from .embedder import Embedder

Tokens = tuple[np.ndarray, np.ndarray]  # a text's token vectors (n, dim) and WordPiece ids (n,)


def embed_with_tokens(
    embedder: Embedder, texts: list[str], progress: Callable[[int], None] | None = None
) -> tuple[np.ndarray, np.ndarray, list[Tokens]]:
    """Window vectors exactly as `Embedder.embed_texts` makes them (vectors, owner), and per
    text its token vectors (float16 unit rows) and ids (uint16)."""
    windows, owner = embedder.token_windows(texts)
    vectors = np.empty((len(windows), embedder.info.dim), dtype=np.float32)
    rows: list[np.ndarray | None] = [None] * len(windows)
    if windows:
        lengths = np.fromiter((len(w) for w in windows), dtype=np.int64, count=len(windows))
        for group in _token_batches(lengths, embedder.token_budget, embedder.max_batch):
            hidden, mask = embedder.hidden_states([windows[k] for k in group])
            vectors[group] = mean_pooled(hidden, mask)
            for j, k in enumerate(group):
                rows[k] = hidden[j, 1 : len(windows[k]) - 1]
            if progress is not None:
                progress(len(group))
    per_text = _tokens_per_text(windows, owner, rows, len(texts), embedder.info.window_overlap)
    skip = embedder.skip_mask
    return vectors, owner, [_drop_skipped(v, i, skip) for v, i in per_text]


@dataclass
class QueryEncoding:
    """The query's pooled vector and, from the same forward pass, its token vectors."""

    vector: np.ndarray  # (dim,) unit
    tokens: np.ndarray | None  # (n, dim) unit rows of the content tokens
    ids: np.ndarray | None  # (n,) WordPiece ids


def encode_query(embedder: Embedder, text: str, with_tokens: bool) -> QueryEncoding:
    """One model run gives both what dense retrieval and MaxSim need (the embedder's
    `embed_query` and `token_vectors` would run it twice)."""
    if not with_tokens:
        return QueryEncoding(embedder.embed_query(text), None, None)
    window = embedder.first_window(text)
    hidden, _ = embedder.hidden_states([window])
    vector = unit_rows(hidden[0].mean(axis=0, keepdims=True))[0]
    return QueryEncoding(
        vector=vector,
        tokens=unit_rows(hidden[0, 1:-1]),
        ids=np.asarray(window[1:-1], dtype=np.int64),
    )


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


def _tokens_per_text(windows, owner, rows, n_texts: int, overlap: int) -> list[Tokens]:
    parts: list[list[tuple[np.ndarray, list[int]]]] = [[] for _ in range(n_texts)]
    for k, window in enumerate(windows):
        text = int(owner[k])
        ids = window[1:-1]
        cut = overlap if parts[text] else 0  # the overlap was stored with the previous window
        parts[text].append((rows[k][cut:], ids[cut:]))
    out = []
    for chunks in parts:
        if not chunks:
            out.append((np.zeros((0, 0), np.float32), np.zeros(0, np.uint16)))
            continue
        vecs = np.concatenate([c[0] for c in chunks])
        ids = np.asarray([i for c in chunks for i in c[1]], dtype=np.uint16)
        out.append((vecs, ids))
    return out


def _drop_skipped(vecs: np.ndarray, ids: np.ndarray, skip: np.ndarray) -> Tokens:
    """Keep content tokens, as float16 unit rows (half the memory until they are packed)."""
    if not len(ids):
        return vecs.astype(np.float16), ids
    keep = ~skip[np.minimum(ids, len(skip) - 1)]
    return unit_rows(vecs[keep]).astype(np.float16), ids[keep]
