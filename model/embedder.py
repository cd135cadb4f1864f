"""The embedder: all-MiniLM-L6-v2 over token windows.

Texts are cut into overlapping windows of ``window_tokens`` content tokens, each wrapped as
``[CLS] ... [SEP]``; a window's vector is the attention-masked mean of
``last_hidden_state``, L2-normalised. Passages run the fused rewrite of the package's float32
graph (passagegraph.py, adr/0020); queries may run the int8 rewrite of the same model
(int8graph.py, adr/0009).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Callable
from functools import cached_property
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from docdex.index_format.records import WINDOW_OVERLAP, WINDOW_TOKENS, EmbedderInfo

from .files import ModelMissing, load_tokenizer, model_info, weights_path
from .model_environment import UNCONFIGURED, ModelEnvironment
from .sessions import cached_graph, cached_session
from .windows import (
    CLS_ID,
    SEP_ID,
    embed_batched,
    mean_pooled,
    pad_windows,
    split_windows,
    unit_rows,
)

MAX_POSITIONS = 512  # BERT position embeddings

# Batches stay small and of nearly equal length (bench/performance/embed_micro.py; adr/0007):
# largest batch * padded length per run, largest batch, and largest share of padding in a batch.
TOKEN_BUDGET = 1024
MAX_BATCH = 64
MAX_PADDING = 0.1

ProgressFn = Callable[[int], None]
log = logging.getLogger("docdex.embedder")


class Embedder:
    """all-MiniLM-L6-v2 over token windows; build it with :meth:`Embedder.load`."""

    max_padding: float = MAX_PADDING

    def __init__(
        self,
        session: ort.InferenceSession,
        tokenizer: Tokenizer,
        info: EmbedderInfo,
        token_budget: int = TOKEN_BUDGET,
        max_batch: int = MAX_BATCH,
        graph: str = "float32",
    ) -> None:
        if not 0 <= info.window_overlap < info.window_tokens <= MAX_POSITIONS - 2:
            raise ValueError(
                f"need 0 <= window_overlap < window_tokens <= {MAX_POSITIONS - 2}, got "
                f"window_tokens={info.window_tokens} window_overlap={info.window_overlap}"
            )
        self.session = session
        self.tokenizer = tokenizer
        self.info = info
        self.token_budget = token_budget
        self.max_batch = max_batch
        # "passage" (passagegraph.py), "passage-int8" (its int8 form), "int8" (the query
        # graph, int8graph.py), or "float32" (the package's graph, when neither can be built)
        self.graph = graph

    @classmethod
    def load(
        cls,
        threads: int | None = None,
        window_tokens: int = WINDOW_TOKENS,
        window_overlap: int = WINDOW_OVERLAP,
        token_budget: int = TOKEN_BUDGET,
        max_batch: int = MAX_BATCH,
        for_queries: bool = False,
        passages: str = "float32",
        model_environment: ModelEnvironment = UNCONFIGURED,
    ) -> Embedder:
        """Load the installed model; `threads` None means os.cpu_count(); the graphs
        optimised once per machine are kept in `model_environment`'s cache directory.

        `for_queries`: run the int8 query graph, a third of the memory of the float32 one
        and as fast for one window. Otherwise the passage graph (passagegraph.py): the
        float32 model with its attention and GELU fused, the same vectors faster, or with
        `passages="int8"` its int8 form (other vectors: the "minilm-int8" embedder)."""
        # checks the weights' pinned hash
        info = model_info(window_tokens, window_overlap, model_environment)
        tokenizer = load_tokenizer()
        threads = threads or os.cpu_count() or 1
        built_from = (weights_path(), info.sha256, threads, model_environment)  # each session
        graph, session = "int8", _int8_session(*built_from) if for_queries else None
        if session is None and passages == "int8":
            graph, session = "passage-int8", _passage_session(*built_from, "int8")
            if session is None:  # its vectors are another model's: no quiet fallback
                raise ModelMissing("the int8 passage graph cannot be built here (see the log)")
        if session is None:
            graph, session = "passage", _passage_session(*built_from)
        if session is None:
            graph, session = "float32", package_session(*built_from)
        return cls(session, tokenizer, info, token_budget, max_batch, graph=graph)

    # --- tokenising ------------------------------------------------------------------------

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        """WordPiece ids of each text, without special tokens."""
        encodings = self.tokenizer.encode_batch(texts, add_special_tokens=False)
        return [e.ids for e in encodings]

    def token_windows(self, texts: list[str]) -> tuple[list[list[int]], np.ndarray]:
        """Windows ([CLS] ... [SEP] token ids) of every text, and each window's text index."""
        size, overlap = self.info.window_tokens, self.info.window_overlap
        windows: list[list[int]] = []
        owners: list[int] = []
        for i, ids in enumerate(self.tokenize(texts)):
            parts = split_windows(ids, size, overlap)
            windows.extend(parts)
            owners.extend([i] * len(parts))
        return windows, np.asarray(owners, dtype=np.int32)

    def first_window(self, text: str) -> list[int]:
        """The window a query is embedded from: its first `window_tokens` tokens."""
        ids = self.tokenize([text])[0]
        return [CLS_ID, *ids[: self.info.window_tokens], SEP_ID]

    @cached_property
    def skip_mask(self) -> np.ndarray:
        """Bool mask over the vocabulary: special and punctuation-only WordPieces, which
        carry no token vector and no weight in late interaction."""
        vocab = self.tokenizer.get_vocab()
        mask = np.zeros(max(vocab.values()) + 1, dtype=bool)
        for piece, i in vocab.items():
            bare = piece.removeprefix("##")
            if (piece.startswith("[") and piece.endswith("]")) or not any(
                c.isalnum() for c in bare
            ):
                mask[i] = True
        return mask

    # --- inference -------------------------------------------------------------------------

    def hidden_states(self, windows: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
        """(windows, width, dim) last hidden states of one padded batch, and its mask."""
        ids, mask = pad_windows(windows)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        (hidden,) = self.session.run(["last_hidden_state"], feeds)
        return hidden, mask

    def embed_windows(
        self, windows: list[list[int]], progress: ProgressFn | None = None
    ) -> np.ndarray:
        """(n, dim) float32 unit vectors, in input order (batched by length internally)."""
        batching = (self.token_budget, self.max_batch, self.max_padding)

        def run(batch: list[list[int]]) -> np.ndarray:
            return mean_pooled(*self.hidden_states(batch))

        return embed_batched(windows, self.info.dim, run, batching, progress)

    def embed_texts(
        self, texts: list[str], progress: ProgressFn | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(vectors, owner): one vector per window, owner[i] = index of its text."""
        windows, owner = self.token_windows(texts)
        return self.embed_windows(windows, progress), owner

    def embed_query(self, text: str) -> np.ndarray:
        """(dim,) float32 unit vector of the first window of `text`."""
        return mean_pooled(*self.hidden_states([self.first_window(text)]))[0]

    def token_vectors(self, text: str) -> np.ndarray:
        """(n_tokens, dim) unit rows of the first window's content tokens (no CLS/SEP)."""
        hidden, _ = self.hidden_states([self.first_window(text)])
        return unit_rows(hidden[0, 1:-1])


# --- sessions -------------------------------------------------------------------------------


def package_session(
    path: Path, sha256: str, threads: int, model_environment: ModelEnvironment = UNCONFIGURED
) -> ort.InferenceSession:
    """A session over the package's graph (float32 once optimised)."""
    cached = cached_graph("minilm", sha256, "", model_environment)
    return cached_session(threads, cached, lambda: str(path))


def _int8_session(
    path: Path, sha256: str, threads: int, model_environment: ModelEnvironment
) -> ort.InferenceSession | None:
    """A session over the int8 query graph; None when it cannot be built or run here, and
    the caller uses the float32 graph."""
    from .int8graph import REWRITE_VERSION, int8_query_graph

    return _rewritten_session(
        "int8 query",
        "minilm-int8",
        "int8graph",
        REWRITE_VERSION,
        int8_query_graph,
        path,
        sha256,
        threads,
        model_environment,
    )


def _passage_session(
    path: Path,
    sha256: str,
    threads: int,
    model_environment: ModelEnvironment,
    kind: str = "float32",
) -> ort.InferenceSession | None:
    """A session over the fused passage graph (`kind` float32 or int8); None when it cannot
    be built or run here, and the caller uses the package's graph (float32: the same
    vectors, slower)."""
    from .passagegraph import REWRITE_VERSION, passage_graph

    return _rewritten_session(
        "passage" if kind == "float32" else f"{kind} passage",
        "minilm-passage" if kind == "float32" else f"minilm-passage-{kind}",
        "passagegraph",
        REWRITE_VERSION,
        lambda model: passage_graph(model, kind),
        path,
        sha256,
        threads,
        model_environment,
        child_args=() if kind == "float32" else (kind,),
    )


def _rewritten_session(
    label: str,
    kind: str,
    module: str,
    version: int,
    rewrite: Callable[[Path], bytes],
    path: Path,
    sha256: str,
    threads: int,
    model_environment: ModelEnvironment,
    child_args: tuple[str, ...] = (),
) -> ort.InferenceSession | None:
    """A session over `rewrite(path)`, cached per machine as `kind` and built by a child
    running `module` (with `child_args` after the model and the file); None (and a log
    line saying why) when it cannot be built or run."""
    cached = cached_graph(kind, sha256, f"rewrite {version}", model_environment)
    if cached is not None and not cached.exists():
        _build_in_child(module, path, cached, child_args)
    try:
        return cached_session(threads, cached, lambda: rewrite(path))
    except Exception as exc:  # no onnx package, or an onnxruntime without these operators
        log.warning("%s graph unavailable, using the float32 graph: %s", label, exc)
        return None


def _build_in_child(module: str, path: Path, cached: Path, args: tuple[str, ...] = ()) -> None:
    """Build a rewritten graph's cache file in a child process, so that the memory `onnx`
    takes to rewrite the model is not kept by a server for its lifetime (adr/0009). A child
    that fails leaves the cache missing; the caller then tries in-process, and says why if
    that fails too."""
    command = [sys.executable, "-m", f"docdex.model.{module}", str(path), str(cached), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        log.debug("building %s in a child failed: %s", cached.name, done.stderr.strip()[-500:])
