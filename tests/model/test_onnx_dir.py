"""The shipped model laid out as an ONNX export directory (built from the installed
package files) gives the built-in path's vectors; its identity follows its files and
options, not its place."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from docdex.index_format.model_tables import OnnxEmbedder
from docdex.model.choice import embedder_identity, load_embedder
from docdex.model.embedder import Embedder
from docdex.model.model_environment import ModelEnvironment
from docdex.model.onnx_dir import OnnxDirEmbedder, onnx_info
from docdex.model.protocol import EmbedderUnavailable

from exports import export_dir

TEXTS = [
    "Configure the enrollment status page timeout in Intune.",
    "",
    "Error 0x801C03F3 means the device was not found in Azure AD. " * 30,  # several windows
    "## Install\n\nRun `pip install docdex` and then `docdex serve --port 8080`.",
]


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return export_dir(tmp_path_factory.mktemp("export") / "all-MiniLM-L6-v2")


@pytest.fixture(scope="module")
def onnx(folder: Path) -> OnnxDirEmbedder:
    model = load_embedder(
        OnnxEmbedder(path=str(folder)),
        threads=2,
        window_tokens=250,
        window_overlap=40,
        model_environment=ModelEnvironment(),
    )
    assert isinstance(model, OnnxDirEmbedder)
    return model


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_vectors_equal_the_built_in_models(onnx: OnnxDirEmbedder, embedder: Embedder) -> None:
    mine, my_owners = onnx.embed_texts(TEXTS)
    theirs, their_owners = embedder.embed_texts(TEXTS)
    assert my_owners.tolist() == their_owners.tolist()  # the same windows
    assert len(mine) > len(TEXTS)  # the long text has several
    assert cosines(mine, theirs).min() >= 0.9999
    query = "how do I change the status page timeout?"
    assert float(onnx.embed_query(query) @ embedder.embed_query(query)) >= 0.9999


def test_the_directory_says_how_to_pool(onnx: OnnxDirEmbedder, folder: Path) -> None:
    assert onnx.layout.pooling == "mean" and onnx.layout.limit == 256  # max_seq_length
    assert onnx.info.dim == 384 and onnx.info.window_tokens == 250
    cls = OnnxDirEmbedder.load(OnnxEmbedder(path=str(folder), pooling="cls"), 1, 250, 40)
    first = TEXTS[:1]
    assert float(cls.embed_texts(first)[0][0] @ onnx.embed_texts(first)[0][0]) < 0.99


def test_identity_follows_files_and_options(folder: Path, tmp_path: Path) -> None:
    base = onnx_info(OnnxEmbedder(path=str(folder)), 250, 40)
    moved = export_dir(tmp_path / "elsewhere")
    assert onnx_info(OnnxEmbedder(path=str(moved)), 250, 40).id == base.id
    assert base.id.startswith("onnx:") and base.spec == OnnxEmbedder(path=str(folder))
    others = [
        OnnxEmbedder(path=str(folder), pooling="cls"),
        OnnxEmbedder(path=str(folder), normalize=False),
        OnnxEmbedder(path=str(folder), passage_prefix="passage: "),
        OnnxEmbedder(path=str(folder), query_prefix="query: "),
        OnnxEmbedder(path=str(folder), max_tokens=128),
    ]
    unconfigured = ModelEnvironment()
    ids = {embedder_identity(spec, 250, 40, model_environment=unconfigured).id for spec in others}
    assert len(ids) == len(others) and base.id not in ids


def test_prefixes_lead_every_window(folder: Path) -> None:
    spec = OnnxEmbedder(path=str(folder), passage_prefix="passage: ", query_prefix="query: ")
    model = OnnxDirEmbedder.load(spec, 1, 250, 40)
    windows, _ = model.windows([TEXTS[2]])
    prefix = model.tokenizer.encode("passage: ", add_special_tokens=False).ids
    assert len(windows) > 1
    assert all(w[1 : 1 + len(prefix)] == prefix for w in windows)
    assert all(len(w) <= model.layout.limit for w in windows)


def test_a_directory_missing_a_file_is_named(folder: Path, tmp_path: Path) -> None:
    broken = export_dir(tmp_path / "broken")
    (broken / "tokenizer.json").unlink()
    with pytest.raises(EmbedderUnavailable, match=r"broken holds no tokenizer.json"):
        onnx_info(OnnxEmbedder(path=str(broken)), 250, 40)
