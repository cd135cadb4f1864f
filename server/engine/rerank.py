"""Rerankers of the fused head of the candidate list, selected by name.

- `none`: keep the fused order.
- `maxsim`: late interaction. IDF-weighted MaxSim of the query's MiniLM token vectors
  against each candidate's token vectors, stored at index time (index_format/token_vectors.py);
  added to the fused score with weight `maxsim_weight`.
- `cross-encoder`: any local ONNX cross-encoder directory (model.onnx + tokenizer.json;
  inputs input_ids, attention_mask[, token_type_ids]; output logits): its logit replaces
  the fused score of the head (the head is still returned before the tail).
- `endpoint`: a rerank endpoint named by a `[models.NAME]` table (text-embeddings-inference's
  /rerank, vLLM's and llama.cpp's /v1/rerank): its score replaces the fused score of the
  head, as a cross-encoder's does; when it fails, the head keeps its fused order, and after
  a failure the endpoint rests (searches do not wait on it) for QUERY_COOLDOWN_S.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, cast

import numpy as np

from docdex.errors import DocdexError
from docdex.index_format.model_tables import RerankEndpoint
from docdex.index_format.token_vectors import TokenArrays
from docdex.model.late_interaction import QueryEncoding, encode_query
from docdex.model.model_environment import NO_VARIABLES

from .loaded import LoadedVersion
from .query import QueryContext
from .retrieval import Candidate

if TYPE_CHECKING:
    from tokenizers import Tokenizer

    from docdex.model.embedder import Embedder
    from docdex.model.outage import Outage
    from docdex.model.rerank_endpoint import RemoteReranker

BUILT_IN_RERANKERS = ("default", "none", "maxsim")
RERANKERS = "default, none, maxsim, cross-encoder:/path/to/model-dir"


class RerankerError(DocdexError, ValueError):
    """A reranker cannot be built from what was configured."""


class Reranker(Protocol):
    name: str
    needs_tokens: bool  # wants the query's token vectors in `encoding`

    def rerank(
        self, ctx: QueryContext, candidates: list[Candidate], encoding: QueryEncoding
    ) -> None:
        """Set `score` of every candidate (the caller sorts)."""


def resolve_reranker(
    name: str,
    version: LoadedVersion,
    endpoint: RerankEndpoint | None = None,
    environ: Mapping[str, str] = NO_VARIABLES,
) -> Reranker | None:
    """A reranker from its name; "default" is MaxSim when the index has token vectors;
    `endpoint`: the rerank endpoint the name stands for, its key in `environ`."""
    if endpoint is not None:
        return EndpointReranker.cached(endpoint, environ=environ)
    if name == "none":
        return None
    if name == "default":
        return MAXSIM if version.has_token_vectors else None
    if name == "maxsim":
        return MAXSIM
    if name.startswith("cross-encoder:"):
        return CrossEncoderReranker.cached(name.split(":", 1)[1])
    raise RerankerError(f"unknown reranker {name!r}; choose one of: {RERANKERS}")


def check_reranker_name(name: str) -> str:
    """`name` if it names a reranker (a cross-encoder's directory is checked when loaded)."""
    if name in BUILT_IN_RERANKERS or name.startswith("cross-encoder:"):
        return name
    raise RerankerError(f"unknown reranker {name!r}; choose one of: {RERANKERS}")


# --- MaxSim ---------------------------------------------------------------------------------


@dataclass
class QueryTokens:
    vectors: np.ndarray  # (n, dim) unit rows
    weights: np.ndarray  # (n,) IDF weights, 0 for punctuation


class MaxSimReranker:
    name = "maxsim"
    needs_tokens = True

    def rerank(
        self, ctx: QueryContext, candidates: list[Candidate], encoding: QueryEncoding
    ) -> None:
        if encoding.tokens is None:
            encoding = encode_query(ctx.embedder, ctx.profile.text, with_tokens=True)
        tokens = query_tokens(ctx, encoding)
        if tokens is None:
            return
        weight = ctx.settings.maxsim_weight
        projected: dict[int, np.ndarray] = {}
        for c in candidates:
            arrays = c.segment.tokens
            if arrays is None:
                continue
            if c.position not in projected:
                projected[c.position] = tokens.vectors @ arrays.projection
            c.score += weight * maxsim(projected[c.position], tokens.weights, arrays, c.index)


def maxsim(qp: np.ndarray, weights: np.ndarray, arrays: TokenArrays, index: int) -> float:
    """Weighted mean over query tokens of their best similarity with the chunk's tokens."""
    doc = arrays.dequantised(index)
    if not len(doc):
        return 0.0
    best = (qp @ doc.T).max(axis=1)
    return float(weights @ best / weights.sum())


def query_tokens(ctx: QueryContext, encoding: QueryEncoding) -> QueryTokens | None:
    ids, vectors = encoding.ids, encoding.tokens
    if ids is None or vectors is None:
        return None
    n = min(len(ids), len(vectors))
    if n == 0:
        return None
    ids, vectors = ids[:n], vectors[:n]
    version = ctx.version
    tokens = [(seg.tokens, seg.live) for seg in version.segments]
    # token vectors come from the shipped model only (late_interaction.encode_query)
    skip = cast("Embedder", ctx.embedder).skip_mask
    weights = version.derived.token_idf(tokens, skip)[ids]
    if weights.sum() <= 0:
        return None
    return QueryTokens(vectors=vectors, weights=weights)


MAXSIM = MaxSimReranker()


def _passage(candidate: Candidate) -> str:
    """What a cross-encoder reads of a candidate: its breadcrumb, then its text."""
    return " › ".join(candidate.chunk.headings) + "\n" + candidate.chunk.text


# --- a rerank endpoint ----------------------------------------------------------------------


class EndpointReranker:
    """Scores of the head from a rerank endpoint (model/rerank_endpoint.py), with a
    search's bounds: when it fails, or rests after failing, the head keeps its fused order
    (the endpoint's client logs the failure once, and /health says why)."""

    name = "endpoint"
    needs_tokens = False
    _cache: ClassVar[dict[RerankEndpoint, EndpointReranker]] = {}
    _cache_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, remote: RemoteReranker) -> None:
        self.remote = remote

    @classmethod
    def cached(cls, spec: RerankEndpoint, **options: Any) -> EndpointReranker:
        """The one reranker of `spec`, whichever version asks (so a failure rests the
        endpoint for all); `options` (sleep, clock) go to `RemoteReranker.for_queries`
        when it is first made."""
        from docdex.model.rerank_endpoint import RemoteReranker

        with cls._cache_lock:
            if spec not in cls._cache:
                cls._cache[spec] = cls(RemoteReranker.for_queries(spec, **options))
            return cls._cache[spec]

    @property
    def outage(self) -> Outage:
        return self.remote.outage

    def rerank(
        self, ctx: QueryContext, candidates: list[Candidate], encoding: QueryEncoding
    ) -> None:
        passages = [_passage(c) for c in candidates]
        try:
            scores = self.remote.scores(ctx.profile.text, passages)
        except DocdexError:  # the fused order stands; the search still answers
            return
        for c, s in zip(candidates, scores, strict=True):
            c.score = s


# --- cross-encoder --------------------------------------------------------------------------


class CrossEncoderReranker:
    """A local ONNX cross-encoder; scores (query, chunk text) pairs in one batch."""

    name = "cross-encoder"
    needs_tokens = False
    max_length = 512
    _cache: ClassVar[dict[str, CrossEncoderReranker]] = {}
    _cache_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, session: Any, tokenizer: Tokenizer, model_dir: Path) -> None:
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
        self, ctx: QueryContext, candidates: list[Candidate], encoding: QueryEncoding
    ) -> None:
        passages = [_passage(c) for c in candidates]
        # The model's logit is the head's score (a sigmoid would tie confident pairs).
        for c, s in zip(candidates, self.scores(ctx.profile.text, passages), strict=True):
            c.score = float(s)
