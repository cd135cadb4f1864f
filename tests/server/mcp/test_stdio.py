"""`docdex mcp`: the MCP tools over stdio, spawned by the SDK's own stdio client, as Claude
Desktop and other launching clients run it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from docdex.index_format.config import Config, SourceConfig, save_config
from docdex.index_format.layout import DataDir
from docdex.index_format.store import load_current
from docdex.indexer.run.lock import watch_lock
from docdex.serverproc import ServeProcess

from fixtures import build_workspace, index_workspace
from gitrepo import Workspace

TOOLS = {"search_docs", "query_docs", "get_document", "list_sources", "changes", "reindex"}


def stdio_server(data: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "docdex.cli", "--data", str(data), "mcp"]
    )


def over_stdio(data: Path, scenario):
    """`scenario(client)`'s result, with a `docdex mcp` process spawned for `data`."""

    async def main():
        async with Client(stdio_server(data)) as client:
            return await scenario(client)

    return asyncio.run(main())


def without_timing(content: dict) -> dict:
    return {k: v for k, v in content.items() if k != "took_ms"}


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("stdio")
    ws = build_workspace(root)
    data = DataDir(root / "data")
    index_workspace(data, ws, embedder)
    return ws, data


def test_the_tools_answer_as_over_http(indexed, tmp_path):
    _ws, data = indexed
    query = {"query": "error E1234", "num_results": 5}

    async def scenario(client):
        tools = await client.list_tools()
        return {t.name for t in tools.tools}, await client.call_tool("search_docs", query)

    names, stdio = over_stdio(data.root, scenario)
    assert names == TOOLS
    assert not stdio.is_error
    hits = stdio.structured_content["results"]
    assert hits[0]["chunk_id"].startswith("docs:faq.md#") and "E1234" in hits[0]["text"]
    assert stdio.content[0].text.startswith(f"{len(hits)} hits")  # markdown (text_content.py)
    with ServeProcess(data.root, tmp_path / "serve.log") as server:
        server.wait_ready()
        http = server.call_tool("search_docs", query)
    assert without_timing(stdio.structured_content) == without_timing(http.structured_content)


def test_new_versions_are_followed(tmp_path, embedder):
    ws = build_workspace(tmp_path / "repo")
    data = DataDir(tmp_path / "data")
    index_workspace(data, ws, embedder)
    query = {"query": "quokka migration checklist", "num_results": 3}

    async def scenario(client):
        before = await client.call_tool("search_docs", query)
        ws.write("guide/quokka.md", "# Quokka migration checklist\n\nMove every quokka.\n")
        ws.commit_and_push("quokka")
        await asyncio.to_thread(index_workspace, data, ws, embedder)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            after = await client.call_tool("search_docs", query)
            if after.structured_content["results"][0]["path"] == "guide/quokka.md":
                return before, after
            await asyncio.sleep(0.2)
        raise AssertionError("docdex mcp never served the new version")

    before, after = over_stdio(data.root, scenario)
    assert before.structured_content["results"][0]["path"] != "guide/quokka.md"
    assert after.structured_content["index_version"] > before.structured_content["index_version"]


def test_before_the_first_index_the_tools_say_so(tmp_path):
    async def scenario(client):
        return await client.call_tool("search_docs", {"query": "anything"})

    result = over_stdio(tmp_path / "nothing-here", scenario)
    assert result.is_error
    assert "run `docdex index`" in result.content[0].text


def test_stdout_carries_the_protocol_only(indexed):
    _ws, data = indexed
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "search_docs", "arguments": {"query": "E1234"}},
        },
    ]
    server = subprocess.Popen(
        [sys.executable, "-m", "docdex.cli", "--data", str(data.root), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    server.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
    server.stdin.flush()
    replies = [json.loads(server.stdout.readline()) for _ in range(3)]  # every line is JSON
    server.stdin.close()  # the client leaves: the server ends
    rest, logs = server.stdout.read(), server.stderr.read()  # logs are a few lines
    assert server.wait(60) == 0, logs
    assert rest == ""
    assert [r.get("id") for r in replies] == [1, 2, 3]
    assert replies[0]["result"]["serverInfo"] == {"name": "docdex", "version": version("docdex")}
    assert {t["name"] for t in replies[1]["result"]["tools"]} == TOOLS
    assert "docs:faq.md" in json.dumps(replies[2]["result"])
    assert "MCP over stdio ready" in logs  # logs go to stderr


def initialize(version: str = "2025-06-18") -> dict:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "pipe", "version": "1"},
        },
    }


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def piped(data: DataDir, requests: list[dict | str]) -> list[dict]:
    """`docdex mcp` given `requests` (a string: a line as written) on a pipe closed as soon
    as they are written: its replies, in the order it wrote them."""
    lines = [r if isinstance(r, str) else json.dumps(r) for r in requests]
    done = subprocess.run(
        [sys.executable, "-m", "docdex.cli", "--data", str(data.root), "mcp"],
        input="".join(line + "\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_every_request_piped_in_before_end_of_input_is_answered(indexed):
    _ws, data = indexed
    call = {"name": "search_docs", "arguments": {"query": "E1234"}}
    replies = piped(
        data,
        [
            initialize(),
            INITIALIZED,
            {"jsonrpc": "2.0", "id": 2, "method": "ping"},
            {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call},
        ],
    )
    by_id = {r.get("id"): r for r in replies}  # answered in any order, each once
    assert len(replies) == 3 and set(by_id) == {1, 2, 3}
    assert "docs:faq.md" in json.dumps(by_id[3]["result"])


@pytest.mark.parametrize(("protocol", "json_text"), [("2025-03-26", True), ("2025-06-18", False)])
def test_a_session_without_structured_output_reads_the_json_as_text(indexed, protocol, json_text):
    _ws, data = indexed
    call = {"name": "search_docs", "arguments": {"query": "E1234", "num_results": 2}}
    asked = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}
    replies = piped(data, [initialize(protocol), INITIALIZED, asked])
    result = {r.get("id"): r for r in replies}[2]["result"]
    text = result["content"][0]["text"]
    if json_text:  # the only form such a session has
        assert json.loads(text)["results"][0]["chunk_id"].startswith("docs:faq.md#")
    else:
        assert text.startswith("2 hits") and result["structuredContent"]["results"]


def test_what_docdex_does_not_offer_gets_the_specification_s_errors(indexed):
    _ws, data = indexed
    asked = [
        ("prompts/get", {"name": "summarise"}),
        ("tools/call", {"name": "no_such_tool", "arguments": {}}),
        ("tools/list", {"cursor": "not-one-it-gave"}),
        ("resources/list", {}),
    ]
    requests = [initialize("2025-11-25"), INITIALIZED]
    requests += [
        {"jsonrpc": "2.0", "id": n, "method": method, "params": params}
        for n, (method, params) in enumerate(asked, start=2)
    ]
    replies = {r["id"]: r for r in piped(data, requests)}
    assert "prompts" not in replies[1]["result"]["capabilities"]
    assert replies[2]["error"]["code"] == -32601, replies[2]  # no prompts: no such method
    for n in (3, 4):
        assert replies[n]["error"]["code"] == -32602, replies[n]
    assert "search_docs" in replies[3]["error"]["message"]
    listed = replies[5]["result"]
    assert listed["resources"] and not {"ttlMs", "cacheScope", "resultType"} & set(listed)


MODERN = "2026-07-28"
MODERN_META = {  # what every request of 2026-07-28 (no handshake) carries
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}


@pytest.mark.parametrize("protocol", ["2025-06-18", "2025-11-25", MODERN])
def test_prompts_are_a_method_docdex_does_not_have_under_every_protocol_version(indexed, protocol):
    _ws, data = indexed
    meta = {"_meta": MODERN_META} if protocol == MODERN else {}
    asked = [("prompts/list", {}), ("prompts/get", {"name": "summarise"}), ("tools/list", {})]
    requests: list[dict | str] = [] if protocol == MODERN else [initialize(protocol), INITIALIZED]
    requests += [
        {"jsonrpc": "2.0", "id": n, "method": method, "params": {**params, **meta}}
        for n, (method, params) in enumerate(asked, start=2)
    ]
    replies = {r["id"]: r for r in piped(data, requests)}
    for n in (2, 3):
        assert replies[n]["error"]["code"] == -32601, replies[n]
        assert "docdex offers no prompts" in replies[n]["error"]["message"]
    assert replies[4]["result"]["tools"]


def checkout_source(tmp_path: Path) -> tuple[Workspace, DataDir]:
    """A checkout with one committed page, registered as the only source of a new data dir."""
    ws = Workspace(tmp_path / "repo")
    ws.write("notes/first.md", "# First\n\nThe pangolin registry lives here.\n")
    ws.commit()
    data = DataDir(tmp_path / "data")
    save_config(data, Config(sources=[SourceConfig(name="notes", location=str(ws.work))]))
    return ws, data


async def wait_for_first_hit(client, query: str, path: str, deadline_s: float = 90) -> int:
    """The index version in which `path` is search_docs' first hit for `query` (the index
    may not exist yet when the wait starts)."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        result = await client.call_tool("search_docs", {"query": query, "num_results": 1})
        hits = [] if result.is_error else result.structured_content["results"]
        if hits and hits[0]["path"] == path:
            return result.structured_content["index_version"]
        await asyncio.sleep(0.2)
    raise AssertionError(f"{path} never came first for {query!r} in {deadline_s} s")


def test_mcp_watch_indexes_the_checkouts_as_files_are_saved(tmp_path):
    ws, data = checkout_source(tmp_path)
    params = stdio_server(data.root)
    params.args.append("--watch")

    async def scenario(client):
        first = await wait_for_first_hit(client, "pangolin registry", "notes/first.md")
        ws.write("notes/unsaved.md", "# Okapi\n\nAn uncommitted page about the okapi stable.\n")
        return first, await wait_for_first_hit(client, "okapi stable", "notes/unsaved.md")

    async def main():
        async with Client(params) as client:
            return await scenario(client)

    first, saved = asyncio.run(main())
    assert saved > first  # the saved edit reached the index as a new version
    assert load_current(data).sources["notes"].commit.endswith("+worktree")


def test_with_another_watcher_mcp_watch_only_reads(tmp_path):
    _ws, data = checkout_source(tmp_path)
    data.ensure()
    with watch_lock(data) as holder:
        assert holder is None  # this test process is "the other watcher"
        server = subprocess.Popen(
            [sys.executable, "-m", "docdex.cli", "--data", str(data.root), "mcp", "--watch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        server.stdin.close()  # no client: it starts, finds the watcher, and ends
        logs = server.stderr.read()
        assert server.wait(60) == 0, logs
    assert f"another docdex process (pid {os.getpid()}) already watches" in logs
    assert "this process only reads" in logs
    assert not (data.state / "queue").exists() and load_current(data) is None  # nothing written


def test_a_line_that_is_no_request_gets_the_json_rpc_error(indexed):
    _ws, data = indexed
    malformed = [
        "{not json",
        '[{"jsonrpc": "2.0", "id": 2, "method": "ping"}]',
        '{"jsonrpc": "2.0", "id": null, "method": "ping"}',
        '{"id": 7, "method": "ping"}',
        '{"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": [1, 2]}',
    ]
    ping = {"jsonrpc": "2.0", "id": 9, "method": "ping"}
    replies = piped(data, [initialize(), INITIALIZED, *malformed, ping])
    errors = sorted((r["id"] or 0, r["error"]["code"]) for r in replies if "error" in r)
    assert errors == [(0, -32700), (0, -32600), (0, -32600), (7, -32600), (8, -32600)]
    answered = {r["id"]: r for r in replies if "result" in r}  # refusals may come first
    assert set(answered) == {1, 9} and answered[9]["result"] == {}


def search_call(ident: int, query_json: str) -> str:
    """A search_docs call whose query is `query_json`, written as is."""
    return (
        f'{{"jsonrpc":"2.0","id":{ident},"method":"tools/call","params":'
        f'{{"name":"search_docs","arguments":{{"query":{query_json}}}}}}}'
    )


DEEP_LINES = [  # nested too deep for docdex (and, but the last, for Python's json as well)
    search_call(2, "[" * 1_000 + "]" * 1_000),
    search_call(3, '{"a":' * 1_000 + "1" + "}" * 1_000),
    "[" * 100_000 + "]" * 100_000,
    search_call(5, "[" * 62 + "]" * 62),  # 65 levels with the envelope's three
]


def test_deeply_nested_json_is_a_parse_error_and_the_answers_go_on(indexed):
    _ws, data = indexed
    ping = {"jsonrpc": "2.0", "id": 6, "method": "ping"}
    deepest = search_call(7, "[" * 61 + "]" * 61)  # 64 levels with the envelope's three: taken
    replies = piped(data, [initialize(), INITIALIZED, *DEEP_LINES, ping, deepest])
    errors = [r["error"] for r in replies if "error" in r]
    assert [e["code"] for e in errors] == [-32700] * len(DEEP_LINES), replies
    assert all("nested deeper than 64 levels" in e["message"] for e in errors), errors
    answered = {r["id"]: r for r in replies if "result" in r}
    assert set(answered) == {1, 6, 7} and answered[6]["result"] == {}
    assert answered[7]["result"]["isError"]  # the tool's own refusal: query is no string


def test_connecting_declares_the_notifications_docdex_sends_under_every_protocol_version(indexed):
    """docdex tells of a new version's pages (resources' listChanged) and of nothing else: its
    tools never change, no one page is followed. Every protocol version's connecting result
    says so."""
    _ws, data = indexed
    discover = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "server/discover",
        "params": {"_meta": MODERN_META},
    }
    declared = {
        version: piped(data, [initialize(version)])[0]["result"]["capabilities"]
        for version in ("2025-06-18", "2025-11-25")
    }
    declared[MODERN] = piped(data, [discover])[0]["result"]["capabilities"]
    sent = {
        "resources": {"listChanged": True, "subscribe": False},
        "tools": {"listChanged": False},
    }
    assert declared == dict.fromkeys(declared, sent)


@pytest.mark.parametrize("mode", ["legacy", MODERN])
def test_a_connected_client_is_told_when_a_push_changes_the_pages(tmp_path, embedder, mode):
    """A handshake version hears notifications/resources/list_changed on its connection;
    2026-07-28 on the subscriptions/listen stream it opened."""
    ws = build_workspace(tmp_path / "repo")
    data = DataDir(tmp_path / "data")
    index_workspace(data, ws, embedder)
    heard = asyncio.Event()

    async def on_message(message) -> None:
        if getattr(message, "method", "") == "notifications/resources/list_changed":
            heard.set()

    def push_and_index() -> None:
        ws.write("guide/news.md", "# News\n\nSomething new.\n")
        ws.commit_and_push("news")
        index_workspace(data, ws, embedder)

    async def main() -> list[str]:
        async with Client(stdio_server(data.root), mode=mode, message_handler=on_message) as c:
            await c.list_resources()  # connected, a request answered
            if mode == "legacy":
                await asyncio.to_thread(push_and_index)
                await asyncio.wait_for(heard.wait(), 60)
            else:
                async with c.listen(resources_list_changed=True) as events:
                    await asyncio.to_thread(push_and_index)
                    await asyncio.wait_for(anext(aiter(events)), 60)
            listed = await c.list_resources()
            return [r.uri for r in listed.resources]

    assert "docdex://docs/guide/news.md" in asyncio.run(main())
