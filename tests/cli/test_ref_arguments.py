"""A `ref` argument takes every name docdex prints for a ref: the short name (`v2.1`), the
entry's name (`docs@v2.1`, as list_sources and `docdex inspect` show it) and the full name
(`refs/tags/v2.1`), in `docdex search` and `docdex inspect`, over /api/* and in the MCP
tools; a ref nothing indexes is refused with what the caller can run to see the refs."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import Future

import pytest
from mcp import Client
from starlette.applications import Starlette
from starlette.testclient import TestClient

from docdex.cli import main
from docdex.index_format.config import Config, SourceConfig, save_config
from docdex.index_format.layout import DataDir
from docdex.indexer.run.pipeline import index_sources
from docdex.server.boot import Boot, open_docs
from docdex.server.http.routes import http_routes
from docdex.server.mcp.tools import build_mcp

from refrepo import PORTS, QUESTION, workspace_with_refs

NAMES = {  # every name of one entry
    "docs@release/1.0": ["release/1.0", "docs@release/1.0", "refs/heads/release/1.0"],
    "docs@v2.1": ["v2.1", "docs@v2.1", "refs/tags/v2.1"],
    "docs": ["", "main", "docs", "docs@main", "refs/heads/main"],
}


@pytest.fixture(scope="module")
def data(tmp_path_factory, embedder) -> DataDir:
    root = tmp_path_factory.mktemp("ref-arguments")
    ws = workspace_with_refs(root / "repo")
    data = DataDir(root / "data")
    source = SourceConfig(name="docs", location=str(ws.bare), refs=["release/1.0", "v2.*"])
    config = Config(sources=[source])
    data.ensure()
    save_config(data, config)
    assert index_sources(data, config, embedder=embedder).published
    return data


@pytest.fixture(scope="module")
def docs(data, embedder):
    model: Future = Future()
    model.set_result(embedder)
    docs = open_docs(data, Boot(), model)
    yield docs
    docs.holder.stop()


def cli_search(data: DataDir, ref: str, capsys) -> tuple[int, list[dict], str]:
    code = main(["--data", str(data.root), "search", QUESTION, "-n", "3", "--ref", ref, "--json"])
    out, err = capsys.readouterr()
    return code, json.loads(out)["results"] if code == 0 else [], err


def test_docdex_search_takes_every_name_of_a_ref(data, capsys):
    for key, names in NAMES.items():
        for name in names:
            code, hits, err = cli_search(data, name, capsys)
            assert code == 0, (name, err)
            assert {hit["source"] for hit in hits} == {key}, name
            assert f"port {PORTS[key]} by default" in hits[0]["text"], name


def test_docdex_inspect_takes_a_ref(data, capsys):
    for key, names in NAMES.items():
        for name in names:
            args = ["--data", str(data.root), "inspect", "doc", "docs:guide/install.md"]
            assert main([*args, "--ref", name, "--json"]) == 0, capsys.readouterr().err
            assert json.loads(capsys.readouterr().out)["page"]["source"] == key
            source = ["--data", str(data.root), "inspect", "source", "docs", "--ref", name]
            assert main([*source, "--json"]) == 0, capsys.readouterr().err
            assert json.loads(capsys.readouterr().out)["state"]["name"] == key


def test_the_cli_points_to_its_own_commands(data, capsys):
    for ref in ("v9.9", "docs@v9.9", "other@v2.1"):
        code, _, err = cli_search(data, ref, capsys)
        assert code == 1 and f"no source indexes ref {ref!r}" in err
        assert "`docdex inspect`" in err and "list_sources" not in err
    code = main(["--data", str(data.root), "inspect", "doc", "docs:faq.md", "--ref", "v9.9"])
    err = capsys.readouterr().err
    assert code == 1 and "'v9.9'" in err and "release/1.0" in err and "list_sources" not in err


def test_the_mcp_tools_and_the_http_routes_take_every_name_of_a_ref(docs):
    async def calls(client):
        answers = {}
        for key, names in NAMES.items():
            for name in names:
                search = {"query": QUESTION, "num_results": 3, "ref": name}
                query = {"ref": name}
                page = {"doc_id": "docs:guide/install.md", "ref": name}
                answers[key, name] = [
                    await client.call_tool("search_docs", search),
                    await client.call_tool("query_docs", query),
                    await client.call_tool("get_document", page),
                ]
        unknown = await client.call_tool("search_docs", {"query": QUESTION, "ref": "docs@v9"})
        return answers, unknown

    async def go():
        async with Client(build_mcp(docs)) as client:
            return await calls(client)

    answers, unknown = asyncio.run(go())
    for (key, name), (search, query, page) in answers.items():
        for result in (search, query, page):
            assert not result.is_error, (name, result.content[0].text)
        hits = search.structured_content["results"]
        assert {hit["source"] for hit in hits} == {key}, name
        assert {d["source"] for d in query.structured_content["documents"]} == {key}, name
        assert f"port {PORTS[key]} by default" in page.structured_content["text"], name
    assert unknown.is_error and "list_sources" in unknown.content[0].text

    http = TestClient(Starlette(routes=http_routes(docs, token_required=False)))
    for key, names in NAMES.items():
        for name in names:
            found = http.get("/api/search", params={"q": QUESTION, "ref": name})
            assert found.status_code == 200, (name, found.text)
            assert {hit["source"] for hit in found.json()["results"]} == {key}, name
