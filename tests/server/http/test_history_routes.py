"""The docs' history over HTTP, from a real `docdex serve`: /api/changes, /api/search's
changed_since, and a connected MCP client told of a push's new pages on the
subscriptions/listen stream it opened."""

from __future__ import annotations

import asyncio
import urllib.parse

import pytest
from mcp import Client

from docdex.index_format.layout import DataDir
from docdex.serverproc import ServeProcess

from fixtures import http, index_workspace
from historyrepo import history_story


@pytest.fixture(scope="module")
def served(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("history-http")
    story = history_story(root / "repo")
    data = DataDir(root / "data")
    index_workspace(data, story.ws, embedder)
    with ServeProcess(data.root, root / "serve.log") as server:
        server.wait_ready()
        yield story, data, server


def api(server: ServeProcess, path: str, **params: str):
    return http(f"{server.url}{path}?{urllib.parse.urlencode(params)}")


def test_api_changes_is_the_tool_s_answer_and_its_errors_are_statuses(served):
    story, _data, server = served
    reply = api(server, "/api/changes", source="docs", since="v1", until="v2")
    assert reply.status == 200, reply.body
    answer = reply.json()
    assert {p["path"]: p["kind"] for p in answer["pages"]} == {
        "api.md": "added",
        "faq.md": "deleted",
        "guide.md": "modified",
        "new.md": "renamed",
    }
    assert answer["until"]["commit"] == story.commits["merge"]
    first = api(server, "/api/changes", source="docs", since="v1", max_chars="1000").json()
    rest = api(server, "/api/changes", cursor=first["next_cursor"], max_chars="1000").json()
    assert rest["offset"] == len(first["pages"]) and rest["pages"]
    assert api(server, "/api/changes", source="docs", since="v9").status == 404
    assert api(server, "/api/changes", source="nope").status == 400
    assert api(server, "/api/changes", source="docs", max_chars="lots").status == 400


def test_api_search_changed_since_keeps_only_the_changed_pages(served):
    _story, _data, server = served
    query = {"q": "installer app option", "n": "10"}
    every = api(server, "/api/search", **query).json()["results"]
    changed = api(server, "/api/search", **query, changed_since="v2").json()["results"]
    assert {"new.md", "guide.md"} <= {hit["path"] for hit in every}
    assert changed and {hit["path"] for hit in changed} <= {"guide.md", "news.md"}
    assert api(server, "/api/search", **query, changed_since="v9").status == 404


def test_a_connected_client_is_told_when_a_push_changes_the_pages(served, embedder):
    story, data, server = served

    def push_and_index() -> None:
        story.ws.write("later.md", "# Later\n\nWritten after the client connected.\n")
        story.ws.commit_and_push("later")
        index_workspace(data, story.ws, embedder)

    async def main() -> list[str]:
        async with Client(server.mcp_url) as client:
            async with client.listen(resources_list_changed=True) as events:
                await asyncio.to_thread(push_and_index)
                await asyncio.wait_for(anext(aiter(events)), 60)
            listed = await client.list_resources()
            return [resource.uri for resource in listed.resources]

    assert "docdex://docs/later.md" in asyncio.run(main())
