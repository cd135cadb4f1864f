"""`docdex serve` end to end: real server processes, a real index built from a real git
repository, a real MCP client over HTTP; every tool, every error, auth on and off."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import msgspec
import pytest
from mcp import Client

from docdex.index_format import metrics
from docdex.index_format.layout import DataDir
from docdex.index_format.queue import pending_requests
from docdex.index_format.reassembly import served_text
from docdex.server.answers.shapes import (
    Changes,
    Document,
    PageList,
    ReindexReceipt,
    SourceList,
)
from docdex.server.engine import SearchResult
from docdex.serverproc import ServeProcess, call_tool, call_tools, free_port

from fixtures import FAQ_E1234, INSTALL, build_workspace, http, index_workspace, wait_for
from gitrepo import Workspace

TOKEN = "s3cret-token-for-tests-0123456789"


def error_text(result) -> str:
    assert result.is_error, result
    return result.content[0].text


# --- fixtures --------------------------------------------------------------------------------


@dataclass
class Servers:
    data: DataDir
    version: int
    open: ServeProcess
    token: ServeProcess
    empty: ServeProcess
    empty_dir: Path
    ws: Workspace


@pytest.fixture(scope="module")
def servers(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("server")
    ws = build_workspace(root)
    data = DataDir(root / "data")
    version = index_workspace(data, ws, embedder)
    empty_dir = root / "empty"
    empty_dir.mkdir()
    started = [
        ServeProcess(data.root, root / "open.log"),
        ServeProcess(data.root, root / "token.log", token=TOKEN),
        ServeProcess(empty_dir, root / "empty.log"),
    ]
    try:
        for server in started:
            server.wait_ready()
        yield Servers(data, version, *started, empty_dir=empty_dir, ws=ws)
    finally:
        for server in started:
            server.stop()


# --- boot, /, /health ------------------------------------------------------------------------


def test_boot_is_timed_and_logged(servers):
    log = wait_for(
        lambda: "ready: MCP at" in (out := servers.open.output()) and out, what="ready line"
    )
    stages = ("model loaded", f"version {servers.version} loaded", "listening:", "ready: MCP at")
    positions = []
    for stage in stages:
        found = re.search(rf"\[boot \+\d+ ms\] {stage}", log)
        assert found, (stage, log)
        positions.append(found.start())
    assert positions == sorted(positions), log  # HTTP listens before the MCP SDK is built
    assert re.search(r"\[boot \+\d+ ms\] no version to serve yet", servers.empty.output())


def test_index_page_names_the_mcp_url(servers):
    reply = http(f"{servers.open.url}/")
    assert reply.status == 200
    text = reply.body.decode()
    assert f"{servers.open.url}/mcp" in text and '"mcpServers"' in text
    assert "Authorization" not in text
    token_page = http(f"{servers.token.url}/").body.decode()  # open without a token
    assert "Bearer ${DOCDEX_TOKEN}" in token_page


def test_health_reports_index_models_and_metrics(servers):
    reply = http(f"{servers.open.url}/health")
    assert reply.status == 200
    body = reply.json()
    assert body["status"] == "ok"
    assert body["index_version"] == servers.version
    assert body["total_sources"] == 1 and body["total_chunks"] > 0
    source = body["sources"]["docs"]
    assert len(source["commit"]) == 40 and source["files"] == 3
    assert body["models"]["embedder"].startswith("all-MiniLM-L6-v2")
    assert body["models"]["query_graph"] == "int8"  # the served model keeps int8 weights
    # the setting "default" on an index without token vectors: no rerank, and both are said
    assert body["models"]["reranker"] == "none"
    assert body["models"]["reranker_setting"] == "default"
    assert body["uptime_s"] > 0 and body["refused_version"] is None
    indexed = body["last_ingestion"]  # the run that built the index left its metrics
    assert indexed["version"] == servers.version and indexed["published"] is True
    assert body["last_ingestion_failure"] is None

    run = metrics.IngestionMetrics(
        completed_at="2026-01-02T03:04:05Z",
        duration_s=1.5,
        rss_at_end_mb=210.0,
        chunks_embedded=7,
        version=servers.version,
    )
    failure = metrics.IngestionFailure(failed_at="2026-01-02T04:00:00Z", error="disk full")
    metrics.write_last_ingestion(servers.data, run)
    metrics.write_last_failure(servers.data, failure)
    try:
        assert metrics.read_last_ingestion(servers.data) == run
        body = http(f"{servers.open.url}/health").json()
        assert body["last_ingestion"]["chunks_embedded"] == 7
        assert body["last_ingestion"]["rss_at_end_mb"] == 210.0
        assert body["last_ingestion_failure"]["error"] == "disk full"
    finally:
        metrics.last_ingestion_path(servers.data).unlink()
        metrics.last_failure_path(servers.data).unlink()


def test_empty_data_dir_is_503_until_a_version_appears(servers, embedder):
    url = servers.empty.url
    reply = http(f"{url}/health")
    assert reply.status == 503
    body = reply.json()
    assert body["status"] == "error" and "docdex index" in body["error"]
    assert http(f"{url}/api/search?q=install").status == 503
    assert "docdex index" in error_text(
        call_tool(servers.empty.mcp_url, "search_docs", {"query": "install"})
    )
    assert list(servers.empty_dir.iterdir()) == []  # the server wrote nothing

    index_workspace(DataDir(servers.empty_dir), servers.ws, embedder)
    wait_for(lambda: http(f"{url}/health").status == 200, what="first version served")
    assert http(f"{url}/api/search?q=install").json()["results"]


# --- tools -----------------------------------------------------------------------------------


def test_tools_have_the_expected_names_and_parameters(servers):
    async def run():
        async with Client(servers.open.mcp_url) as client:
            return (await client.list_tools()).tools

    tools = {t.name: t for t in asyncio.run(run())}
    params = {name: set(t.input_schema["properties"]) for name, t in tools.items()}
    assert params == {
        "search_docs": {
            "query",
            "num_results",
            "source",
            "path_prefix",
            "max_chars",
            "ref",
            "tags",
            "changed_since",
        },
        "query_docs": {
            "source",
            "file_path_contains",
            "title_contains",
            "created_after",
            "created_before",
            "limit",
            "ref",
            "tags",
            "cursor",
        },
        "get_document": {"doc_id", "start_line", "end_line", "cursor", "max_chars", "ref"},
        "list_sources": set(),
        "changes": {"source", "since", "until", "ref", "path_prefix", "cursor", "max_chars"},
        "reindex": {"source"},
    }
    search = tools["search_docs"]
    assert "English" in search.description and "start_line" in search.description
    assert search.input_schema["required"] == ["query"]
    assert search.input_schema["properties"]["num_results"]["default"] == 10
    answers = {
        "search_docs": SearchResult,
        "query_docs": PageList,
        "get_document": Document,
        "list_sources": SourceList,
        "changes": Changes,
        "reindex": ReindexReceipt,
    }
    for name, struct in answers.items():  # each schema is the struct its answer encodes
        declared = set(tools[name].output_schema["properties"])
        assert declared == {f.name for f in msgspec.structs.fields(struct)}, name


def test_search_docs_returns_cited_hits(servers):
    result = call_tool(servers.open.mcp_url, "search_docs", {"query": "E1234", "num_results": 3})
    assert not result.is_error
    out = result.structured_content
    assert out["index_version"] == servers.version and out["took_ms"] > 0
    assert out["low_confidence"] is False
    top = out["results"][0]
    assert set(top) == {  # what another field says, and fields at their default, left out
        "chunk_id",
        "source",
        "path",
        "ref",
        "title",
        "heading",
        "text",
        "score",
        "start_line",
        "end_line",
        "commit",
        "match",
        "modified",
    }
    assert "truncated" not in top  # a short section fits the default budget whole
    assert top["chunk_id"].startswith("docs:faq.md#chunk")
    assert "E1234" in top["text"] and top["heading"] == "FAQ › Error E1234"
    lines = FAQ_E1234.split("\n")[top["start_line"] - 1 : top["end_line"]]
    assert "\n".join(lines) == top["text"]
    assert result.content[0].text.startswith(f"{len(out['results'])} hit")  # markdown text

    api = http(f"{servers.open.url}/api/search?q=E1234&n=3").json()
    for answer in (api, out):
        answer.pop("took_ms")
    assert api == out


def test_search_docs_filters(servers):
    by_source = call_tool(servers.open.mcp_url, "search_docs", {"query": "token", "source": "docs"})
    assert by_source.structured_content["results"]
    by_path = call_tool(
        servers.open.mcp_url, "search_docs", {"query": "install python", "path_prefix": "guide/"}
    )
    paths = {hit["path"] for hit in by_path.structured_content["results"]}
    assert paths == {"guide/install.md"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"query": ""}, "query is empty"),
        ({"query": "   "}, "query is empty"),
        ({"query": "x" * 5000}, "limit is"),
        ({"query": "install", "num_results": 0}, "between 1 and 100"),
        ({"query": "install", "num_results": 101}, "between 1 and 100"),
        ({"query": "install", "source": "nope"}, "valid sources: docs"),
        (
            {"query": "install", "num_results": "many"},
            "invalid arguments for search_docs: num_results must be an integer; got a string",
        ),
        ({"num_results": 3}, "invalid arguments for search_docs: query is required"),
    ],
)
def test_search_docs_bad_input_is_a_tool_error(servers, args, message):
    text = error_text(call_tool(servers.open.mcp_url, "search_docs", args))
    assert message in text
    assert "pydantic" not in text and "Arguments" not in text


def test_query_docs_lists_pages_by_metadata(servers):
    calls = [
        ("query_docs", {}),
        ("query_docs", {"file_path_contains": "GUIDE/"}),
        ("query_docs", {"title_contains": "faq"}),
        ("query_docs", {"source": "docs", "limit": 1}),
        ("query_docs", {"created_after": "2000-01-01"}),
        ("query_docs", {"created_before": "2000-01-01T00:00:00Z"}),
        ("query_docs", {"created_after": "2999-01-01", "created_before": "3000-01-01"}),
    ]
    every, by_path, by_title, limited, after, before, future = (
        r.structured_content for r in call_tools(servers.open.mcp_url, calls)
    )
    assert [d["path"] for d in every["documents"]] == [
        "faq.md",
        "guide/install.md",
        "reference/api.md",
    ]
    install = every["documents"][1]
    assert install["title"] == "Install guide" and install["tags"] == ["setup", "install"]
    assert install["doc_id"] == "docs:guide/install.md" and install["chunks"] == 2
    assert install["created"].endswith("Z") and len(install["commit"]) == 40
    assert every["total"] == 3 and every["index_version"] == servers.version
    assert [d["path"] for d in by_path["documents"]] == ["guide/install.md"]
    assert [d["path"] for d in by_title["documents"]] == ["faq.md"]
    assert len(limited["documents"]) == 1 and limited["total"] == 3 and limited["truncated"]
    assert after["total"] == 3 and before["total"] == 0 and future["total"] == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"created_after": "yesterday"}, "ISO 8601"),
        ({"created_before": "2024-13-45"}, "2024-05-01T12:00:00Z"),
        ({"limit": 0}, "between 1 and 100"),
        ({"limit": 1000}, "between 1 and 100"),
        ({"source": "nope"}, "valid sources: docs"),
    ],
)
def test_query_docs_bad_input_is_a_tool_error(servers, args, message):
    assert message in error_text(call_tool(servers.open.mcp_url, "query_docs", args))


def test_get_document_returns_a_page_or_a_chunk(servers):
    page, chunk = (
        r.structured_content
        for r in call_tools(
            servers.open.mcp_url,
            [
                ("get_document", {"doc_id": "docs:guide/install.md"}),
                ("get_document", {"doc_id": "docs:faq.md#chunk1"}),
            ],
        )
    )
    assert page["kind"] == "page" and page["title"] == "Install guide"
    assert page["index_version"] == servers.version
    file_lines = INSTALL.split("\n")
    text_lines = page["text"].split("\n")
    for section in page["sections"]:  # line-aligned with the file
        span = slice(section["start_line"] - 1, section["end_line"])
        assert text_lines[span] == file_lines[span]
    assert page["text"] == served_text(INSTALL)  # the file's text, front matter included

    assert chunk["kind"] == "chunk" and "E1234" in chunk["text"]
    assert chunk["doc_id"] == "docs:faq.md" and chunk["heading"] == "FAQ › Error E1234"
    assert chunk["previous_chunk_id"] == "docs:faq.md#chunk0" and chunk["next_chunk_id"] is None


@pytest.mark.parametrize(
    ("doc_id", "message"),
    [
        ("", "doc_id is empty"),
        ("../../etc/passwd", "is not a document id"),
        ("docs:../../etc/passwd", "never contain '..'"),
        ("docs:guide/../../../etc/passwd", "never contain '..'"),
        ("docs:/etc/passwd", "relative to the repository"),
        ("/etc/passwd", "is not a document id"),
        ("docs:faq.md\x00.txt", "control characters"),
        ("docs:C:\\windows\\win.ini", "backslashes"),
        ("docs:missing.md", "no document 'docs:missing.md'"),
        ("docs:faq.md#chunk99", "no document"),
        ("other:faq.md", "valid sources: docs"),
        ("docs:" + "a" * 70_000, "limit is"),  # 2,000 is a real id's length
    ],
)
def test_get_document_refuses_ids_outside_the_index(servers, doc_id, message):
    result = call_tool(servers.open.mcp_url, "get_document", {"doc_id": doc_id})
    assert message in error_text(result)


def test_list_sources(servers):
    out = call_tool(servers.open.mcp_url, "list_sources").structured_content
    (source,) = out["sources"]
    assert source["name"] == "docs" and source["kind"] == "bare" and source["branch"] == "main"
    assert source["indexed"] and len(source["commit"]) == 40
    assert source["files"] == 3 and source["chunks"] > 3
    assert source["indexed_at"].endswith("Z") and source["last_error"] == ""
    assert out["index_version"] == servers.version


def index_files(data: DataDir) -> dict[str, int]:
    watched = [data.current, data.versions, data.segments, data.text, data.pages]
    out = {}
    for top in watched:
        paths = [top] if top.is_file() else top.rglob("*")
        out.update({str(p): p.stat().st_mtime_ns for p in paths})
    return out


def test_reindex_files_a_request_and_writes_no_index(servers):
    before = index_files(servers.data)
    first, again, one, unknown = call_tools(
        servers.open.mcp_url,
        [
            ("reindex", {}),
            ("reindex", {}),
            ("reindex", {"source": "docs"}),
            ("reindex", {"source": "nope"}),
        ],
    )
    filed = first.structured_content
    assert filed["request_id"] and not filed["already_pending"]
    assert again.structured_content["request_id"] == filed["request_id"]
    assert again.structured_content["already_pending"]
    assert one.structured_content["source"] == "docs"
    assert "valid sources: docs" in error_text(unknown)
    queued = {r.id: r for r in pending_requests(servers.data)}
    assert queued[filed["request_id"]].origin == "reindex"
    assert queued[one.structured_content["request_id"]].source == "docs"
    assert index_files(servers.data) == before
    for request_file in (servers.data.state / "queue").glob("*.json"):
        request_file.unlink()


# --- /api/search -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("n=10", "query is empty"),
        ("q=install&n=abc", "n must be an integer"),
        ("q=install&n=0", "between 1 and 100"),
        ("q=install&source=nope", "valid sources: docs"),
    ],
)
def test_api_search_bad_input_is_400(servers, query, message):
    reply = http(f"{servers.open.url}/api/search?{query}")
    assert reply.status == 400 and message in reply.json()["error"]


# --- security --------------------------------------------------------------------------------


def test_bad_host_header_is_rejected(servers):
    evil = {"Host": "evil.example:80"}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    mcp_headers = {
        **evil,
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    assert http(servers.open.mcp_url, mcp_headers, "POST", body).status == 421
    assert http(f"{servers.open.url}/api/search?q=install", evil).status == 421
    assert http(f"{servers.open.url}/api/search?q=install", {"Host": "localhost"}).status == 200


def test_token_guards_mcp_and_api_but_not_health(servers):
    url = servers.token.url
    assert http(f"{url}/api/search?q=install").status == 401
    wrong = http(f"{url}/api/search?q=install", {"Authorization": "Bearer nope"})
    assert wrong.status == 401 and "Bearer" in wrong.json()["error"]
    assert wrong.headers.get("www-authenticate") == "Bearer"
    basic = http(f"{url}/api/search?q=install", {"Authorization": f"Basic {TOKEN}"})
    assert basic.status == 401
    right = http(f"{url}/api/search?q=install", {"Authorization": f"Bearer {TOKEN}"})
    assert right.status == 200 and right.json()["results"]
    assert http(f"{url}/health").json() == {"status": "ok"}  # up; details need the token
    assert http(f"{url}/mcp", {"Content-Type": "application/json"}, "POST", b"{}").status == 401

    for bad in (None, "wrong-token"):
        with pytest.raises(Exception):  # noqa: B017 - the SDK raises its own transport errors
            call_tool(servers.token.mcp_url, "list_sources", token=bad)
    ok = call_tool(servers.token.mcp_url, "search_docs", {"query": "E1234"}, token=TOKEN)
    assert not ok.is_error and ok.structured_content["results"]


def test_non_loopback_bind_without_token_is_refused(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "DOCDEX_TOKEN"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "docdex.cli",
            "--data",
            str(tmp_path),
            "serve",
            "--host",
            "0.0.0.0",
            "--port",
            str(free_port()),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 1
    assert "DOCDEX_TOKEN" in done.stderr and "--insecure" in done.stderr
    assert "model loaded" not in done.stderr  # refused before any work


# --- docdex search ---------------------------------------------------------------------------


def test_cli_search_prints_hits_and_json(servers, capsys):
    from docdex.cli.search import run_search_command

    assert run_search_command(servers.data, "E1234", n=2) == 0
    text = capsys.readouterr().out
    assert "docs:faq.md:" in text and "FAQ › Error E1234" in text and "E1234 means" in text
    assert f"index version {servers.version}" in text

    assert run_search_command(servers.data, "E1234", "docs", "", 2, as_json=True) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["results"][0]["chunk_id"].startswith("docs:faq.md#") and len(out["results"]) == 2

    from docdex.cli import main  # an error reaches the CLI's one handler: a line, exit 1

    assert main(["--data", str(servers.data.root), "search", "E1234", "--source", "nope"]) == 1
    assert "docdex: error: unknown source 'nope'; valid sources: docs" in capsys.readouterr().err
