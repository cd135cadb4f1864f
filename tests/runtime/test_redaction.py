"""What docdex says and writes holds no secret: `redact` removes the key an endpoint was
sent and whatever is shaped like a key from the texts gateways answer, and leaves the rest
of a sentence (addresses, commits, paths, counts) as it was; what docdex writes of a
failure (state/last_failure.json, a source's `last_error` in a version) is redacted as it is
written, whichever embedder made the sentence."""

from __future__ import annotations

import pytest

from docdex.index_format import metrics
from docdex.index_format.config import load_config
from docdex.index_format.layout import DataDir
from docdex.index_format.store import load_current
from docdex.indexer.run.pipeline import index_sources
from docdex.model.embedder import Embedder
from docdex.model.protocol import EmbedderUnavailable
from docdex.runtime.redaction import REDACTED, redact

from fixtures import FAQ, index_workspace, pushed_workspace

SECRETS = [
    ("Incorrect API key provided: sk-proj-Ab12Cd34Ef56Gh78.", "sk-proj-Ab12Cd34Ef56Gh78"),
    ("Authorization: Bearer abc.def-ghi_jkl was refused", "abc.def-ghi_jkl"),
    ('{"detail": "invalid api_key \'4f9c0e1d2b3a4f5e6d7c\'"}', "4f9c0e1d2b3a4f5e6d7c"),
    ("token=deadbeefcafe0123456789 expired", "deadbeefcafe0123456789"),
    ("the key provided is Zq8Xw7Vu6Ts5Rq4P", "Zq8Xw7Vu6Ts5Rq4P"),
    ("Basic dXNlcjpwYXNzd29yZA== refused", "dXNlcjpwYXNzd29yZA=="),
    ("at https://admin:hunter2@gateway.example/v1 refused", "admin:hunter2"),
    ("unknown eyJhbGciOiJIUzI1NiJ9AbCdEfGh0123456789xyz here", "eyJhbGciOiJIUzI1NiJ9AbCd"),
]


@pytest.mark.parametrize(("text", "secret"), SECRETS)
def test_what_is_shaped_like_a_secret_is_redacted(text: str, secret: str) -> None:
    redacted = redact(text)
    assert secret not in redacted and REDACTED in redacted


def test_the_secrets_given_are_redacted_whatever_their_shape() -> None:
    text = "the gateway said: wrong key plainwords (sent Bearer plainwords)"
    assert redact(text, ["plainwords"]) == (
        f"the gateway said: wrong key {REDACTED} (sent Bearer {REDACTED})"
    )


@pytest.mark.parametrize(
    "text",
    [
        "the embedder at http://127.0.0.1:8080/v1/embeddings answered HTTP 500 Internal "
        "Server Error after 5 attempts",
        "commit 3f786850e387550fdab836ed7e6dc881de23001b is not in the repository",
        "cannot read /srv/docs/guide/install.md: Permission denied",
        "the reranker needs an API key in $RERANK_API_KEY (its api_key_env), which is not set",
        "chunks are embedded in 250-token windows; the token limited to some sources",
        "a basic check failed at git@github.com:org/docs.git",
    ],
)
def test_ordinary_sentences_are_left_as_they_are(text: str) -> None:
    assert redact(text) == text


def test_a_failure_recorded_under_state_holds_no_secret(tmp_path) -> None:
    data = DataDir(tmp_path / "data")
    data.ensure()
    said = "the embedder at http://h/v1/embeddings answered HTTP 401: key sk-live-0123456789abcdef"
    metrics.record_failure(data, said, 1.0, source="docs")
    written = metrics.last_failure_path(data).read_text()
    assert "sk-live-0123456789abcdef" not in written and REDACTED in written
    failure = metrics.read_last_failure(data)
    assert failure is not None and failure.error.startswith("the embedder at http://h/v1/")
    metrics.write_last_failure(data, metrics.IngestionFailure("2026-12-01T10:00:00Z", said))
    assert "sk-live-0123456789abcdef" not in metrics.last_failure_path(data).read_text()


class KeyEchoingEmbedder:
    """The real model, except that embedding fails with a sentence quoting a key, as an
    embedder that did not redact its endpoint's answer would."""

    KEY = "sk-live-9f8e7d6c5b4a39281706"

    def __init__(self, model: Embedder) -> None:
        self.info, self.graph, self.model = model.info, model.graph, model

    def embed_texts(self, texts, progress=None):
        raise EmbedderUnavailable(f"the gateway answered HTTP 401: invalid key {self.KEY}")

    def embed_query(self, text):
        return self.model.embed_query(text)


def test_a_source_failure_recorded_in_a_version_holds_no_secret(tmp_path, embedder) -> None:
    ws = pushed_workspace(tmp_path / "ws", {"faq.md": FAQ})
    data = DataDir(tmp_path / "data")
    index_workspace(data, ws, embedder)
    ws.write("faq.md", FAQ + "\n## Quokka\n\nThe quokka setting.\n")
    ws.commit_and_push("quokka")
    config = load_config(data)
    # with a time budget, a source's text is embedded before the next source is read, so
    # an embedder that fails fails that source alone (as an endpoint does)
    report = index_sources(
        data, config, embedder=KeyEchoingEmbedder(embedder), source_timeout_s=3600
    )
    assert [s.status for s in report.sources] == ["failed"]
    manifest = load_current(data)
    assert manifest is not None and manifest.sources["docs"].last_error.startswith("the gateway")
    written = [data.manifest(manifest.version), metrics.last_failure_path(data)]
    for path in written:
        text = path.read_text()
        assert KeyEchoingEmbedder.KEY not in text and REDACTED in text, path
