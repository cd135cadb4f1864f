"""The OpenAI-compatible endpoint client against a real HTTP server on 127.0.0.1 backed by
the real model: the same vectors, its errors retried or named in one sentence. Waits are
injected (a recorded sleep) and a slow answer is one held by an event, so nothing here
depends on the machine's speed."""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import uuid

import msgspec
import numpy as np
import pytest

from docdex.index_format.model_tables import EndpointEmbedder, RerankEndpoint
from docdex.model.embedder import Embedder
from docdex.model.endpoint import (
    QUERY_COOLDOWN_S,
    QUERY_RETRIES,
    RemoteEmbedder,
    char_windows,
    embeddings_url,
    endpoint_info,
)
from docdex.model.protocol import EmbedderUnavailable
from docdex.model.rerank_endpoint import RemoteReranker

from embedserver import EmbeddingServer

TEXTS = [
    "Configure the enrollment status page timeout in Intune.",
    "Error 0x801C03F3 means the device was not found in Azure AD. " * 40,  # several windows
    "## Install\n\nRun `pip install docdex` and then `docdex serve --port 8080`.",
]


@pytest.fixture()
def server(embedder: Embedder):
    with EmbeddingServer(lambda texts: np.stack([embedder.embed_query(t) for t in texts])) as s:
        yield s


def client(server: EmbeddingServer, sleeps: list[float] | None = None, **options) -> RemoteEmbedder:
    spec = EndpointEmbedder(url=server.url, model="test-model", **options)
    info = endpoint_info(spec, 250, 40, sleep=_recorder(sleeps))
    return RemoteEmbedder(info, spec, sleep=_recorder(sleeps))


def _recorder(sleeps: list[float] | None):
    return sleeps.append if sleeps is not None else _no_sleep


def _no_sleep(_: float) -> None:
    raise AssertionError("no wait was expected")


def test_vectors_equal_the_models_own(server: EmbeddingServer, embedder: Embedder) -> None:
    remote = client(server, batch=2)
    assert remote.info.dim == 384  # learned from the probe's answer
    assert remote.info.id.startswith("openai:test-model:")
    vectors, owners = remote.embed_texts(TEXTS)
    windows = [w for t in TEXTS for w in char_windows(t, 1000, 1000 // 6)]
    assert len(windows) > len(TEXTS) and owners.tolist() == sorted(owners.tolist())
    expected = np.stack([embedder.embed_query(w) for w in windows])
    assert np.sum(vectors * expected, axis=1).min() >= 0.9999
    query = "how do I change the status page timeout?"
    assert float(remote.embed_query(query) @ embedder.embed_query(query)) >= 0.9999
    assert all(len(body["input"]) <= 2 for body in server.requests)  # batched


def test_prefixes_and_dimensions_are_sent(server: EmbeddingServer) -> None:
    remote = client(server, passage_prefix="search_document: ", query_prefix="search_query: ")
    remote.embed_texts(["a passage"])
    remote.embed_query("a question")
    assert server.requests[-2]["input"] == ["search_document: a passage"]
    assert server.requests[-1]["input"] == ["search_query: a question"]
    sized = EndpointEmbedder(url=server.url, model="m", dimensions=384)
    assert endpoint_info(sized, 250, 40).dim == 384  # told: nothing is asked
    assert len(server.requests) == 3


def test_input_types_are_sent_for_servers_that_choose_the_prefix(embedder: Embedder) -> None:
    prefixes = {"query": "query: ", "passage": "passage: "}
    with EmbeddingServer(
        lambda texts: np.stack([embedder.embed_query(t) for t in texts]), input_types=prefixes
    ) as server:
        typed = client(server, query_input_type="query", passage_input_type="passage")
        vectors, _ = typed.embed_texts(["Rotate the keys every month."])
        query = typed.embed_query("how often are keys rotated?")
    assert server.input_types == ["passage", "passage", "query"]  # the probe is a passage
    assert [body["input"] for body in server.requests[1:]] == [
        ["Rotate the keys every month."],
        ["how often are keys rotated?"],
    ]  # no prefix of docdex's own: the server adds its own
    assert (
        float(vectors[0] @ embedder.embed_query("passage: Rotate the keys every month.")) > 0.9999
    )
    assert float(query @ embedder.embed_query("query: how often are keys rotated?")) > 0.9999
    untyped = EndpointEmbedder(url=server.url, model="test-model", dimensions=384)
    typed_sized = msgspec.structs.replace(untyped, passage_input_type="passage")
    assert endpoint_info(typed_sized, 250, 40).id != endpoint_info(untyped, 250, 40).id
    old_options = ["test-model", "", "", 1000, 384, ""]  # a table written before input types
    old_digest = hashlib.sha256(json.dumps(old_options).encode()).hexdigest()
    assert endpoint_info(untyped, 250, 40).sha256 == old_digest  # its vectors are kept


def test_a_429_is_retried_after_what_the_server_says(server: EmbeddingServer) -> None:
    sleeps: list[float] = []
    remote = client(server, sleeps)
    server.behaviour.fail_with = [429]
    server.behaviour.retry_after = "3"
    before = len(server.requests)
    assert remote.embed_texts(["retried"])[0].shape == (1, 384)
    assert len(server.requests) - before == 2 and sleeps == [3.0]


def test_5xx_backs_off_then_fails_in_one_sentence(server: EmbeddingServer) -> None:
    sleeps: list[float] = []
    remote = client(server, sleeps, retries=3)
    server.behaviour.fail_always = 500
    with pytest.raises(EmbedderUnavailable) as caught:
        remote.embed_texts(["never"])
    message = str(caught.value)
    assert f"the embedder at {server.url}/embeddings answered HTTP 500" in message
    assert "after 4 attempts" in message and "\n" not in message
    assert sleeps == [0.5, 1.0, 2.0]  # doubling


def test_a_4xx_is_not_retried(server: EmbeddingServer) -> None:
    remote = client(server)
    server.behaviour.fail_with = [400]
    with pytest.raises(EmbedderUnavailable, match="answered HTTP 400 Bad Request: .*induced"):
        remote.embed_query("bad")


def test_a_dead_server_is_named(server: EmbeddingServer) -> None:
    sleeps: list[float] = []
    remote = client(server, sleeps, retries=1)
    server.die()
    with pytest.raises(EmbedderUnavailable, match=r"cannot be reached .*after 2 attempts"):
        remote.embed_query("anyone?")
    assert sleeps == [0.5]


def test_an_answer_past_the_time_limit_fails(server: EmbeddingServer) -> None:
    remote = client(server, retries=0, timeout_s=0.2)
    server.behaviour.hold = threading.Event()  # set when the server stops
    with pytest.raises(EmbedderUnavailable, match=r"did not answer within its time limit \(0.2 s"):
        remote.embed_query("slow")


def test_the_key_comes_from_the_variable_named(server: EmbeddingServer) -> None:
    spec = EndpointEmbedder(
        url=server.url, model="m", api_key_env="DOCDEX_TEST_KEY", dimensions=384
    )
    info = endpoint_info(spec, 250, 40)
    RemoteEmbedder(info, spec, environ={"DOCDEX_TEST_KEY": "s3cret"}).embed_query("q")
    assert server.headers[-1]["Authorization"] == "Bearer s3cret"
    with pytest.raises(EmbedderUnavailable, match=r"needs an API key in \$DOCDEX_TEST_KEY"):
        RemoteEmbedder(info, spec, environ={}).embed_query("q")


def test_another_dimension_is_refused(server: EmbeddingServer) -> None:
    spec = EndpointEmbedder(url=server.url, model="m", dimensions=768)
    remote = RemoteEmbedder(endpoint_info(spec, 250, 40), spec)
    with pytest.raises(EmbedderUnavailable, match="vectors of 384 dimensions.*made 768"):
        remote.embed_query("q")


def test_addresses() -> None:
    assert embeddings_url("http://h:11434") == "http://h:11434/v1/embeddings"
    assert embeddings_url("http://h:11434/v1/") == "http://h:11434/v1/embeddings"
    assert embeddings_url("http://h/api/embeddings") == "http://h/api/embeddings"
    assert char_windows("short", 10, 2) == ["short"]
    parts = char_windows("word " * 100, 50, 10)
    assert all(len(p) <= 50 for p in parts) and "".join(parts).count("word") >= 100


@pytest.mark.parametrize("path", ["/rerank", "/v1/rerank"])
def test_rerank_endpoints(server: EmbeddingServer, path: str) -> None:
    reranker = RemoteReranker(RerankEndpoint(url=server.base + path, model="r"))
    texts = ["the writer lock is busy", "bananas are yellow", "another indexer holds the lock"]
    scores = reranker.scores("why is the lock busy?", texts)
    assert len(scores) == 3 and scores[1] < min(scores[0], scores[2])
    sent = server.requests[-1]
    assert ("documents" in sent) == path.startswith("/v1/")


def test_a_query_model_fails_at_once_while_the_endpoint_rests(server: EmbeddingServer) -> None:
    now = [100.0]
    spec = EndpointEmbedder(url=server.url, model="m", dimensions=384, retries=0)
    remote = RemoteEmbedder(
        endpoint_info(spec, 250, 40), spec, cooldown_s=30.0, clock=lambda: now[0]
    )
    server.behaviour.fail_with = [503]
    with pytest.raises(EmbedderUnavailable, match="HTTP 503"):
        remote.embed_query("first")
    asked = len(server.requests)
    now[0] += 29.0
    with pytest.raises(EmbedderUnavailable, match="HTTP 503"):  # the same sentence, no request
        remote.embed_query("second")
    assert len(server.requests) == asked
    now[0] += 2.0
    assert remote.embed_query("third").shape == (384,)  # rested: asked again, and it answers
    assert len(server.requests) == asked + 1


def test_queries_get_short_retries_and_time_limits() -> None:
    from docdex.model.choice import query_embedder
    from docdex.model.model_environment import ModelEnvironment

    spec = EndpointEmbedder(url="http://127.0.0.1:9/v1", model="m", dimensions=8, timeout_s=60)
    model = query_embedder(endpoint_info(spec, 250, 40), 1, ModelEnvironment())
    assert isinstance(model, RemoteEmbedder)
    assert (model.spec.retries, model.spec.timeout_s, model.outage.cooldown_s) == (1, 10.0, 30.0)
    assert model.info.id == endpoint_info(spec, 250, 40).id  # the same identity


# --- secrets, redirects, bounds, values -------------------------------------------------------


def keyed(server: EmbeddingServer, key: str, **options) -> RemoteEmbedder:
    spec = EndpointEmbedder(
        url=server.url, model="m", api_key_env="DOCDEX_TEST_KEY", dimensions=384, **options
    )
    return RemoteEmbedder(endpoint_info(spec, 250, 40), spec, environ={"DOCDEX_TEST_KEY": key})


@pytest.mark.parametrize("key", [f"sk-test-{uuid.uuid4()}", "plainwordsnodigits"])
def test_an_echoed_key_never_reaches_the_error(server: EmbeddingServer, key: str) -> None:
    server.behaviour.fail_with = [401]
    server.behaviour.echo_key = True
    with pytest.raises(EmbedderUnavailable) as caught:
        keyed(server, key).embed_query("q")
    message = str(caught.value)
    assert "answered HTTP 401 Unauthorized: " in message and "Incorrect API key" in message
    assert key not in message and f"Bearer {key}" not in message
    assert "[redacted]" in message


def test_an_echoed_key_never_reaches_a_rerank_error(server: EmbeddingServer) -> None:
    key = f"sk-test-{uuid.uuid4()}"
    spec = RerankEndpoint(url=server.base + "/rerank", api_key_env="DOCDEX_TEST_KEY", retries=0)
    server.behaviour.fail_with = [403]
    server.behaviour.echo_key = True
    with pytest.raises(EmbedderUnavailable, match="answered HTTP 403") as caught:
        RemoteReranker(spec, environ={"DOCDEX_TEST_KEY": key}).scores("q", ["a text"])
    assert key not in str(caught.value) and "[redacted]" in str(caught.value)


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_refused_and_the_key_goes_nowhere(
    server: EmbeddingServer, embedder: Embedder, status: int
) -> None:
    with EmbeddingServer(lambda texts: np.stack([embedder.embed_query(t) for t in texts])) as other:
        server.behaviour.redirect = (status, other.url + "/embeddings")
        with pytest.raises(EmbedderUnavailable) as caught:
            keyed(server, "s3cret-key").embed_query("q")
        assert other.requests == [] and other.headers == []  # nothing reached it, no key
    message = str(caught.value)
    assert f"answered HTTP {status} " in message and "follows no redirect" in message
    assert other.url in message and "s3cret-key" not in message
    assert len(server.requests) == 1  # not retried


def test_a_rerank_redirect_is_refused(server: EmbeddingServer, embedder: Embedder) -> None:
    with EmbeddingServer(lambda texts: np.stack([embedder.embed_query(t) for t in texts])) as other:
        server.behaviour.redirect = (307, other.base + "/rerank")
        spec = RerankEndpoint(url=server.base + "/rerank", api_key_env="DOCDEX_TEST_KEY")
        with pytest.raises(EmbedderUnavailable, match="HTTP 307 .*follows no redirect"):
            RemoteReranker(spec, environ={"DOCDEX_TEST_KEY": "k"}).scores("q", ["a text"])
        assert other.headers == []


def test_an_oversized_answer_is_refused(server: EmbeddingServer) -> None:
    remote = client(server, dimensions=384)
    server.behaviour.padding = 3_000_000  # one 384-dimension vector is about 10 KB
    with pytest.raises(EmbedderUnavailable, match=r"answered more than [\d,]+ bytes for 1 input"):
        remote.embed_query("q")
    server.behaviour.padding = 200_000  # within the bound: answered
    assert remote.embed_query("q").shape == (384,)


def test_an_oversized_rerank_answer_is_refused(server: EmbeddingServer) -> None:
    reranker = RemoteReranker(RerankEndpoint(url=server.base + "/v1/rerank", retries=0))
    server.behaviour.padding = 3_000_000
    with pytest.raises(EmbedderUnavailable, match=r"answered more than [\d,]+ bytes for 2"):
        reranker.scores("q", ["a text", "another"])


@pytest.mark.parametrize(
    ("poison", "said"),
    [("nan", "not finite"), ("inf", "not finite"), ("zero", "all zeros")],
)
def test_vectors_that_are_not_finite_or_zero_are_refused(
    server: EmbeddingServer, poison: str, said: str
) -> None:
    remote = client(server, dimensions=384)
    server.behaviour.poison = poison
    with pytest.raises(EmbedderUnavailable, match=f"the embedder at .* answered a vector .*{said}"):
        remote.embed_texts(["a passage", "another"])


def test_scores_that_are_not_finite_are_refused(server: EmbeddingServer) -> None:
    reranker = RemoteReranker(RerankEndpoint(url=server.base + "/rerank", retries=0))
    server.behaviour.poison = "nan"
    with pytest.raises(EmbedderUnavailable, match="answered a score that is not finite"):
        reranker.scores("q", ["a text", "another"])


# --- failures reported once, and a reranker that rests -----------------------------------------


def test_a_failure_and_its_recovery_are_logged_once(server: EmbeddingServer, caplog) -> None:
    now = [100.0]
    spec = EndpointEmbedder(url=server.url, model="m", dimensions=384, retries=0)
    remote = RemoteEmbedder(
        endpoint_info(spec, 250, 40), spec, cooldown_s=30.0, clock=lambda: now[0]
    )
    server.behaviour.fail_always = 503
    caplog.set_level(logging.INFO, logger="docdex")
    for _ in range(3):  # the first asks, the next fail at once while it rests
        with pytest.raises(EmbedderUnavailable):
            remote.embed_query("q")
        now[0] += 31.0  # rested: asked again, still failing
    server.behaviour.fail_always = 0
    for _ in range(3):
        remote.embed_query("q")
    lines = [r.getMessage() for r in caplog.records]
    failing = [line for line in lines if "is failing" in line]
    back = [line for line in lines if "answers again" in line]
    assert len(failing) == 1 and "HTTP 503" in failing[0] and server.url in failing[0]
    assert len(back) == 1 and len(lines) == 2


def test_a_rerank_endpoint_rests_after_a_failure(server: EmbeddingServer, caplog) -> None:
    from docdex.model.rerank_endpoint import RERANK_TIMEOUT_S

    now = [100.0]
    sleeps: list[float] = []
    spec = RerankEndpoint(url=server.base + "/rerank", retries=5, timeout_s=60)
    reranker = RemoteReranker.for_queries(spec, sleep=sleeps.append, clock=lambda: now[0])
    assert (reranker.spec.retries, reranker.spec.timeout_s) == (QUERY_RETRIES, RERANK_TIMEOUT_S)
    assert reranker.failure is None
    caplog.set_level(logging.INFO, logger="docdex")
    server.behaviour.fail_always = 500
    with pytest.raises(EmbedderUnavailable, match="after 2 attempts"):
        reranker.scores("q", ["a text"])
    asked = len(server.requests)
    assert asked == 2 and sleeps == [0.5]  # one retry
    failure = reranker.failure
    assert failure is not None and "HTTP 500" in failure.error and failure.since
    now[0] += QUERY_COOLDOWN_S - 1
    with pytest.raises(EmbedderUnavailable, match="HTTP 500"):
        reranker.scores("q", ["a text"])
    assert len(server.requests) == asked  # resting: not asked
    server.behaviour.fail_always = 0
    now[0] += 2
    assert len(reranker.scores("q", ["a text"])) == 1 and reranker.failure is None
    assert len([r for r in caplog.records if "is failing" in r.getMessage()]) == 1
