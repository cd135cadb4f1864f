"""Pure helpers of the embedder: token windows, batches, padding and pooling (numpy only,
so the reading side can import them without loading onnxruntime or the tokenizer)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

CLS_ID = 101
SEP_ID = 102
PAD_ID = 0


# --- pure helpers ---------------------------------------------------------------------------


def embed_input(headings: list[str], embed_text: str) -> str:
    """The text embedded for a chunk: the breadcrumb on the first line, then the text."""
    crumb = " › ".join(h.strip() for h in headings if h.strip())
    return "\n".join(part for part in (crumb, embed_text.strip()) if part)


def split_windows(ids: list[int], size: int, overlap: int) -> list[list[int]]:
    """Windows of at most `size` content ids, consecutive ones sharing `overlap` ids."""
    return [[CLS_ID, *part, SEP_ID] for part in split_content(ids, size, overlap)]


def split_content(ids: list[int], size: int, overlap: int) -> list[list[int]]:
    """`ids` cut into parts of at most `size`, consecutive ones sharing `overlap` ids (one
    part, maybe empty, for a short text)."""
    stride = size - overlap
    out: list[list[int]] = []
    start = 0
    while True:
        out.append(ids[start : start + size])
        if start + size >= len(ids):
            return out
        start += stride


def length_batches(
    lengths: np.ndarray, budget: int, max_batch: int, max_padding: float
) -> list[np.ndarray]:
    """Window indexes grouped by length: batch*maxlen <= budget, padding <= max_padding."""
    order = np.argsort(lengths, kind="stable")
    groups: list[np.ndarray] = []
    i, n = 0, len(order)
    while i < n:
        j, used = i + 1, int(lengths[order[i]])
        while j < n and j - i < max_batch:
            # lengths ascend along `order`, so the candidate's length is the padded width
            width, count = int(lengths[order[j]]), j - i + 1
            padded = count * width
            if padded > budget or padded - (used + width) > max_padding * padded:
                break
            used += width
            j += 1
        groups.append(order[i:j])
        i = j
    return groups


def embed_batched(
    windows: list[list[int]],
    dim: int,
    run: Callable[[list[list[int]]], np.ndarray],
    batching: tuple[int, int, float],
    progress: Callable[[int], None] | None = None,
) -> np.ndarray:
    """(n, dim) float32 vectors of `windows`, in input order: `run` embeds one batch of
    windows of nearly equal length (`batching`: the token budget, the largest batch and the
    padding share of `length_batches`); `progress` hears how many windows each batch did."""
    out = np.empty((len(windows), dim), dtype=np.float32)
    if not windows:
        return out
    lengths = np.fromiter((len(w) for w in windows), dtype=np.int64, count=len(windows))
    for group in length_batches(lengths, *batching):
        out[group] = run([windows[k] for k in group])
        if progress is not None:
            progress(len(group))
    return out


def pad_windows(windows: list[list[int]], pad_id: int = PAD_ID) -> tuple[np.ndarray, np.ndarray]:
    width = max(len(w) for w in windows)
    ids = np.full((len(windows), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(windows), width), dtype=np.int64)
    for row, w in enumerate(windows):
        ids[row, : len(w)] = w
        mask[row, : len(w)] = 1
    return ids, mask


def mean_pooled(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Unit vectors of the attention-masked mean of each window's hidden states."""
    return unit_rows(masked_mean(hidden, mask))


def masked_mean(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The attention-masked mean of each window's hidden states."""
    m = mask[:, :, None].astype(np.float32)
    return (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1.0)


def unit_rows(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return (x / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)
