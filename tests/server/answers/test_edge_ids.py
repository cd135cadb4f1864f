"""Every id docdex hands out is accepted back (paths with a tab, a backslash or a newline,
and a path 200 folders deep, in a real git repository), and the date arguments of
query_docs are bounded and strictly ISO 8601."""

from __future__ import annotations

import asyncio
import json

import pytest
from mcp import Client
from starlette.applications import Starlette
from starlette.testclient import TestClient

from docdex.errors import InvalidArgument, NotFound
from docdex.server.answers import validation
from docdex.server.engine import resource_uri
from docdex.server.http.routes import http_routes
from docdex.server.mcp.tools import build_mcp

from fixtures import open_indexed_docs

TAB = "notes/tab\there.md"
BACKSLASH = "notes/back\\slash.md"
NEWLINE = "notes/new\nline.md"
DEEP = "/".join(f"level{n:03d}" for n in range(200)) + "/deep.md"  # 1,807 characters
ODD = {TAB: "tab", BACKSLASH: "backslash", NEWLINE: "newline", DEEP: "deep"}


def page(word: str) -> str:
    return f"# The {word} page\n\nThe {word} page is about lighthouse keeping in {word} weather.\n"


@pytest.fixture(scope="module")
def docs(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("edge_ids")
    files = {path: page(word) for path, word in ODD.items()}
    files["plain.md"] = page("plain")
    docs = open_indexed_docs(root, files, embedder)
    yield docs
    docs.holder.stop()


def handed_out(docs) -> dict[str, set[str]]:
    """Every page id and chunk id that search_docs and query_docs return, by path."""
    ids: dict[str, set[str]] = {}
    for word in ODD.values():
        hits = docs.search(f"{word} page lighthouse keeping", num_results=10).results
        for hit in hits:
            ids.setdefault(hit.path, set()).update({hit.doc_id, hit.chunk_id})
    for summary in docs.query_docs(limit=100).documents:
        ids.setdefault(summary.path, set()).add(summary.doc_id)
    return ids


def test_the_odd_paths_are_indexed_and_handed_out(docs):
    ids = handed_out(docs)
    assert set(ODD) <= set(ids)
    assert len(f"docs:{DEEP}") > 1_600
    assert all(any("#chunk" in i for i in ids[path]) for path in ODD)  # chunk ids too


def test_get_document_accepts_every_id_handed_out(docs):
    for path, ids in handed_out(docs).items():
        for doc_id in ids:
            answer = docs.get_document(doc_id)
            assert answer.path == path and answer.doc_id == f"docs:{path}"
            assert "lighthouse keeping" in answer.text


def test_the_mcp_tool_and_resource_accept_every_id_handed_out(docs):
    ids = handed_out(docs)

    async def calls(client):
        answers = {}
        for path, of_path in ids.items():
            for doc_id in of_path:
                result = await client.call_tool("get_document", {"doc_id": doc_id})
                answers[doc_id] = (path, result.is_error, result.structured_content)
            read = await client.read_resource(resource_uri("docs", path))
            answers[f"resource {path}"] = (path, False, {"text": read.contents[0].text})
        return answers

    async def go():
        async with Client(build_mcp(docs)) as client:
            return await calls(client)

    answers = asyncio.run(go())
    for doc_id, (path, is_error, content) in answers.items():
        assert not is_error, f"{doc_id!r} refused: {content}"
        assert "lighthouse keeping" in content["text"], doc_id
        if not doc_id.startswith("resource "):
            assert content["path"] == path


def test_the_page_route_accepts_every_id_handed_out(docs):
    client = TestClient(Starlette(routes=http_routes(docs, token_required=False)))
    for path in ODD:
        reply = client.get("/api/page", params={"doc_id": f"docs:{path}"})
        assert reply.status_code == 200, reply.text
        assert json.loads(reply.text)["page"]["path"] == path


def test_a_page_the_version_does_not_hold_is_not_found(docs):
    """A well-formed id of nothing in the served version is a 404 (an id that cannot be one
    stays a 400), and over MCP a tool error naming the id and where valid ids come from."""
    client = TestClient(Starlette(routes=http_routes(docs, token_required=False)))
    missing = client.get("/api/page", params={"doc_id": "docs:missing.md"})
    assert missing.status_code == 404, missing.text
    assert "no document 'docs:missing.md' in index version" in missing.json()["error"]
    assert client.get("/api/page", params={"doc_id": "elsewhere:a.md"}).status_code == 404
    assert client.get("/api/page", params={"doc_id": "docs:../a.md"}).status_code == 400

    async def go():
        async with Client(build_mcp(docs)) as mcp:
            return await mcp.call_tool("get_document", {"doc_id": "docs:missing.md#chunk3"})

    result = asyncio.run(go())
    text = result.content[0].text
    assert result.is_error and "no document 'docs:missing.md#chunk3'" in text
    assert "use a doc_id or chunk_id returned by search_docs or query_docs" in text


def test_obviously_bad_ids_are_still_refused_with_a_sentence(docs):
    for bad, says in [
        ("", "doc_id is empty"),
        ("   ", "doc_id is empty"),
        ("no-colon-here", "is not a document id"),
        ("bad source!:a.md", "is not a document id"),
        ("docs:a\x00b.md", "NUL"),
        ("docs:" + "a/" * 40_000 + "x.md", "characters long"),
    ]:
        with pytest.raises(InvalidArgument, match=says):
            docs.get_document(bad)
    with pytest.raises(NotFound, match="no document"):  # well formed, but not indexed
        docs.get_document("docs:missing\tfile.md")
    with pytest.raises(NotFound, match="unknown source"):
        docs.get_document("other:notes/back\\slash.md")
    with pytest.raises(NotFound) as caught:  # a long unknown id is not echoed whole
        docs.get_document("docs:" + "x/" * 4_000 + "y.md")
    assert len(str(caught.value)) < 1_000
    validation.check_doc_id(f"docs:{DEEP}#chunk0")


# --- dates -----------------------------------------------------------------------------------


def test_dates_are_bounded_and_strictly_iso_8601(docs):
    for bad in ["1" * 100_000, "1" * 41, "11111111", "2024", "2024-5-1", "yesterday", "2024-13-01"]:
        with pytest.raises(InvalidArgument, match="ISO 8601") as caught:
            docs.query_docs(created_after=bad)
        assert len(str(caught.value)) < 300
    with pytest.raises(InvalidArgument, match="created_before"):
        docs.query_docs(created_before="2" * 100_000)
    for good in [
        "2024-05-01",
        "2024-05-01T12:00:00Z",
        "2024-05-01T12:00:00+02:00",
        "2024-05-01 12:00",
        "2024-05-01T12:00:00.123456Z",
        " 2024-05-01 ",
    ]:
        assert len(good) <= validation.MAX_DATE_CHARS
        assert docs.query_docs(created_after=good, limit=100).index_version >= 1
    assert docs.query_docs(created_after="1970-01-01", limit=100).total >= len(ODD)
