"""Rerankers of the fused head of the candidate list, selected by name.

- `none`: keep the fused order.
- `maxsim`: late interaction. IDF-weighted MaxSim of the query's MiniLM token vectors
  against each candidate's token vectors, stored at index time (index_format/tokens.py);
  added to the fused score with weight `MAXSIM_WEIGHT`.
- `cross-encoder`: any local ONNX cross-encoder directory (model.onnx + tokenizer.json;
  inputs input_ids, attention_mask[, token_type_ids]; output logits): its logit replaces
  the fused score of the head (the head is still returned before the tail).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from docdex.index_format.tokens import TokenArrays
from docdex.model.late_interaction import QueryEncoding, encode_query

from .candidates import Candidate
from .loaded import Snapshot

MAXSIM_WEIGHT = 2.0  # chosen in docs/retrieval.md, "MaxSim weight" (adr/0004)


class RerankerError(ValueError):
    """A reranker cannot be built from what was configured."""


class Reranker(Protocol):
    name: str
    needs_tokens: bool  # wants the query's token vectors in `encoding`

    def rerank(
        self,
        snapshot: Snapshot,
        embedder,
        query: str,
        candidates: list[Candidate],
        encoding: QueryEncoding | None = None,
    ) -> None:
        """Set `score` of every candidate (the caller sorts)."""


def resolve_reranker(reranker: Reranker | str | None, snapshot: Snapshot) -> Reranker | None:
    """A reranker object from a name; "default" is MaxSim when the index has token vectors."""
    if reranker is None or not isinstance(reranker, str):
        return reranker
    if reranker == "none":
        return None
    if reranker == "default":
        return _MAXSIM if has_token_vectors(snapshot) else None
    if reranker == "maxsim":
        return _MAXSIM
    if reranker.startswith("cross-encoder:"):
        return CrossEncoderReranker.cached(reranker.split(":", 1)[1])
    raise RerankerError(
        f"unknown reranker {reranker!r}; choose one of: default, none, maxsim, "
        "cross-encoder:/path/to/model-dir"
    )


def has_token_vectors(snapshot: Snapshot) -> bool:
    return bool(snapshot.segments) and all(
        s.tokens is not None for s in snapshot.segments if s.live_row_count
    )


# --- MaxSim ---------------------------------------------------------------------------------


@dataclass
class QueryTokens:
    vectors: np.ndarray  # (n, dim) unit rows
    weights: np.ndarray  # (n,) IDF weights, 0 for punctuation


class MaxSimReranker:
    name = "maxsim"
    needs_tokens = True

    def __init__(self, weight: float = MAXSIM_WEIGHT) -> None:
        self.weight = weight

    def rerank(
        self,
        snapshot: Snapshot,
        embedder,
        query: str,
        candidates: list[Candidate],
        encoding: QueryEncoding | None = None,
    ) -> None:
        if encoding is None or encoding.tokens is None:
            encoding = encode_query(embedder, query, with_tokens=True)
        tokens = query_tokens(snapshot, embedder, encoding)
        if tokens is None:
            return
        projected: dict[int, np.ndarray] = {}
        for c in candidates:
            arrays = snapshot.segments[c.segment].tokens
            if arrays is None:
                continue
            if c.segment not in projected:
                projected[c.segment] = tokens.vectors @ arrays.projection
            c.score += self.weight * maxsim(projected[c.segment], tokens.weights, arrays, c.index)


def maxsim(qp: np.ndarray, weights: np.ndarray, arrays: TokenArrays, index: int) -> float:
    """Weighted mean over query tokens of their best similarity with the chunk's tokens."""
    doc = arrays.dequantised(index)
    if not len(doc):
        return 0.0
    best = (qp @ doc.T).max(axis=1)
    return float(weights @ best / weights.sum())


def query_tokens(snapshot: Snapshot, embedder, encoding: QueryEncoding) -> QueryTokens | None:
    ids, vectors = encoding.ids, encoding.tokens
    n = min(len(ids), len(vectors))
    if n == 0:
        return None
    ids, vectors = ids[:n], vectors[:n]
    weights = token_idf(snapshot, embedder)[ids]
    if weights.sum() <= 0:
        return None
    return QueryTokens(vectors=vectors, weights=weights)


_idf_lock = threading.Lock()


def token_idf(snapshot: Snapshot, embedder) -> np.ndarray:
    """Per WordPiece id: log(1 + N / df) over the live chunks' stored tokens (0 for skipped
    tokens). Computed once per snapshot."""
    cached = snapshot.cache.get("token_idf")
    if cached is not None:
        return cached
    with _idf_lock:
        if "token_idf" not in snapshot.cache:
            snapshot.cache["token_idf"] = _compute_idf(snapshot, embedder.skip_mask)
        return snapshot.cache["token_idf"]


def _compute_idf(snapshot: Snapshot, skip: np.ndarray) -> np.ndarray:
    vocab = len(skip)
    df = np.zeros(vocab, dtype=np.int64)
    chunks = 0
    for seg in snapshot.segments:
        arrays = seg.tokens
        if arrays is None:
            continue
        owner = np.repeat(np.arange(len(arrays.offsets) - 1), np.diff(arrays.offsets))
        ids = np.asarray(arrays.ids, dtype=np.int64)
        live = seg.live[owner]
        pairs = np.unique(owner[live] * vocab + ids[live])
        df += np.bincount(pairs % vocab, minlength=vocab)[:vocab]
        chunks += int(seg.live.sum())
    idf = np.log1p(max(chunks, 1) / (1.0 + df))
    idf[skip] = 0.0
    return idf.astype(np.float32)


_MAXSIM = MaxSimReranker()


# --- cross-encoder --------------------------------------------------------------------------


class CrossEncoderReranker:
    """A local ONNX cross-encoder; scores (query, chunk text) pairs in one batch."""

    name = "cross-encoder"
    needs_tokens = False
    max_length = 512
    _cache: dict[str, CrossEncoderReranker] = {}
    _cache_lock = threading.Lock()

    def __init__(self, session, tokenizer, model_dir: Path) -> None:
        self.session = session
        self.tokenizer = tokenizer
        self.model_dir = model_dir
        self.inputs = {i.name for i in session.get_inputs()}
        self.output = session.get_outputs()[0].name

    @classmethod
    def load(cls, model_dir: str | Path, threads: int = 1) -> CrossEncoderReranker:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        path = Path(model_dir).expanduser()
        for name in ("model.onnx", "tokenizer.json"):
            if not (path / name).is_file():
                raise RerankerError(
                    f"cross-encoder directory {path} has no {name}; it needs model.onnx "
                    "and tokenizer.json"
                )
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            session = ort.InferenceSession(
                str(path / "model.onnx"), sess_options=opts, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises several unrelated types
            raise RerankerError(f"cannot load cross-encoder {path}/model.onnx: {exc}") from None
        tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        tokenizer.enable_truncation(cls.max_length)
        tokenizer.enable_padding()
        reranker = cls(session, tokenizer, path)
        missing = {"input_ids", "attention_mask"} - reranker.inputs
        if missing:
            raise RerankerError(f"cross-encoder {path} lacks input(s) {', '.join(sorted(missing))}")
        return reranker

    @classmethod
    def cached(cls, model_dir: str) -> CrossEncoderReranker:
        with cls._cache_lock:
            if model_dir not in cls._cache:
                cls._cache[model_dir] = cls.load(model_dir)
            return cls._cache[model_dir]

    def scores(self, query: str, passages: list[str]) -> np.ndarray:
        if not passages:
            return np.zeros(0, dtype=np.float32)
        encodings = self.tokenizer.encode_batch([(query, p) for p in passages])
        feeds = {
            "input_ids": np.asarray([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.asarray([e.attention_mask for e in encodings], dtype=np.int64),
        }
        if "token_type_ids" in self.inputs:
            feeds["token_type_ids"] = np.asarray([e.type_ids for e in encodings], dtype=np.int64)
        (logits,) = self.session.run([self.output], feeds)
        logits = np.asarray(logits, dtype=np.float32).reshape(len(passages), -1)
        return logits[:, -1]  # one logit, or the "relevant" class of two

    def rerank(
        self,
        snapshot: Snapshot,
        embedder,
        query: str,
        candidates: list[Candidate],
        encoding: QueryEncoding | None = None,
    ) -> None:
        passages = []
        for c in candidates:
            chunk = c.chunk(snapshot)
            passages.append(" › ".join(chunk.headings) + "\n" + chunk.text)
        # The model's logit is the head's score (a sigmoid would tie confident pairs).
        for c, s in zip(candidates, self.scores(query, passages), strict=True):
            c.score = float(s)
