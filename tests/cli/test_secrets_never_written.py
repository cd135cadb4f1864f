"""The key of a configured endpoint is never said or written. A whole session with a known
key, against a real endpoint on 127.0.0.1 that echoes the key it was sent in its error
bodies as gateways do (and at other times answers): `docdex index` failing and then
succeeding, `docdex serve` with its log captured while the embedder and the reranker fail
(/health, /api/sources, /api/search, the search page, `list_sources` and `search_docs`
over a real MCP client), `docdex inspect`, `docdex verify`, `docdex model list`. Then every
captured output, the server's log and every file under the data directory (state/ with
it) are searched for the key and for `Bearer <key>`: neither is anywhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np

from docdex.index_format.config import Config, Settings, SourceConfig, save_config
from docdex.index_format.layout import DataDir
from docdex.index_format.model_tables import EndpointEmbedder, RerankEndpoint
from docdex.serverproc import ServeProcess

from embedserver import EmbeddingServer
from fixtures import FAQ_E1234, build_workspace, http
from gitrepo import Workspace

KEY_VARIABLE = "DOCDEX_SECRET_TEST_KEY"


def test_the_key_is_never_said_or_written(tmp_path: Path, embedder) -> None:
    key = f"sk-test-{uuid.uuid4()}"
    said: list[str] = []  # every output captured
    with EmbeddingServer(lambda texts: np.stack([embedder.embed_query(t) for t in texts])) as end:
        ws, data = configured(tmp_path, end)
        environ = {**os.environ, KEY_VARIABLE: key}

        def docdex(*args: str) -> int:
            done = subprocess.run(
                [sys.executable, "-m", "docdex.cli", "--data", str(data.root), *args],
                env=environ,
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
            said.append(done.stdout + done.stderr)
            return done.returncode

        end.behaviour.echo_key = True
        end.behaviour.fail_always = 401
        assert docdex("index") == 1  # failing once
        end.behaviour.fail_always = 0
        assert docdex("index") == 0  # then succeeding
        ws.write("faq.md", FAQ_E1234 + "\n## Quokka\n\nThe quokka setting turns on marsupials.\n")
        ws.commit_and_push("quokka")
        end.behaviour.fail_always = 401
        assert docdex("index") == 1  # the source fails; its last pages keep serving
        with ServeProcess(data.root, tmp_path / "serve.log", environ=environ) as server:
            server.wait_serving()
            said += answers(server)
            health = server.health() or {}
            assert docdex("inspect", "source", "docs") == 0
            assert docdex("inspect") == 0
            assert docdex("verify") == 0
            assert docdex("model", "list") == 1  # the endpoint fails: it says why
            end.behaviour.fail_always = 0
            assert docdex("index") == 0  # caught up
            said += answers(server)
            server.stop()
            said.append(server.output())
        echoed = [h.get("Authorization") for h in end.headers]
    assert f"Bearer {key}" in echoed  # the endpoint was sent the key, and echoed it
    for text in said:
        assert key not in text and f"Bearer {key}" not in text, text
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.is_relative_to(data.root)]
    assert any(p.is_relative_to(data.state) for p in written)
    holding = [p for p in written if key.encode() in p.read_bytes()]
    assert holding == []
    assert any("[redacted]" in text for text in said)  # what it echoed was said, redacted
    assert health["status"] == "failing" and health["failed_sources"]  # said while failing
    assert set(health.get("failing_models", ())) == {"embedder", "reranker"}


def configured(tmp_path: Path, end: EmbeddingServer) -> tuple[Workspace, DataDir]:
    """build_workspace as the source "docs", embedded and reranked by `end` with the key
    in KEY_VARIABLE."""
    ws = build_workspace(tmp_path / "ws")
    data = DataDir(tmp_path / "data")
    data.ensure()
    models = {
        "remote": EndpointEmbedder(
            url=end.url, model="test-model", api_key_env=KEY_VARIABLE, retries=0, dimensions=384
        ),
        "rr": RerankEndpoint(url=end.base + "/rerank", api_key_env=KEY_VARIABLE, retries=0),
    }
    settings = Settings(embedder="remote", reranker="rr")
    sources = [SourceConfig(name="docs", location=str(ws.bare))]
    save_config(data, Config(settings=settings, sources=sources, models=models))
    return ws, data


def answers(server: ServeProcess) -> list[str]:
    """What a client reads: /health, the JSON routes, the page, two MCP tools."""
    paths = [
        "/health",
        "/api/sources",
        "/api/search?q=what+does+error+E1234+mean",
        "/api/page?doc_id=docs:faq.md",
        "/",
        "/clients.txt",
    ]
    out = [http(server.url + path).body.decode() for path in paths]
    results = server.call_tools([("list_sources", {}), ("search_docs", {"query": "E1234"})])
    for result in results:
        assert not result.is_error
        out.append(json.dumps(result.structured_content) + str(result.content))
    return out
