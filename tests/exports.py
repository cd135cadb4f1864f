"""The shipped model laid out as an ONNX export directory, from the installed package files
(model/files.py says where the weights and the tokenizer are)."""

from __future__ import annotations

import shutil
from pathlib import Path

from docdex.model.files import TOKENIZER_PKG, package_dir, weights_path

EXPORT_FILES = ("tokenizer.json", "config.json", "sentence_bert_config.json")


def export_dir(target: Path) -> Path:
    """model.onnx, tokenizer.json, config.json, sentence_bert_config.json and
    1_Pooling/config.json, as sentence-transformers exports all-MiniLM-L6-v2."""
    source = package_dir(TOKENIZER_PKG)
    assert source is not None
    target.mkdir(parents=True)
    (target / "model.onnx").symlink_to(weights_path())
    for name in EXPORT_FILES:
        shutil.copy(source / "model" / name, target / name)
    (target / "1_Pooling").mkdir()
    shutil.copy(source / "model" / "1_Pooling" / "config.json", target / "1_Pooling/config.json")
    return target
