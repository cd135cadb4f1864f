"""Late-interaction token vectors on disk: packed by the indexer, read by the MaxSim reranker.

Per dense segment, beside vectors.npy (all optional; a segment without them is simply not
reranked by MaxSim):

    tokvecs.npy    int8    (T, D)        token vectors, projected to D dims, quantised per row
    tokscale.npy   float16 (T,)          per-row scale: vector ~= tokvecs[t] * tokscale[t]
    tokids.npy     uint16  (T,)          the WordPiece id of each row (for IDF weights)
    tokoffsets.npy int64   (chunks + 1,) chunk i owns rows tokoffsets[i] .. tokoffsets[i+1]-1
    tokproj.npy    float32 (dim, D)      orthonormal columns: row = token_vector @ tokproj

Rows are the token vectors the model gives for a chunk's embedded input (docdex.model.
late_interaction: content tokens only, in text order, overlaps stored once). The projection
is a PCA basis fitted on the segment's own token vectors (D = min(TOKEN_DIM, T)), so each
segment carries its own; a chunk moved to another segment has its rows re-projected
(`chunk_tokens`, then a packer of the new segment).
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

FIT_TOKENS = 100_000  # tokens the PCA basis is fitted on, held as float16 until then
TOKEN_DIM = 64  # projected dimension (adr/0006; docs/retrieval.md, "Token vector size")


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


# --- writing ---------------------------------------------------------------------------------


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
        assert self.projection is not None  # _fit sets it
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
