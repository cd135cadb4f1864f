"""An embedder from a local ONNX export directory, in the sentence-transformers / Optimum
layout: `model.onnx`, `tokenizer.json`, `config.json`, and optionally
`sentence_bert_config.json` (its `max_seq_length`) and `1_Pooling/config.json` (mean or CLS
pooling). Texts are cut into token windows as the shipped model's are (embedder.py), each
wrapped in the tokenizer's own special tokens and led by the configured prefix.

Its identity (`onnx_info`) is a digest of the model and tokenizer files and of every option
that changes a vector, so another export, or the same one with other options, never reuses
these vectors; moving the directory keeps them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import onnxruntime as ort

from docdex.index_format.model_tables import OnnxEmbedder
from docdex.index_format.records import EmbedderInfo

from .files import file_sha256
from .model_environment import UNCONFIGURED, ModelEnvironment
from .protocol import EmbedderUnavailable, ProgressFn
from .sessions import cached_graph, cached_session
from .windows import embed_batched, masked_mean, pad_windows, split_content, unit_rows

if TYPE_CHECKING:
    from tokenizers import Tokenizer

MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
CONFIG_FILE = "config.json"
TOKEN_BUDGET = 1024  # as the shipped model's batches (embedder.py)
MAX_BATCH = 64
MAX_PADDING = 0.1
REWRITE = 1  # raise when windows or pooling change for the same files and options


@dataclass(frozen=True)
class Layout:
    """What the directory says about the model, read without a session."""

    folder: Path
    pooling: str  # "mean" | "cls"
    limit: int  # tokens a window may hold, special tokens and prefix included
    dim: int  # 0 when config.json does not say


def read_layout(spec: OnnxEmbedder) -> Layout:
    folder = Path(spec.path).expanduser()
    for name in (MODEL_FILE, TOKENIZER_FILE, CONFIG_FILE):
        if not (folder / name).is_file():
            raise EmbedderUnavailable(
                f"{folder} holds no {name}: an ONNX export directory has {MODEL_FILE}, "
                f"{TOKENIZER_FILE} and {CONFIG_FILE} (as sentence-transformers or Optimum "
                "export them)"
            )
    config = _json(folder / CONFIG_FILE)
    pooling_config = _json(folder / "1_Pooling" / CONFIG_FILE)
    sbert = _json(folder / "sentence_bert_config.json")
    pooling = spec.pooling or ("cls" if pooling_config.get("pooling_mode_cls_token") else "mean")
    positions = int(config.get("max_position_embeddings") or 512)
    if config.get("model_type") in ("roberta", "xlm-roberta", "camembert"):
        positions -= 2  # their position ids start after the padding index
    limit = spec.max_tokens or min(int(sbert.get("max_seq_length") or positions), positions)
    dim = int(pooling_config.get("word_embedding_dimension") or config.get("hidden_size") or 0)
    return Layout(folder, pooling, limit, dim)


def onnx_info(
    spec: OnnxEmbedder,
    window_tokens: int,
    window_overlap: int,
    dim: int = 0,
    model_environment: ModelEnvironment = UNCONFIGURED,
) -> EmbedderInfo:
    """The directory's identity with these window settings (no session is built, unless
    config.json does not give the dimension)."""
    layout = read_layout(spec)
    model_sha = file_sha256(layout.folder / MODEL_FILE, model_environment)
    options = [
        REWRITE,
        model_sha,
        file_sha256(layout.folder / TOKENIZER_FILE, model_environment),
        layout.pooling,
        spec.normalize,
        layout.limit,
        spec.query_prefix,
        spec.passage_prefix,
    ]
    digest = hashlib.sha256(json.dumps(options).encode()).hexdigest()
    size, overlap = _window(window_tokens, window_overlap, layout.limit)
    dim = (
        dim
        or layout.dim
        or OnnxDirEmbedder.load(spec, 1, size, overlap, None, model_environment).info.dim
    )
    return EmbedderInfo(
        id=f"onnx:{digest[:16]}",
        dim=dim,
        sha256=model_sha,
        window_tokens=size,
        window_overlap=overlap,
        spec=spec,
    )


def _window(window_tokens: int, window_overlap: int, limit: int) -> tuple[int, int]:
    """Content tokens per window within the model's limit (3 for the specials a tokenizer
    adds and a short prefix is left over by the caller), and an overlap below it."""
    size = max(16, min(window_tokens, limit - 2))
    return size, min(window_overlap, size // 4)


class OnnxDirEmbedder:
    """A text embedder over an ONNX export directory; build it with `load`."""

    graph = "onnx"

    def __init__(
        self,
        spec: OnnxEmbedder,
        session: ort.InferenceSession,
        tokenizer: Tokenizer,
        info: EmbedderInfo,
        layout: Layout,
    ) -> None:
        self.spec, self.session, self.tokenizer, self.layout = spec, session, tokenizer, layout
        self._info = info
        self.head, self.tail = _specials(tokenizer)
        self.pad_id = _pad_id(tokenizer)
        self.query_ids = self._ids(spec.query_prefix)
        self.passage_ids = self._ids(spec.passage_prefix)
        fixed = len(self.head) + len(self.tail) + max(len(self.query_ids), len(self.passage_ids))
        self.content = max(1, min(info.window_tokens, layout.limit - fixed))
        self.overlap = min(info.window_overlap, self.content // 4)
        self.inputs = {i.name: i.type for i in session.get_inputs()}
        self.output, self.pooled = _output(session)

    @property
    def info(self) -> EmbedderInfo:
        return self._info

    @classmethod
    def load(
        cls,
        spec: OnnxEmbedder,
        threads: int,
        window_tokens: int,
        window_overlap: int,
        info: EmbedderInfo | None = None,
        model_environment: ModelEnvironment = UNCONFIGURED,
    ) -> OnnxDirEmbedder:
        """The directory's model; its graph optimised once per machine, in
        `model_environment`'s cache directory."""
        from tokenizers import Tokenizer

        layout = read_layout(spec)
        model = layout.folder / MODEL_FILE
        try:
            tokenizer = Tokenizer.from_file(str(layout.folder / TOKENIZER_FILE))
            tokenizer.no_truncation()
            tokenizer.no_padding()
            sha = info.sha256 if info is not None else file_sha256(model, model_environment)
            session = _session(model, sha, threads, model_environment)
        except Exception as exc:  # a damaged or unsupported file: onnxruntime's own words
            raise EmbedderUnavailable(
                f"cannot load the ONNX model in {layout.folder}: {exc}"
            ) from None
        if info is None:  # the dimension from the session (config.json did not say)
            size, overlap = _window(window_tokens, window_overlap, layout.limit)
            dim = _output_dim(session)
            info = EmbedderInfo("onnx:unnamed", dim, sha, size, overlap, spec=spec)
        return cls(spec, session, tokenizer, info, layout)

    # --- windows ---------------------------------------------------------------------------

    def _ids(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False).ids) if text else []

    def _wrap(self, prefix: list[int], content: list[int]) -> list[int]:
        return [*self.head, *prefix, *content, *self.tail]

    def windows(self, texts: list[str]) -> tuple[list[list[int]], np.ndarray]:
        """Every text's windows (specials and the passage prefix around each), and owners."""
        windows: list[list[int]] = []
        owners: list[int] = []
        encodings = self.tokenizer.encode_batch(texts, add_special_tokens=False)
        for i, encoding in enumerate(encodings):
            for part in split_content(list(encoding.ids), self.content, self.overlap):
                windows.append(self._wrap(self.passage_ids, part))
                owners.append(i)
        return windows, np.asarray(owners, dtype=np.int32)

    # --- inference -------------------------------------------------------------------------

    def _run(self, windows: list[list[int]]) -> np.ndarray:
        ids, mask = pad_windows(windows, self.pad_id)
        given = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        feeds = {
            name: given[name].astype(np.int32) if kind == "tensor(int32)" else given[name]
            for name, kind in self.inputs.items()
            if name in given
        }
        (out,) = self.session.run([self.output], feeds)
        out = np.asarray(out, dtype=np.float32)
        if self.pooled:
            pooled = out
        elif self.layout.pooling == "cls":
            pooled = out[:, 0]
        else:
            pooled = masked_mean(out, mask)
        return unit_rows(pooled) if self.spec.normalize else pooled.astype(np.float32)

    def embed_windows(
        self, windows: list[list[int]], progress: ProgressFn | None = None
    ) -> np.ndarray:
        batching = (TOKEN_BUDGET, MAX_BATCH, MAX_PADDING)
        return embed_batched(windows, self.info.dim, self._run, batching, progress)

    def embed_texts(
        self, texts: list[str], progress: ProgressFn | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        windows, owners = self.windows(texts)
        return self.embed_windows(windows, progress), owners

    def embed_query(self, text: str) -> np.ndarray:
        content = self._ids(text)[: self.content]
        return self._run([self._wrap(self.query_ids, content)])[0]


def _session(
    model: Path, sha: str, threads: int, model_environment: ModelEnvironment
) -> ort.InferenceSession:
    """A session over the directory's graph, optimised once per machine; a graph whose
    optimised form cannot be saved (weights in an external file past 2 GB) is optimised at
    each load instead."""
    try:
        cached = cached_graph("onnx-dir", sha, f"dir {REWRITE}", model_environment)
        return cached_session(threads, cached, lambda: str(model))
    except Exception:
        return cached_session(threads, None, lambda: str(model))


def _specials(tokenizer: Tokenizer) -> tuple[list[int], list[int]]:
    """The ids the tokenizer puts before and after a text ([CLS] … [SEP], <s> … </s>)."""
    bare = list(tokenizer.encode("a", add_special_tokens=False).ids)
    full = list(tokenizer.encode("a", add_special_tokens=True).ids)
    for start in range(len(full) - len(bare) + 1):
        if full[start : start + len(bare)] == bare:
            return full[:start], full[start + len(bare) :]
    return [], []


def _pad_id(tokenizer: Tokenizer) -> int:
    for token in ("[PAD]", "<pad>"):
        found = tokenizer.token_to_id(token)
        if found is not None:
            return int(found)
    return 0


def _output(session: ort.InferenceSession) -> tuple[str, bool]:
    """The output to pool (token states), or one the model pooled itself (True)."""
    outputs = session.get_outputs()
    names = {o.name: o for o in outputs}
    for name in ("last_hidden_state", "token_embeddings"):
        if name in names:
            return name, False
    for name in ("sentence_embedding", "pooler_output"):
        if name in names:
            return name, True
    first = outputs[0]
    return first.name, len(first.shape) == 2


def _output_dim(session: ort.InferenceSession) -> int:
    name, _ = _output(session)
    shape = next(o.shape for o in session.get_outputs() if o.name == name)
    if not shape or not isinstance(shape[-1], int):
        raise EmbedderUnavailable(
            "the ONNX model does not declare its vectors' size: give hidden_size in config.json"
        )
    return shape[-1]


def _json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise EmbedderUnavailable(f"{path} cannot be read as JSON: {exc}") from None
    return value if isinstance(value, dict) else {}
