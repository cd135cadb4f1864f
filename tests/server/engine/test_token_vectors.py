"""Late-interaction token vectors written by the indexer (opt-in `late_interaction`)."""

from __future__ import annotations

import numpy as np
import pytest

from docdex.index_format.layout import DataDir
from docdex.index_format.store import load_current, load_pages
from docdex.index_format.token_vectors import TOKEN_FILES, chunk_tokens, load_token_vectors
from docdex.server.engine import Engine

from fixtures import FAQ, INSTALL, pushed_workspace
from gitrepo import Workspace
from runs import (
    assert_consistent,
    assert_tiers_within,
    make_config,
    push_new_pages,
    run,
    token_files,
)


@pytest.fixture()
def ws(tmp_path) -> Workspace:
    return pushed_workspace(tmp_path, {"guide/install.md": INSTALL, "faq.md": FAQ})


def page_tokens(data: DataDir, path: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """The token rows (model space) and ids of each chunk of the page at `path`."""
    manifest = load_current(data)
    pages = {p.path: p for s in manifest.sources.values() for p in load_pages(data, s.pages_file)}
    chunks = {s.id: s.chunks for s in manifest.segments}
    out = []
    for ref in pages[path].chunks:
        arrays = load_token_vectors(data.segment(ref.segment), chunks[ref.segment])
        assert arrays is not None
        out.append(chunk_tokens(arrays, ref.index))
    return out


def test_first_index_writes_token_vectors_and_maxsim_serves(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    report = run(data, make_config(ws, late_interaction=True), embedder)
    assert report.published
    assert token_files(data) == [True]
    manifest = load_current(data)
    assert manifest.format_minor == 4  # 1.4 (entries published while read); token files 1.1
    ref = manifest.segments[0]
    arrays = load_token_vectors(data.segment(ref.id), ref.chunks)
    assert arrays is not None and len(arrays.vectors) > 0
    assert arrays.vectors.dtype == np.int8 and arrays.vectors.shape[1] == 64
    assert arrays.projection.shape == (384, 64)
    assert all(arrays.offsets[i] < arrays.offsets[i + 1] for i in range(ref.chunks))

    engine = Engine.open(data, embedder)
    assert engine.models.reranker_name() == "maxsim"
    result = engine.search("which compiler do I need to build hnswlib?")
    assert result.results and result.results[0].path == "guide/install.md"


def test_rename_reuses_token_rows_without_embedding(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    config = make_config(ws, late_interaction=True)
    run(data, config, embedder)
    before = page_tokens(data, "faq.md")
    ws.move("faq.md", "help/faq.md")
    ws.commit_and_push("rename")
    report = run(data, config, embedder)
    assert report.published
    assert report.windows_embedded == 0
    assert report.sources[0].chunks_embedded == 0
    assert token_files(data) == [True, True]
    after = page_tokens(data, "help/faq.md")
    assert len(after) == len(before)
    for (old_rows, old_ids), (new_rows, new_ids) in zip(before, after, strict=True):
        np.testing.assert_array_equal(old_ids, new_ids)
        # re-projected through the new segment's basis and quantised again
        np.testing.assert_allclose(new_rows, old_rows, atol=0.05)
    assert_consistent(data, ws)
    engine = Engine.open(data, embedder)
    assert engine.models.reranker_name() == "maxsim"


def test_compaction_keeps_token_vectors(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    config = make_config(ws, late_interaction=True, max_segments=2)
    run(data, config, embedder)
    reports = push_new_pages(data, config, ws, embedder)
    assert sum(r.compacted for r in reports) >= 1
    assert_tiers_within(data, 2)
    assert all(token_files(data))
    assert_consistent(data, ws)
    engine = Engine.open(data, embedder)
    assert engine.models.reranker_name() == "maxsim"
    result = engine.search("section about topic 21")
    assert result.results[0].path == "page3.md"


def test_turning_it_on_later_embeds_chunks_again_with_tokens(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    run(data, make_config(ws), embedder)
    report = run(data, make_config(ws, late_interaction=True), embedder)
    assert report.published
    assert report.sources[0].chunks_reused == 0 and report.sources[0].chunks_embedded > 0
    assert token_files(data) == [True]
    engine = Engine.open(data, embedder)
    assert engine.models.reranker_name() == "maxsim"


def test_off_by_default_writes_no_token_vectors(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    run(data, make_config(ws), embedder)
    assert token_files(data) == [False]
    manifest = load_current(data)
    assert manifest.format_minor == 4  # every new manifest is 1.4 (checksums since 1.2)
    assert not any((data.segment(manifest.segments[0].id) / f).exists() for f in TOKEN_FILES)
    engine = Engine.open(data, embedder)
    assert engine.models.reranker_name() == "none"
    assert engine.search("install with a prefix").results
