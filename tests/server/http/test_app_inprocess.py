"""The real Starlette app of `docdex serve` (server/http/app.py's build_app), driven in this
process: no uvicorn, no socket. httpx2's ASGITransport calls the app directly, inside the
app's own lifespan (the version watcher and the deferred /mcp), over a real index built from
a real git repository with the real model."""

from __future__ import annotations

import asyncio
from concurrent.futures import Future
from dataclasses import dataclass

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from docdex.index_format.layout import DataDir
from docdex.server.boot import Boot, open_docs
from docdex.server.http.app import build_app

from fixtures import FAQ_E1234, INSTALL, build_workspace, index_workspace

BASE = "http://127.0.0.1"  # a Host header the app's HostCheck accepts (loopback)


@dataclass
class Indexed:
    data: DataDir
    version: int


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, embedder) -> Indexed:
    root = tmp_path_factory.mktemp("inprocess")
    ws = build_workspace(root)
    data = DataDir(root / "data")
    return Indexed(data, index_workspace(data, ws, embedder))


def in_process(data: DataDir, embedder, scenario):
    """`scenario(client, mcp_ready)`'s result, run against the app `docdex serve` builds for
    `data`, with its lifespan entered; `client` is an httpx2 client wired to the app itself,
    `mcp_ready` the list the app's on_mcp_ready appends to."""

    async def main():
        model: Future = Future()
        model.set_result(embedder)  # the session's model, as serve's preloaded one
        docs = open_docs(data, Boot(), model)
        mcp_ready: list[int] = []
        app = build_app(docs, on_mcp_ready=lambda: mcp_ready.append(1))
        async with app.router.lifespan_context(app):  # what uvicorn's lifespan="on" runs
            transport = httpx2.ASGITransport(app=app)
            async with httpx2.AsyncClient(transport=transport, base_url=BASE, timeout=60) as client:
                return await scenario(client, mcp_ready)

    return asyncio.run(main())


def test_health_names_the_served_version(indexed, embedder):
    async def scenario(client, _ready):
        return await client.get("/health")

    reply = in_process(indexed.data, embedder, scenario)
    assert reply.status_code == 200
    body = reply.json()
    assert body["status"] == "ok" and body["index_version"] == indexed.version
    assert body["versions"]["swaps"] >= 0 and body["refused_version"] is None
    assert body["total_sources"] == 1 and body["total_chunks"] > 0
    assert body["sources"]["docs"]["files"] == 3
    assert body["models"]["embedder"] == embedder.info.id


def test_api_search_finds_the_indexed_text_and_refuses_bad_arguments(indexed, embedder):
    async def scenario(client, _ready):
        exact = await client.get("/api/search", params={"q": "E1234", "n": 3})
        scoped = await client.get(
            "/api/search", params={"q": "install python", "path_prefix": "guide/"}
        )
        bad = [
            await client.get("/api/search", params={"q": "install", "n": "abc"}),
            await client.get("/api/search", params={"n": 10}),
            await client.get("/api/search", params={"q": "install", "source": "nope"}),
        ]
        return exact, scoped, bad

    exact, scoped, bad = in_process(indexed.data, embedder, scenario)
    assert exact.status_code == 200
    out = exact.json()
    assert out["index_version"] == indexed.version
    top = out["results"][0]
    assert top["chunk_id"].startswith("docs:faq.md#") and top["path"] == "faq.md"
    assert "E1234" in top["text"] and top["heading"] == "FAQ › Error E1234"
    lines = FAQ_E1234.split("\n")[top["start_line"] - 1 : top["end_line"]]
    assert "\n".join(lines) == top["text"]  # cited lines are the file's lines

    assert scoped.status_code == 200
    hits = scoped.json()["results"]
    assert {hit["path"] for hit in hits} == {"guide/install.md"}
    assert any("Python 3.11" in hit["text"] and hit["text"] in INSTALL for hit in hits)

    messages = [(reply.status_code, reply.json()["error"]) for reply in bad]
    assert messages[0] == (400, "n must be an integer between 1 and 100")
    assert messages[1][0] == 400 and "query is empty" in messages[1][1]
    assert messages[2][0] == 400 and "unknown source 'nope'" in messages[2][1]
    assert "valid sources: docs" in messages[2][1]


def test_search_docs_over_mcp_in_process(indexed, embedder):
    """The real MCP client (initialize, tools/list, tools/call) over the same in-process
    transport: the first /mcp request ends the build grace and waits for the SDK."""

    async def scenario(client, ready):
        transport = streamable_http_client(f"{BASE}/mcp", http_client=client)
        async with Client(transport) as mcp:
            tools = await mcp.list_tools()
            result = await mcp.call_tool("search_docs", {"query": "E1234", "num_results": 3})
        api = await client.get("/api/search", params={"q": "E1234", "n": 3})
        return tools, result, api.json(), list(ready)

    tools, result, api, ready = in_process(indexed.data, embedder, scenario)
    assert ready == [1]  # /mcp was built once, in the lifespan
    names = {tool.name for tool in tools.tools}
    assert {
        "search_docs",
        "query_docs",
        "get_document",
        "list_sources",
        "changes",
        "reindex",
    } <= names
    assert not result.is_error
    out = result.structured_content
    assert out["index_version"] == indexed.version
    top = out["results"][0]
    assert top["chunk_id"].startswith("docs:faq.md#chunk")
    assert "E1234" in top["text"] and top["heading"] == "FAQ › Error E1234"
    lines = FAQ_E1234.split("\n")[top["start_line"] - 1 : top["end_line"]]
    assert "\n".join(lines) == top["text"]
    assert result.content[0].text.startswith(f"{len(out['results'])} hit")  # markdown text
    for answer in (api, out):
        answer.pop("took_ms")
    assert api == out  # /api/search answers with search_docs' JSON
