"""Tool calls as the tools themselves check them, whatever the transport let through:

- the reindex tool refuses a caller whose grant lacks docdex:reindex, even on a path that
  skips the HTTP layer's own check of the message (the SDK's streamable HTTP app behind
  nothing but the credential check);
- every tool's every argument is checked against the input schema the tool declares,
  strictly: no string for an integer, no boolean for an integer, no JSON text for an array.

A real MCP client calls the real tools over a real index."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from docdex.index_format.queue import pending_requests
from docdex.server.http.access import allowed_hosts, transport_security
from docdex.server.http.grants import Grant, granted
from docdex.server.mcp.arguments import ArgumentSchema, UnsupportedSchema
from docdex.server.mcp.tools import build_mcp

from fixtures import API, FAQ_E1234, INSTALL, open_indexed_docs

FILES = {"guide/install.md": INSTALL, "faq.md": FAQ_E1234, "reference/api.md": API}
BASE = "http://127.0.0.1"  # a Host the SDK's DNS-rebinding protection accepts


@pytest.fixture(scope="module")
def docs(tmp_path_factory, embedder):
    docs = open_indexed_docs(tmp_path_factory.mktemp("mcp-calls"), FILES, embedder)
    yield docs
    docs.holder.stop()


# --- reindex, in the tool itself ---------------------------------------------------------------


def over_http_as(docs, grant: Grant, scenario):
    """`scenario(client)` against the SDK's streamable HTTP app of build_mcp(docs), each request
    granted `grant` as BearerAuth or the OAuth guard grant it, with nothing else in between."""
    mcp = build_mcp(docs)
    app = mcp.streamable_http_app(
        streamable_http_path="/mcp",
        stateless_http=True,
        json_response=True,
        transport_security=transport_security(allowed_hosts("127.0.0.1")),
    )

    async def credential_checked(scope, receive, send):
        scope = dict(scope)
        granted(scope, grant)
        await app(scope, receive, send)

    async def main():
        async with mcp.session_manager.run():
            transport = httpx2.ASGITransport(app=credential_checked)
            http = httpx2.AsyncClient(transport=transport, base_url=BASE, timeout=60)
            async with http, Client(streamable_http_client(f"{BASE}/mcp", http_client=http)) as c:
                return await scenario(c)

    return asyncio.run(main())


def test_the_reindex_tool_refuses_a_grant_without_the_reindex_scope(docs):
    def reader(scopes: set[str]) -> Grant:
        return Grant(client_id="reader", scopes=frozenset(scopes))

    async def reindex(client):
        return await client.call_tool("reindex", {})

    refused = over_http_as(docs, reader({"docdex:read"}), reindex)
    assert refused.is_error
    assert "docdex:reindex" in refused.content[0].text, refused.content[0].text
    assert pending_requests(docs.data) == []  # nothing was filed

    allowed = over_http_as(docs, reader({"docdex:read", "docdex:reindex"}), reindex)
    assert not allowed.is_error, allowed.content
    assert [r.origin for r in pending_requests(docs.data)] == ["reindex"]


# --- arguments, as the input schema declares them ------------------------------------------------


def call_tools(docs, calls: list[tuple[str, dict[str, Any]]]) -> list:
    """Each (tool, arguments)'s result, over one in-process MCP session."""

    async def main():
        async with Client(build_mcp(docs)) as client:
            return [await client.call_tool(name, arguments) for name, arguments in calls]

    return asyncio.run(main())


def input_schemas(docs) -> dict[str, dict[str, Any]]:
    async def main():
        async with Client(build_mcp(docs)) as client:
            return {t.name: t.input_schema for t in (await client.list_tools()).tools}

    return asyncio.run(main())


VALID = {  # arguments every tool accepts, so that one wrong argument is the only problem
    "search_docs": {"query": "install"},
    "get_document": {"doc_id": "docs:faq.md"},
}
WRONG = {  # per declared type: values of other JSON types, and what the refusal calls it
    "integer": (["5", True, False, 5.5, None, [5], {"n": 5}], "an integer"),
    "string": ([5, True, None, ["install"], {"q": "x"}], "a string"),
    "array": (['["setup"]', "setup", 3, None, {"0": "setup"}], "an array"),
}
WRONG_ITEMS = [[1], [None], [True], [["setup"]], ["setup", 2]]  # for an array of strings


def wrong_calls(schemas: dict[str, dict[str, Any]]) -> list[tuple[str, str, Any, str]]:
    """(tool, argument, wrong value, expected type) for every argument of every tool."""
    cases = []
    for tool, schema in schemas.items():
        for name, declared in schema["properties"].items():
            values, expected = WRONG[declared["type"]]
            if declared["type"] == "array":
                values = [*values, *WRONG_ITEMS]
            cases += [(tool, name, value, expected) for value in values]
    return cases


def test_every_argument_of_every_tool_is_checked_against_its_declared_type(docs):
    schemas = input_schemas(docs)
    cases = wrong_calls(schemas)
    assert {tool for tool, *_ in cases} == set(schemas) - {"list_sources"}  # it takes none
    calls = [(tool, {**VALID.get(tool, {}), name: value}) for tool, name, value, _ in cases]
    for (tool, name, value, expected), result in zip(cases, call_tools(docs, calls), strict=True):
        what = f"{tool}({name}={value!r})"
        assert result.is_error, f"{what} was accepted"
        text = result.content[0].text
        assert text.startswith(f"invalid arguments for {tool}: {name}"), (what, text)
        if not (isinstance(value, list) and declared_items(schemas, tool, name)):
            assert expected in text, (what, text)
        assert "pydantic" not in text and len(text) < 300, (what, text)


def declared_items(schemas, tool: str, name: str) -> bool:
    return "items" in schemas[tool]["properties"][name]


def test_well_typed_arguments_still_pass(docs):
    calls = [
        ("search_docs", {"query": "install", "num_results": 2, "tags": ["setup"]}),
        ("search_docs", {"query": "install", "num_results": 2.0}),  # JSON: an integer
        ("query_docs", {"limit": 5, "tags": []}),
        ("get_document", {"doc_id": "docs:faq.md", "start_line": 1, "end_line": 3}),
        ("list_sources", {}),
    ]
    for (tool, arguments), result in zip(calls, call_tools(docs, calls), strict=True):
        assert not result.is_error, (tool, arguments, result.content)


def test_a_missing_required_argument_is_named(docs):
    (search,) = call_tools(docs, [("search_docs", {"num_results": 3})])
    assert search.is_error
    assert search.content[0].text == "invalid arguments for search_docs: query is required"


def test_a_schema_keyword_the_check_does_not_know_is_refused_not_ignored():
    for prop in ({"type": "integer", "minimum": 1}, {"anyOf": [{"type": "string"}]}):
        schema = {"type": "object", "properties": {"n": prop}}
        with pytest.raises(UnsupportedSchema):
            ArgumentSchema("tool", schema)
    listed = {"type": "object", "properties": {"tags": {"type": "array", "items": {"enum": [1]}}}}
    with pytest.raises(UnsupportedSchema):
        ArgumentSchema("tool", listed)
