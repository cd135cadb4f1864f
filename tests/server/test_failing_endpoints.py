"""Endpoints that searches use, failing: a rerank endpoint that fails, is gone or hangs
costs a search one short attempt and one retry at most; then it rests and searches answer
in their fused order without asking it, until the rest is over. /health and list_sources
say which endpoint is failing, why (redacted) and since when, while it is; the query
embedder's endpoint is reported the same way, and each failure is logged once, not once a
search. Clocks and sleeps are injected: nothing here depends on the machine's speed."""

from __future__ import annotations

import logging
import uuid
from concurrent.futures import Future

import msgspec
import numpy as np
import pytest

from docdex.index_format.config import Config, Settings, SourceConfig, load_config, save_config
from docdex.index_format.layout import DataDir
from docdex.index_format.model_tables import EndpointEmbedder, RerankEndpoint
from docdex.index_format.store import load_current
from docdex.indexer.run.pipeline import index_sources
from docdex.model.embedder import Embedder
from docdex.model.endpoint import QUERY_COOLDOWN_S, QUERY_RETRIES, RemoteEmbedder
from docdex.server.answers.source_limits import SourceLimit
from docdex.server.boot import Boot, open_docs
from docdex.server.engine import Engine, EngineSettings, Scope
from docdex.server.engine.rerank import EndpointReranker

from embedserver import EmbeddingServer
from fixtures import build_workspace, index_workspace

QUERIES = ["what does error E1234 mean?", "why is my index stale", "install directory"]
KEY_VARIABLE = "DOCDEX_TEST_ENDPOINT_KEY"


@pytest.fixture()
def server(embedder: Embedder):
    with EmbeddingServer(lambda texts: np.stack([embedder.embed_query(t) for t in texts])) as s:
        yield s


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _no_sleep(_: float) -> None:
    raise AssertionError("no wait was expected")


def top_ids(engine: Engine, query: str) -> list[str]:
    return [hit.chunk_id for hit in engine.search(query, 5, Scope()).results]


@pytest.mark.parametrize("fault", ["503", "gone"])
def test_a_failing_rerank_endpoint_costs_one_retry_then_rests(
    tmp_path, embedder, server, fault
) -> None:
    data = DataDir(tmp_path / "data")
    index_workspace(data, build_workspace(tmp_path / "ws"), embedder)
    clock, sleeps = Clock(), []
    spec = RerankEndpoint(url=server.base + "/rerank", retries=4, timeout_s=60)
    reranker = EndpointReranker.cached(spec, sleep=sleeps.append, clock=clock)
    from docdex.model.rerank_endpoint import RERANK_TIMEOUT_S

    bounds = (reranker.remote.spec.retries, reranker.remote.spec.timeout_s)
    assert bounds == (QUERY_RETRIES, RERANK_TIMEOUT_S)  # a search's, not the table's 4 and 60
    fused = Engine.open(data, embedder, settings=EngineSettings(reranker="none"))
    try:
        reranked = fused.with_settings(EngineSettings(reranker="rr", rerank_endpoint=spec))
        if fault == "503":
            server.behaviour.fail_always = 503
        else:
            server.die()  # a closed port
        assert top_ids(reranked, QUERIES[0]) == top_ids(fused, QUERIES[0])  # the fused order
        asked = len(server.requests)
        assert sleeps == [0.5] and asked == (2 if fault == "503" else 0)  # one retry
        assert set(reranked.models.failing()) == {"reranker"}
        clock.now += QUERY_COOLDOWN_S - 1
        for query in QUERIES:  # resting: answered at once, the endpoint not asked
            assert top_ids(reranked, query) == top_ids(fused, query)
        assert len(server.requests) == asked and sleeps == [0.5]
        if fault == "503":
            server.behaviour.fail_always = 0
            clock.now += 2  # rested: asked again, and it answers
            top_ids(reranked, QUERIES[0])
            assert len(server.requests) == asked + 1 and reranked.models.failing() == {}
    finally:
        fused.close()


def reranked_docs(tmp_path, embedder, spec: RerankEndpoint):
    """build_workspace indexed, its docdex.toml reranking with `spec`, opened as the server
    opens it."""
    data = DataDir(tmp_path / "data")
    index_workspace(data, build_workspace(tmp_path / "ws"), embedder)
    config = load_config(data)
    settings = msgspec.structs.replace(config.settings, reranker="rr")
    save_config(data, msgspec.structs.replace(config, settings=settings, models={"rr": spec}))
    model: Future = Future()
    model.set_result(embedder)
    return open_docs(data, Boot(), model)


def test_health_and_list_sources_say_the_reranker_is_failing(
    tmp_path, embedder, server, caplog
) -> None:
    key = f"sk-test-{uuid.uuid4()}"
    clock = Clock()
    spec = RerankEndpoint(url=server.base + "/rerank", api_key_env=KEY_VARIABLE, retries=0)
    EndpointReranker.cached(spec, environ={KEY_VARIABLE: key}, clock=clock, sleep=_no_sleep)
    docs = reranked_docs(tmp_path, embedder, spec)
    try:
        assert docs.search(QUERIES[0], 3).results
        assert docs.health()[1]["status"] == "ok" and docs.list_sources().failing_models == []
        server.behaviour.fail_always = 401
        server.behaviour.echo_key = True
        caplog.set_level(logging.INFO, logger="docdex")
        for query in QUERIES:
            assert docs.search(query, 3).results  # answered, in the fused order
        status, health = docs.health()
        assert status == 200 and health["status"] == "failing"
        failure = health["failing_models"]["reranker"]
        assert f"the reranker at {server.base}/rerank answered HTTP 401" in failure["error"]
        assert failure["since"] and health["failed_sources"] == {}
        assert health["status_detail"] == (
            f"the reranker is failing, so hits keep their fused order: {failure['error']}"
        )
        (listed,) = docs.list_sources().failing_models
        assert (listed.role, listed.error, listed.since) == ("reranker", *failure.values())
        limited = docs.for_caller(SourceLimit(frozenset({"docs"})))
        assert "withheld" in limited.health()[1]["failing_models"]["reranker"]["error"]
        assert "withheld" in limited.list_sources().failing_models[0].error
        said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(said) == 1 and "the reranker is failing" in said[0]  # once, not per search
        answers = msgspec.json.encode([health, docs.list_sources()]).decode() + said[0]
        assert key not in answers and "[redacted]" in failure["error"]

        server.behaviour.fail_always = 0
        clock.now += QUERY_COOLDOWN_S + 1
        assert docs.search(QUERIES[0], 3).results
        assert docs.health()[1]["status"] == "ok" and docs.list_sources().failing_models == []
        assert any("answers again" in r.getMessage() for r in caplog.records)
    finally:
        docs.holder.stop()


def test_a_failing_query_embedder_is_reported_and_logged_once(
    tmp_path, embedder, server, caplog
) -> None:
    data = DataDir(tmp_path / "data")
    spec = EndpointEmbedder(url=server.url, model="test-model", retries=0, batch=8)
    ws = build_workspace(tmp_path / "ws")
    config = Config(
        settings=Settings(embedder="remote"),
        sources=[SourceConfig(name="docs", location=str(ws.bare))],
        models={"remote": spec},
    )
    data.ensure()
    save_config(data, config)
    assert index_sources(data, config).published
    manifest = load_current(data)
    assert manifest is not None and manifest.embedder.spec == spec
    clock = Clock()
    query_model = RemoteEmbedder(
        manifest.embedder, spec, sleep=_no_sleep, cooldown_s=QUERY_COOLDOWN_S, clock=clock
    )
    model: Future = Future()
    model.set_result(query_model)
    docs = open_docs(data, Boot(), model)
    try:
        server.behaviour.fail_always = 500
        caplog.set_level(logging.INFO, logger="docdex")
        for _ in range(2):
            for query in QUERIES:
                assert docs.search(query, 3).results  # BM25 answers alone
            clock.now += QUERY_COOLDOWN_S + 1  # rested, asked again: still failing
        said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(said) == 1 and "the embedder is failing" in said[0]
        health = docs.health()[1]
        assert health["status"] == "failing" and set(health["failing_models"]) == {"embedder"}
        assert health["status_detail"].startswith(
            "the query embedder is failing, so queries are answered by BM25 alone: "
            f"the embedder at {server.url}/embeddings answered HTTP 500"
        )
        assert [m.role for m in docs.list_sources().failing_models] == ["embedder"]
        server.behaviour.fail_always = 0
        assert docs.search(QUERIES[0], 3).results
        assert docs.health()[1]["status"] == "ok"
    finally:
        docs.holder.stop()
