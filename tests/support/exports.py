"""The shipped model laid out as an ONNX export directory: the installed weights, the tokenizer
docdex ships (model/files.py) and the configuration files sentence-transformers writes beside
them (tests/support/data/minilm-export, as all-MiniLM-L6-v2's export has them)."""

from __future__ import annotations

from pathlib import Path

from docdex.model.files import tokenizer_path, weights_path

EXPORT_CONFIG = Path(__file__).parent / "data" / "minilm-export"
CONFIG_FILES = ("config.json", "sentence_bert_config.json", "1_Pooling/config.json")


def export_files() -> dict[str, bytes]:
    """Each file of the export but the weights, by its path inside the export directory."""
    files = {name: (EXPORT_CONFIG / name).read_bytes() for name in CONFIG_FILES}
    return {"tokenizer.json": tokenizer_path().read_bytes(), **files}


def export_dir(target: Path) -> Path:
    """model.onnx, tokenizer.json, config.json, sentence_bert_config.json and
    1_Pooling/config.json, as sentence-transformers exports all-MiniLM-L6-v2."""
    target.mkdir(parents=True)
    (target / "model.onnx").symlink_to(weights_path())
    for name, data in export_files().items():
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        (target / name).write_bytes(data)
    return target
