"""A run loads the model only to embed: its identity (for content hashes and the manifest)
comes from the installed files (docdex.model.files.model_info), so a push that renames or
deletes files, or changes nothing, never builds an ONNX session."""

from __future__ import annotations

import pytest

from docdex.index_format.layout import DataDir
from docdex.index_format.store import load_current
from docdex.indexer.run.pipeline import index_sources
from docdex.model import embedder as embedder_module
from docdex.model.files import model_info

from fixtures import FAQ, INSTALL, pushed_workspace
from runs import assert_consistent, make_config


@pytest.fixture()
def no_model(monkeypatch):
    def refuse(*_args, **_kwargs):
        raise AssertionError("this run embeds nothing: the model must not be loaded")

    monkeypatch.setattr(embedder_module.Embedder, "load", refuse)


def test_renames_and_deletions_publish_without_loading_the_model(tmp_path, embedder, no_model):
    ws = pushed_workspace(
        tmp_path, {"guide/install.md": INSTALL, "faq.md": FAQ, "old.md": "# Old\n\nGone soon.\n"}
    )
    data = DataDir(tmp_path / "data")
    config = make_config(ws)
    first = index_sources(data, config, embedder=embedder)  # a model handed in is used
    ws.move("guide/install.md", "guide/setup.md")
    ws.remove("old.md")
    ws.commit_and_push("rename and delete")

    report = index_sources(data, config)

    [source] = report.sources
    assert report.published and report.version == first.version + 1
    assert (source.renamed, source.deleted, source.chunks_embedded) == (1, 1, 0)
    assert source.chunks_reused > 0
    assert load_current(data).embedder == model_info() == embedder.info
    assert_consistent(data, ws)


def test_nothing_changed_loads_no_model(tmp_path, embedder, no_model):
    ws = pushed_workspace(tmp_path, {"faq.md": FAQ})
    data = DataDir(tmp_path / "data")
    config = make_config(ws)
    index_sources(data, config, embedder=embedder)
    report = index_sources(data, config)
    assert not report.published and report.sources[0].status == "unchanged"
