"""Indexing with a configured embedder: an OpenAI-compatible endpoint on 127.0.0.1 (a real
HTTP server backed by the real model, tests/support/embedserver.py). An index built through it
answers as the built-in one does; each version records its model and the server embeds
queries with it; changing the embedder embeds everything again into a new version while
the old one serves; the endpoint failing fails its source in one sentence and the last
good version keeps serving."""

from __future__ import annotations

import json
import threading

import msgspec
import numpy as np
import pytest

from docdex.cli import main
from docdex.evaluation.runs import run_eval_command
from docdex.index_format.config import Config, Settings, SourceConfig, save_config
from docdex.index_format.layout import DataDir
from docdex.index_format.model_tables import EndpointEmbedder, OnnxEmbedder, RerankEndpoint
from docdex.index_format.store import load_current, load_manifest, write_manifest
from docdex.index_format.verify import verify_data, verify_version
from docdex.indexer.run.context import IndexingError
from docdex.indexer.run.pipeline import index_sources
from docdex.model.embedder import Embedder
from docdex.model.endpoint import RemoteEmbedder
from docdex.model.protocol import EmbedderUnavailable
from docdex.server.boot import engine_loader
from docdex.server.engine import Engine, EngineSettings, Scope
from docdex.server.query_model import load_query_model

from embedserver import EmbeddingServer
from exports import export_dir
from fixtures import FAQ_E1234, build_workspace, search_index

QUERIES = [
    "how do I choose the directory the installer uses?",
    "what does error E1234 mean?",
    "require a bearer token on every request",
    "why is my index stale",
]


@pytest.fixture()
def server(embedder: Embedder):
    with EmbeddingServer(lambda texts: np.stack([embedder.embed_query(t) for t in texts])) as s:
        yield s


def endpoint_config(ws, server: EmbeddingServer, **options) -> Config:
    spec = EndpointEmbedder(url=server.url, model="test-model", retries=0, batch=1, **options)
    return Config(
        settings=Settings(embedder="local"),
        sources=[SourceConfig(name="docs", location=str(ws.bare))],
        models={"local": spec},
    )


def minilm_config(ws) -> Config:
    return Config(sources=[SourceConfig(name="docs", location=str(ws.bare))])


def index(data: DataDir, config: Config, embedder=None):
    data.ensure()
    save_config(data, config)
    return index_sources(data, config, embedder=embedder)


def top_ids(engine: Engine, query: str, n: int = 3) -> list[str]:
    return [hit.chunk_id for hit in engine.search(query, n, Scope()).results]


def test_an_index_built_through_an_endpoint_answers_the_same(
    tmp_path, embedder, server, capsys
) -> None:
    ws = build_workspace(tmp_path / "ws")
    built_in, remote = DataDir(tmp_path / "a"), DataDir(tmp_path / "b")
    assert index(built_in, minilm_config(ws), embedder).published
    report = index(remote, endpoint_config(ws, server))
    assert report.published and report.windows_embedded > 0
    manifest = load_current(remote)
    assert manifest is not None
    assert manifest.embedder.id.startswith("openai:test-model:") and manifest.embedder.dim == 384
    assert isinstance(manifest.embedder.spec, EndpointEmbedder)
    assert {s.model for s in manifest.segments} == {manifest.embedder.id}
    model = load_query_model(remote)  # the model the current version was built with
    assert isinstance(model, RemoteEmbedder)
    engine = Engine.open(remote, model)
    try:
        asked = len(server.requests)
        for query in QUERIES:
            expected = [h.chunk_id for h in search_index(built_in, embedder, query, 3).results]
            assert top_ids(engine, query) == expected, query
        assert len(server.requests) > asked  # queries were embedded by the endpoint
    finally:
        engine.close()
    assert "api_key" not in remote.manifest(manifest.version).read_text().replace("api_key_env", "")
    judged = zip(QUERIES, ("guide/install.md", "faq.md", "reference/api.md", "faq.md"), strict=True)
    queries = tmp_path / "queries.jsonl"
    queries.write_text(
        "".join(
            json.dumps(
                {"id": str(n), "query": q, "class": "handwritten", "relevant": [{"path": p}]}
            )
            + "\n"
            for n, (q, p) in enumerate(judged)
        )
    )
    args = (str(built_in.root), str(queries), "docs", 3, True, None)
    assert run_eval_command(*args, against=str(remote.root)) == 0
    shipped, through_endpoint = json.loads(capsys.readouterr().out)
    assert shipped["report"]["classes"] == through_endpoint["report"]["classes"]  # the same figures


def test_changing_the_embedder_embeds_everything_again_while_the_old_version_serves(
    tmp_path, embedder, server
) -> None:
    ws = build_workspace(tmp_path / "ws")
    data = DataDir(tmp_path / "data")
    first = index(data, minilm_config(ws), embedder)
    load = engine_loader(data, embedder)
    old = load(first.version)
    try:
        second = index(data, endpoint_config(ws, server))
        assert second.published and second.version == first.version + 1
        (source,) = second.sources
        assert source.chunks_reused == 0 and source.chunks_embedded == first.chunks
        manifest = load_current(data)
        assert manifest is not None and manifest.embedder.id.startswith("openai:")
        assert {s.model for s in manifest.segments} == {manifest.embedder.id}
        assert verify_data(data.root).ok
        assert top_ids(old, QUERIES[1])  # the old version still answers, with its model
        new = load(second.version)  # the server's loader: the version's own model
        try:
            asked = len(server.requests)
            assert top_ids(new, QUERIES[1])[0] == top_ids(old, QUERIES[1])[0]
            assert len(server.requests) == asked + 1
        finally:
            new.close()
    finally:
        old.close()
    third = index(data, endpoint_config(ws, server))  # unchanged: nothing to do
    assert not third.published and third.windows_embedded == 0


def test_a_failing_endpoint_fails_the_source_and_the_last_version_serves(tmp_path, server) -> None:
    ws = build_workspace(tmp_path / "ws")
    data = DataDir(tmp_path / "data")
    config = endpoint_config(ws, server)
    assert index(data, config).published
    before = load_current(data)
    ws.write("faq.md", FAQ_E1234 + "\n## Quokka\n\nThe quokka setting turns on marsupials.\n")
    ws.commit_and_push("quokka")
    server.behaviour.fail_always = 500
    report = index(data, config)
    (source,) = report.sources
    assert source.status == "failed"
    assert f"the embedder at {server.url}/embeddings answered HTTP 500" in source.error
    assert "\n" not in source.error
    assert _serves_old_text(data, before)
    server.behaviour.fail_always = 0  # the endpoint is back: the next run catches up
    again = index(data, config)
    assert again.published and again.sources[0].status == "indexed"
    assert "quokka" in " ".join(_chunk_texts(data))


def test_a_server_that_dies_mid_run(tmp_path, server) -> None:
    ws = build_workspace(tmp_path / "ws")
    data = DataDir(tmp_path / "data")
    config = endpoint_config(ws, server)
    assert index(data, config).published
    before = load_current(data)
    for n in range(4):
        ws.write(f"new/page{n}.md", f"# Page {n}\n\nThe quokka number {n} lives here.\n")
    ws.commit_and_push("four pages")
    server.behaviour.die_after = server.answered + 1  # one answer, then gone
    report = index(data, config)
    (source,) = report.sources
    assert source.status == "failed"
    assert source.error.startswith(f"the embedder at {server.url}/embeddings ")
    assert server.dead.is_set() and _serves_old_text(data, before)


def test_an_answer_past_the_time_limit_fails_the_source(tmp_path, server) -> None:
    ws = build_workspace(tmp_path / "ws")
    data = DataDir(tmp_path / "data")
    assert index(data, endpoint_config(ws, server)).published
    before = load_current(data)
    ws.write("faq.md", FAQ_E1234 + "\n## Quokka\n\nThe quokka setting.\n")
    ws.commit_and_push("quokka")
    server.behaviour.hold = threading.Event()  # no answer until the server stops
    report = index(data, endpoint_config(ws, server, timeout_s=0.3))
    assert "did not answer within its time limit (0.3 s, timeout_s)" in report.sources[0].error
    assert _serves_old_text(data, before)


def test_a_failure_while_the_embedder_changes_publishes_nothing(tmp_path, embedder, server):
    ws = build_workspace(tmp_path / "ws")
    data = DataDir(tmp_path / "data")
    first = index(data, minilm_config(ws), embedder)
    server.behaviour.fail_always = 503
    with pytest.raises(IndexingError, match="the embedder changed, so every source is embedded"):
        index(data, endpoint_config(ws, server, dimensions=384))  # known: no probe
    with pytest.raises(EmbedderUnavailable, match="answered HTTP 503"):
        index(data, endpoint_config(ws, server))  # the probe for its dimension fails
    current = load_current(data)
    assert current is not None and current.version == first.version
    assert current.embedder.id == embedder.info.id


def test_verify_refuses_a_version_of_mixed_models(tmp_path, embedder) -> None:
    ws = build_workspace(tmp_path / "ws")
    data = DataDir(tmp_path / "data")
    version = index(data, minilm_config(ws), embedder).version
    manifest = load_manifest(data, version)
    assert {s.model for s in manifest.segments} == {embedder.info.id}
    mixed = [msgspec.structs.replace(manifest.segments[0], model="openai:other:0123")]
    write_manifest(data, msgspec.structs.replace(manifest, segments=mixed + manifest.segments[1:]))
    problems = verify_version(data.root, version)
    assert [p.kind for p in problems] == ["model"]
    assert "made by embedder 'openai:other:0123'" in problems[0].detail
    with pytest.raises(Exception, match="holds segments of openai:other:0123"):
        Engine.open(data, embedder)


def test_model_list(tmp_path, server, capsys) -> None:
    ws = build_workspace(tmp_path / "ws")
    data = DataDir(tmp_path / "data")
    data.ensure()
    save_config(data, endpoint_config(ws, server))
    assert main(["--data", str(data.root), "model", "list", "--json"]) == 0
    embedder_row, reranker_row = json.loads(capsys.readouterr().out)
    assert embedder_row["kind"] == "openai" and embedder_row["ok"] and embedder_row["dim"] == 384
    assert embedder_row["identity"].startswith("openai:test-model:")
    assert reranker_row["name"] == "default" and reranker_row["ok"]
    server.die()
    assert main(["--data", str(data.root), "model", "list"]) == 1
    out = capsys.readouterr().out
    assert "embedder: local (openai)" in out and "FAILS: the embedder at" in out
    assert "cannot be reached" in out


def _chunk_texts(data: DataDir) -> list[str]:
    from docdex.index_format.store import load_segment

    manifest = load_current(data)
    assert manifest is not None
    out = []
    for ref in manifest.segments:
        chunks = load_segment(data, ref.id, manifest.embedder.dim).chunks
        out += [c.text.lower() for i, c in enumerate(chunks) if i not in set(ref.tombstones)]
    return out


def _serves_old_text(data: DataDir, before) -> bool:
    """The current version still holds the pages of `before` and none of the new text."""
    current = load_current(data)
    assert current is not None and before is not None
    state, old = current.sources["docs"], before.sources["docs"]
    return state.commit == old.commit and "quokka" not in " ".join(_chunk_texts(data))


@pytest.mark.parametrize("path", ["/rerank", "/v1/rerank"])
def test_a_rerank_endpoint_reorders_the_head(tmp_path, embedder, server, path) -> None:
    ws = build_workspace(tmp_path / "ws")
    data = DataDir(tmp_path / "data")
    index(data, minilm_config(ws), embedder)
    spec = RerankEndpoint(url=server.base + path, model="r", retries=0)
    reranked = Engine.open(
        data, embedder, settings=EngineSettings(reranker="tei", rerank_endpoint=spec)
    )
    plain = Engine.open(data, embedder, settings=EngineSettings(reranker="none"))
    try:
        assert reranked.models.reranker_name() == "endpoint"
        query = "what does error E1234 mean?"
        hits = reranked.search(query, 5, Scope()).results
        sent = server.requests[-1]
        assert sent["query"] == query and len(sent["documents" if "/v1/" in path else "texts"]) > 1
        assert hits[0].path == "faq.md"
        server.behaviour.fail_always = 500  # down: the fused order stands, the search answers
        assert top_ids(reranked, query, 5) == top_ids(plain, query, 5)
    finally:
        reranked.close()
        plain.close()


def test_eval_and_search_rerank_through_a_named_rerank_table(tmp_path, embedder, server) -> None:
    ws = build_workspace(tmp_path / "ws")
    data = DataDir(tmp_path / "data")
    spec = RerankEndpoint(url=server.base + "/rerank", model="r", retries=0)
    index(data, msgspec.structs.replace(minilm_config(ws), models={"tei": spec}), embedder)
    queries = tmp_path / "queries.jsonl"
    row = {"id": "1", "query": QUERIES[1], "class": "handwritten", "relevant": [{"path": "faq.md"}]}
    queries.write_text(json.dumps(row) + "\n")
    asked = len(server.requests)
    args = (str(data.root), str(queries), "docs", 3, True, None)
    assert run_eval_command(*args, reranker="tei") == 0  # the table's name: its endpoint
    assert len(server.requests) == asked + 1 and server.requests[-1]["query"] == QUERIES[1]
    assert main(["--data", str(data.root), "search", QUERIES[1], "--reranker", "tei"]) == 0
    assert len(server.requests) == asked + 2


def test_a_version_whose_endpoint_is_down_is_still_served_by_bm25(tmp_path, server) -> None:
    ws = build_workspace(tmp_path / "ws")
    data = DataDir(tmp_path / "data")
    version = index(data, endpoint_config(ws, server)).version
    server.die()
    engine = engine_loader(data, load_query_model(data))(version)  # its warm-up searches too
    try:
        hits = engine.search("E1234", 3, Scope()).results
        assert hits and hits[0].path == "faq.md"
    finally:
        engine.close()


def test_the_shipped_model_keeps_its_identity_and_hashes(tmp_path, embedder) -> None:
    from docdex.index_format.store import load_pages
    from docdex.model.files import model_info

    ws = build_workspace(tmp_path / "ws")
    given, loaded = DataDir(tmp_path / "given"), DataDir(tmp_path / "loaded")
    index(given, minilm_config(ws), embedder)
    index(loaded, minilm_config(ws))  # the run loads the model itself
    manifests = [load_current(d) for d in (given, loaded)]
    assert all(m is not None and m.embedder == model_info() for m in manifests)
    assert all(m is not None and m.embedder.spec is None for m in manifests)

    def hashes(data: DataDir) -> list[str]:
        manifest = load_current(data)
        assert manifest is not None
        pages = load_pages(data, manifest.sources["docs"].pages_file)
        return [ref.content_hash for page in pages for ref in page.refs()]

    assert hashes(given) == hashes(loaded)


def test_the_commands_use_the_configured_embedder(tmp_path, server, capsys) -> None:
    ws = build_workspace(tmp_path / "ws")
    data = DataDir(tmp_path / "data")
    data.ensure()
    save_config(data, endpoint_config(ws, server))
    assert main(["--data", str(data.root), "index"]) == 0
    capsys.readouterr()
    asked = len(server.requests)
    assert main(["--data", str(data.root), "search", "what does error E1234 mean?", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["results"][0]["path"] == "faq.md"
    assert len(server.requests) == asked + 1  # the query, by the version's model


def test_model_list_of_the_shipped_model(tmp_path, embedder, capsys) -> None:
    ws = build_workspace(tmp_path / "ws")
    data = DataDir(tmp_path / "data")
    index(data, minilm_config(ws), embedder)
    assert main(["--data", str(data.root), "model", "list", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)[0]
    assert row["kind"] == "minilm" and row["identity"] == embedder.info.id
    assert row["served"] and row["dim"] == 384


def test_a_server_opened_on_an_endpoints_version(tmp_path, server) -> None:
    from docdex.server.boot import Boot, open_docs

    ws = build_workspace(tmp_path / "ws")
    data = DataDir(tmp_path / "data")
    index(data, endpoint_config(ws, server))
    docs = open_docs(data, Boot())  # as `docdex serve` opens it: the version's own model
    try:
        assert docs.search("what does error E1234 mean?", 3).results[0].path == "faq.md"
        status, body = docs.health()
        assert status == 200 and body["models"]["embedder"].startswith("openai:test-model:")
        assert body["models"]["dim"] == 384 and body["models"]["query_graph"] == "endpoint"
    finally:
        docs.holder.stop()


def test_an_index_built_with_an_export_directory(tmp_path, embedder, capsys) -> None:
    ws = build_workspace(tmp_path / "ws")
    folder = export_dir(tmp_path / "all-MiniLM-L6-v2")
    built_in, onnx = DataDir(tmp_path / "a"), DataDir(tmp_path / "b")
    index(built_in, minilm_config(ws), embedder)
    config = Config(
        settings=Settings(embedder="mini"),
        sources=[SourceConfig(name="docs", location=str(ws.bare))],
        models={"mini": OnnxEmbedder(path=str(folder))},
    )
    assert index(onnx, config).published
    manifest = load_current(onnx)
    assert manifest is not None and manifest.embedder.id.startswith("onnx:")
    engine = Engine.open(onnx, load_query_model(onnx))
    try:
        for query in QUERIES:
            expected = [h.chunk_id for h in search_index(built_in, embedder, query, 3).results]
            assert top_ids(engine, query) == expected, query
    finally:
        engine.close()
    assert main(["--data", str(onnx.root), "model", "list", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)[0]
    assert row["kind"] == "onnx" and row["served"] and row["identity"] == manifest.embedder.id


def test_minilm_int8_embeds_passages_with_the_int8_graph_under_its_own_identity(
    tmp_path, embedder
) -> None:
    from docdex.index_format.model_tables import ShippedEmbedder
    from docdex.model.choice import load_embedder
    from docdex.model.model_environment import ModelEnvironment

    int8 = load_embedder(
        ShippedEmbedder(),
        threads=1,
        window_tokens=256,
        window_overlap=32,
        model_environment=ModelEnvironment(),
    )
    # the vectors' revision is in the identity: the per-call graph's "+int8-passages" vectors
    # are never reused for the per-row graph's
    assert int8.graph == "passage-int8"
    assert int8.info.id == f"{embedder.info.id}+int8-passages-2"
    texts = ["The error code E1234 means the writer lock file is busy.", "Rotate the key."]
    fast, exact = int8.embed_texts(texts)[0], embedder.embed_texts(texts)[0]
    cosines = (fast * exact).sum(axis=1)
    assert cosines.min() > 0.97 and cosines.max() < 0.99999  # close, and not the same vectors

    ws = build_workspace(tmp_path / "ws")
    data = DataDir(tmp_path / "data")
    config = Config(
        settings=Settings(embedder="minilm-int8"),
        sources=[SourceConfig(name="docs", location=str(ws.bare))],
    )
    first = index(data, config)
    manifest = load_current(data)
    assert manifest is not None and manifest.embedder.spec == ShippedEmbedder()
    assert {s.model for s in manifest.segments} == {int8.info.id}
    engine = Engine.open(data, load_query_model(data))
    try:
        assert top_ids(engine, QUERIES[1])[0].startswith("docs:faq.md#")
    finally:
        engine.close()
    back = index(data, minilm_config(ws), embedder)  # another model: everything again
    assert back.version == first.version + 1
    assert back.sources[0].chunks_reused == 0 and back.sources[0].chunks_embedded == first.chunks
