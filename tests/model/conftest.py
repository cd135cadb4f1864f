from __future__ import annotations

import sys

import pytest

from docdex.model.model_environment import ModelEnvironment


@pytest.fixture()
def without_onnx(tmp_path, monkeypatch) -> ModelEnvironment:
    """As if the onnx package were missing, for a child and for this process; the cache
    folder of the environment it gives is a new one under `tmp_path`, so nothing is found
    built."""
    shadow = tmp_path / "shadow" / "onnx"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('no onnx here')\n")
    monkeypatch.setenv("PYTHONPATH", str(shadow.parent))
    monkeypatch.setitem(sys.modules, "onnx", None)
    return ModelEnvironment(tmp_path)
