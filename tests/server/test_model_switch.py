"""Switching the embedder under load: a real server answers HTTP and MCP searches without a
pause while the real indexer re-embeds the docs with another model (the shipped model laid
out as an ONNX export, whose identity differs) and then switches back; every search is
answered, by the model of the version it ran on."""

from __future__ import annotations

import threading

from docdex.index_format.config import Config, Settings, SourceConfig, save_config
from docdex.index_format.layout import DataDir
from docdex.index_format.model_tables import OnnxEmbedder
from docdex.indexer.run.pipeline import index_sources
from docdex.serverproc import ServeProcess

from exports import export_dir
from fixtures import build_workspace, http, wait_for
from searchers import HttpSearcher, McpSearcher

QUERY = "what does error E1234 mean?"


def index(data: DataDir, config: Config, embedder=None) -> int:
    save_config(data, config)
    report = index_sources(data, config, embedder=embedder)
    assert report.published, report
    return report.version


def served(server: ServeProcess, version: int) -> dict:
    return wait_for(
        lambda: (h := http(f"{server.url}/health").json())["index_version"] == version and h,
        what=f"version {version} served",
    )


def test_switching_the_embedder_and_back_never_fails_a_search(tmp_path, embedder):
    ws = build_workspace(tmp_path / "ws")
    data = DataDir(tmp_path / "data")
    data.ensure()
    sources = [SourceConfig(name="docs", location=str(ws.bare))]
    minilm = Config(sources=sources)
    export = Config(
        settings=Settings(embedder="export"),
        sources=sources,
        models={"export": OnnxEmbedder(path=str(export_dir(tmp_path / "export")))},
    )
    first = index(data, minilm, embedder)
    server = ServeProcess(data.root, tmp_path / "server.log")
    stop = threading.Event()
    searchers = [HttpSearcher(server.url, QUERY, stop), McpSearcher(server.mcp_url, QUERY, stop)]
    try:
        server.wait_ready()
        for searcher in searchers:
            searcher.start()
        wait_for(lambda: all(s.answers for s in searchers), what="first answers")
        models = {first: served(server, first)["models"]["embedder"]}
        second = index(data, export)  # every chunk embedded again, by the export's model
        models[second] = served(server, second)["models"]["embedder"]
        wait_for(lambda: all(s.answers[-1]["index_version"] == second for s in searchers))
        third = index(data, minilm, embedder)  # and back
        models[third] = served(server, third)["models"]["embedder"]
        wait_for(lambda: all(s.answers[-1]["index_version"] == third for s in searchers))
    finally:
        stop.set()
        for searcher in searchers:
            searcher.join(timeout=30)
        server.stop()
    assert [f for s in searchers for f in s.failures] == []
    assert models[first] == models[third] != models[second]
    answers = [a for s in searchers for a in s.answers]
    assert {a["index_version"] for a in answers} >= {first, second, third}
    assert all(a["results"][0]["chunk_id"].startswith("docs:faq.md#") for a in answers)
