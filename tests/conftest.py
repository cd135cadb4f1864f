from __future__ import annotations

from pathlib import Path

import pytest

from docdex.model.embedder import Embedder

from paths import SHARED


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The real ONNX model, loaded once for the whole run."""
    return Embedder.load()


@pytest.fixture(scope="session")
def shared() -> Path:
    if not (SHARED / "corpora").is_dir():
        pytest.skip(f"shared corpora not found at {SHARED}")
    return SHARED
