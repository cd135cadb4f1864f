"""What indexer/ and server/ ask of an embedder, whichever kind it is (choice.py builds
one): passages embedded as window vectors, a query's vector, the model's identity."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

from docdex.errors import DocdexError
from docdex.index_format.records import EmbedderInfo

ProgressFn = Callable[[int], None]


class EmbedderUnavailable(DocdexError):
    """A configured embedder cannot be loaded or did not answer (a missing file, an
    endpoint that refuses, fails or is too slow): one sentence says which and why."""


class TextEmbedder(Protocol):
    """An embedder: the shipped model (embedder.py), an ONNX export directory
    (onnx_dir.py) or an OpenAI-compatible endpoint (endpoint.py)."""

    @property
    def info(self) -> EmbedderInfo:
        """Its identity (what a manifest records and content hashes are keyed by), dim."""
        ...

    @property
    def graph(self) -> str:
        """What runs it, for /health: "int8", "passage", "onnx", "endpoint"..."""
        ...

    def embed_texts(
        self, texts: list[str], progress: ProgressFn | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(vectors, owner): float32 unit vectors, one per window, owner[i] = its text."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """(dim,) float32 unit vector of a query."""
        ...
