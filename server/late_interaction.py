"""Late-interaction token vectors: made at index time, read by the MaxSim reranker.

Per dense segment, beside vectors.npy (all optional; a segment without them is simply not
reranked by MaxSim):

    tokvecs.npy    int8    (T, D)        token vectors, projected to D dims, quantised per row
    tokscale.npy   float16 (T,)          per-row scale: vector ~= tokvecs[t] * tokscale[t]
    tokids.npy     uint16  (T,)          the WordPiece id of each row (for IDF weights)
    tokoffsets.npy int64   (chunks + 1,) chunk i owns rows tokoffsets[i] .. tokoffsets[i+1]-1
    tokproj.npy    float32 (dim, D)      orthonormal columns: row = token_vector @ tokproj

Rows are the contextual MiniLM output of every content token of a chunk's embedded input
(the 384-d last hidden state, L2-normalised), in text order; tokens repeated in a window's
overlap are stored once, special and punctuation-only tokens are not stored. The projection
is a PCA basis fitted on the segment's own token vectors (D = min(TOKEN_DIM, T)), so each
segment carries its own; moving rows to another segment re-projects them (`reproject`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

TOKVECS_FILE = "tokvecs.npy"
TOKSCALE_FILE = "tokscale.npy"
TOKIDS_FILE = "tokids.npy"
TOKOFFSETS_FILE = "tokoffsets.npy"
TOKPROJ_FILE = "tokproj.npy"
TOKEN_FILES = (TOKVECS_FILE, TOKSCALE_FILE, TOKIDS_FILE, TOKOFFSETS_FILE, TOKPROJ_FILE)

FIT_TOKENS = 100_000  # tokens the PCA basis is fitted on (77 MB of float16 at most)
TOKEN_DIM = 64  # projected dimension (docs/retrieval.md: 384 -> 64 costs < 1.5 points)


@dataclass
class TokenArrays:
    """The arrays of one segment's token vectors, as written to and read from disk."""

    vectors: np.ndarray  # int8 (T, D)
    scales: np.ndarray  # float16 (T,)
    ids: np.ndarray  # uint16 (T,)
    offsets: np.ndarray  # int64 (chunks + 1,)
    projection: np.ndarray  # float32 (dim, D)

    def chunk_rows(self, index: int) -> slice:
        return slice(int(self.offsets[index]), int(self.offsets[index + 1]))

    def dequantised(self, index: int) -> np.ndarray:
        """(n, D) float32 projected token vectors of chunk `index`."""
        rows = self.chunk_rows(index)
        vecs = np.asarray(self.vectors[rows], dtype=np.float32)
        return vecs * np.asarray(self.scales[rows], dtype=np.float32)[:, None]


# Kept for callers that think of the reading side by this name.
TokenVectors = TokenArrays


# --- writing (the indexer calls these) ------------------------------------------------------


def skip_ids(tokenizer) -> np.ndarray:
    """Bool mask over the vocabulary: special and punctuation-only WordPieces."""
    vocab = tokenizer.get_vocab()
    mask = np.zeros(max(vocab.values()) + 1, dtype=bool)
    for piece, i in vocab.items():
        bare = piece.removeprefix("##")
        if (piece.startswith("[") and piece.endswith("]")) or not any(c.isalnum() for c in bare):
            mask[i] = True
    return mask


def embed_with_tokens(
    embedder, texts: list[str], progress=None
) -> tuple[np.ndarray, np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """One forward pass for both products: window vectors exactly as `embed_texts` makes
    them (vectors, owner), and per text its (token vectors float32 (n, dim), ids uint16)."""
    windows, owner = embedder.token_windows(texts)
    dim = embedder.info.dim
    vectors = np.empty((len(windows), dim), dtype=np.float32)
    rows: list[np.ndarray | None] = [None] * len(windows)
    if windows:
        lengths = np.fromiter((len(w) for w in windows), dtype=np.int64, count=len(windows))
        for group in _length_batches(lengths, embedder.token_budget, embedder.max_batch):
            hidden, mask = embedder._hidden([windows[k] for k in group])
            m = mask[:, :, None].astype(np.float32)
            pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1.0)
            vectors[group] = _unit(pooled)
            for j, k in enumerate(group):
                rows[k] = hidden[j, 1 : len(windows[k]) - 1]
            if progress is not None:
                progress(len(group))
    skip = skip_ids(embedder._tokenizer)
    per_text = _tokens_per_text(windows, owner, rows, len(texts), embedder.info.window_overlap)
    return vectors, owner, [_drop_skipped(v, i, skip) for v, i in per_text]


def _length_batches(lengths: np.ndarray, budget: int, max_batch: int) -> list[np.ndarray]:
    """Window indexes sorted by length, grouped so batch size * longest <= budget."""
    order = np.argsort(lengths, kind="stable")
    groups, start = [], 0
    for end in range(1, len(order) + 1):
        size = end - start
        if end == len(order) or size >= max_batch or (size + 1) * lengths[order[end]] > budget:
            groups.append(order[start:end])
            start = end
    return groups


def _tokens_per_text(windows, owner, rows, n_texts: int, overlap: int):
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


def _drop_skipped(vecs: np.ndarray, ids: np.ndarray, skip: np.ndarray):
    """Keep content tokens, as float16 unit rows (half the memory until they are packed)."""
    if not len(ids):
        return vecs.astype(np.float16), ids
    keep = ~skip[np.minimum(ids, len(skip) - 1)]
    return _unit(vecs[keep]).astype(np.float16), ids[keep]


class TokenPacker:
    """Packs a segment's chunks' token vectors in bounded memory: the PCA basis is fitted on
    the first `fit_tokens` tokens (kept as float16 until then); every later chunk is
    projected and quantised as it is added. Add chunks in segment order."""

    def __init__(self, dim: int, token_dim: int = TOKEN_DIM, fit_tokens: int = FIT_TOKENS):
        self.dim, self.token_dim, self.fit_tokens = dim, token_dim, fit_tokens
        self.projection: np.ndarray | None = None
        self.pending: list[np.ndarray] = []  # float16 rows awaiting the basis
        self.pending_rows = 0
        self.blocks: list[tuple[np.ndarray, np.ndarray]] = []  # (int8, scales) packed
        self.ids: list[np.ndarray] = []
        self.counts: list[int] = []

    def add(self, vectors: np.ndarray, ids: np.ndarray) -> None:
        """One chunk: (n, dim) unit token vectors and their (n,) WordPiece ids."""
        n = len(ids)
        self.counts.append(n)
        self.ids.append(np.asarray(ids, dtype=np.uint16))
        if not n:
            return
        if self.projection is not None:
            self.blocks.append(quantise(np.asarray(vectors, np.float32) @ self.projection))
            return
        self.pending.append(np.asarray(vectors, dtype=np.float16))
        self.pending_rows += n
        if self.pending_rows >= self.fit_tokens:
            self._fit()

    def _fit(self) -> None:
        stacked = (
            np.concatenate(self.pending).astype(np.float32)
            if self.pending
            else np.zeros((0, self.dim), np.float32)
        )
        self.projection = pca_basis(stacked, self.token_dim, self.dim)
        if len(stacked):
            self.blocks.append(quantise(stacked @ self.projection))
        self.pending, self.pending_rows = [], 0

    def finish(self) -> TokenArrays:
        if self.projection is None:
            self._fit()
        offsets = np.zeros(len(self.counts) + 1, dtype=np.int64)
        offsets[1:] = np.cumsum(self.counts)
        d = self.projection.shape[1]
        vectors = (
            np.concatenate([b[0] for b in self.blocks])
            if self.blocks
            else np.zeros((0, d), np.int8)
        )
        scales = (
            np.concatenate([b[1] for b in self.blocks]) if self.blocks else np.zeros(0, np.float16)
        )
        ids = np.concatenate(self.ids) if self.ids else np.zeros(0, np.uint16)
        return TokenArrays(vectors, scales, ids, offsets, self.projection)


def token_arrays(
    per_chunk: list[tuple[np.ndarray, np.ndarray]], dim: int, token_dim: int = TOKEN_DIM
) -> TokenArrays:
    """Project (PCA basis fitted here), quantise and pack per-chunk token vectors."""
    packer = TokenPacker(dim, token_dim)
    for vectors, ids in per_chunk:
        packer.add(vectors, ids)
    return packer.finish()


def token_vector_arrays(
    embedder, embed_inputs: list[str], token_dim: int = TOKEN_DIM
) -> TokenArrays:
    """Token arrays for a segment whose chunks have these embedded inputs, in order.

    Prefer `embed_with_tokens` when the window vectors are computed too: same forward pass.
    """
    _, _, per_chunk = embed_with_tokens(embedder, embed_inputs)
    return token_arrays(per_chunk, embedder.info.dim, token_dim)


def pca_basis(x: np.ndarray, token_dim: int, dim: int) -> np.ndarray:
    """(dim, D) orthonormal basis of the top principal directions (uncentred: dot products
    are what MaxSim needs, so the mean direction is kept)."""
    d = min(token_dim, dim)
    if len(x) < 2:
        return np.eye(dim, d, dtype=np.float32)
    gram = (x.T @ x).astype(np.float64)
    _, eigvecs = np.linalg.eigh(gram)
    return np.ascontiguousarray(eigvecs[:, ::-1][:, :d], dtype=np.float32)


def quantise(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 per row: x ~= q * scale."""
    peak = np.abs(x).max(axis=1) if len(x) else np.zeros(0, np.float32)
    scale = np.maximum(peak, 1e-8) / 127.0
    q = np.rint(x / scale[:, None]).clip(-127, 127).astype(np.int8)
    return q, scale.astype(np.float16)


def reproject(arrays: TokenArrays, index: int, projection: np.ndarray) -> np.ndarray:
    """Chunk `index`'s token vectors in another segment's projection (float32, unquantised)."""
    return arrays.dequantised(index) @ arrays.projection.T @ projection


def chunk_tokens(arrays: TokenArrays, index: int) -> tuple[np.ndarray, np.ndarray]:
    """Chunk `index`'s token vectors back in model space (float32 (n, dim)) and its ids: what
    `TokenPacker.add` takes when a chunk moves to a new segment without a model run."""
    rows = arrays.chunk_rows(index)
    return arrays.dequantised(index) @ arrays.projection.T, np.asarray(arrays.ids[rows])


def concat_chunks(
    parts: list[tuple[TokenArrays, int]], dim: int, token_dim: int = TOKEN_DIM
) -> TokenArrays:
    """Token arrays of a new segment made of existing chunks (compaction), in order."""
    packer = TokenPacker(dim, token_dim)
    for arrays, index in parts:
        packer.add(*chunk_tokens(arrays, index))
    return packer.finish()


def write_token_arrays(segment_dir: Path, arrays: TokenArrays) -> None:
    np.save(segment_dir / TOKVECS_FILE, arrays.vectors)
    np.save(segment_dir / TOKSCALE_FILE, arrays.scales)
    np.save(segment_dir / TOKIDS_FILE, arrays.ids)
    np.save(segment_dir / TOKOFFSETS_FILE, arrays.offsets)
    np.save(segment_dir / TOKPROJ_FILE, arrays.projection)


# --- reading --------------------------------------------------------------------------------


def load_token_vectors(segment_dir: Path, chunks: int | None = None) -> TokenArrays | None:
    """The segment's token arrays (memory-mapped), or None when it has none or they do not
    fit its chunk list (`chunks`, when given): a reader never fails over an optional file."""
    if not (segment_dir / TOKOFFSETS_FILE).is_file():
        return None
    try:
        arrays = TokenArrays(
            vectors=np.load(segment_dir / TOKVECS_FILE, mmap_mode="r"),
            scales=np.load(segment_dir / TOKSCALE_FILE, mmap_mode="r"),
            ids=np.load(segment_dir / TOKIDS_FILE, mmap_mode="r"),
            offsets=np.load(segment_dir / TOKOFFSETS_FILE),
            projection=np.load(segment_dir / TOKPROJ_FILE),
        )
    except (OSError, ValueError):
        return None
    rows = len(arrays.vectors)
    if chunks is not None and len(arrays.offsets) != chunks + 1:
        return None
    if int(arrays.offsets[-1]) != rows or len(arrays.ids) != rows or len(arrays.scales) != rows:
        return None
    if arrays.vectors.ndim != 2 or arrays.projection.shape[1:] != arrays.vectors.shape[1:]:
        return None
    return arrays


def _unit(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return (x / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)


# --- the query side -------------------------------------------------------------------------


@dataclass
class QueryEncoding:
    """The query's pooled vector and, from the same forward pass, its token vectors."""

    vector: np.ndarray  # (dim,) unit
    tokens: np.ndarray | None  # (n, dim) unit rows of the content tokens
    ids: np.ndarray | None  # (n,) WordPiece ids


def encode_query(embedder, text: str, with_tokens: bool) -> QueryEncoding:
    """One model run gives both what dense retrieval and MaxSim need (the embedder's
    `embed_query` and `token_vectors` would run it twice)."""
    if not with_tokens:
        return QueryEncoding(embedder.embed_query(text), None, None)
    window = embedder._first_window(text)
    hidden, _ = embedder._hidden([window])
    vector = _unit(hidden[0].mean(axis=0, keepdims=True))[0]
    return QueryEncoding(
        vector=vector,
        tokens=_unit(hidden[0, 1:-1]),
        ids=np.asarray(window[1:-1], dtype=np.int64),
    )
