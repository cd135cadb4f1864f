"""Edge cases at the HTTP layer, against one real `docdex serve` with a token on 127.0.0.1,
in raw HTTP (http.client: the headers exactly as written, bytes where needed):

- GET /mcp answers 405 (Allow: POST), not an endless empty event stream; POST still works;
- a body that is no JSON-RPC request is -32700 or -32600 (HTTP 400), never a notification;
- Host and Origin are parsed and compared exactly, by docdex and the MCP transport alike;
- a DOCDEX_TOKEN that is not printable ASCII is refused at start, with a clear message;
- /health without the token says only whether the server is up.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import socket
import subprocess
import sys

import pytest

from docdex.server.http.app import bound_socket
from docdex.serverproc import ServeProcess, free_port

from fixtures import served_workspace

TOKEN = "edge-http-token-0123456789abcdef"
AUTH = f"Bearer {TOKEN}".encode()
LIST_TOOLS = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def server(tmp_path_factory, embedder):
    with served_workspace(tmp_path_factory.mktemp("edge_http"), embedder, TOKEN) as server:
        yield server


def raw(
    server: ServeProcess,
    method: str,
    path: str,
    headers: dict[str, str | bytes] | None = None,
    body: bytes | None = None,
    timeout: float = 10,
) -> tuple[int, dict[str, str], bytes]:
    """(status, headers in lower case, body) of one request sent as written: Host is ours
    unless `headers` names one."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=timeout)
    try:
        headers = dict(headers or {})
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", headers.pop("Host", f"127.0.0.1:{server.port}"))
        for name, value in headers.items():
            conn.putheader(name, value)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        reply = conn.getresponse()
        return reply.status, {k.lower(): v for k, v in reply.getheaders()}, reply.read()
    finally:
        conn.close()


def mcp_post(server: ServeProcess, **headers: str) -> int:
    """The status of an authorized tools/list on /mcp with these extra headers."""
    sent = {**MCP_HEADERS, "Authorization": AUTH, **headers}
    return raw(server, "POST", "/mcp", sent, LIST_TOOLS)[0]


# --- 3. GET /mcp -------------------------------------------------------------------------------


def test_get_mcp_is_405_not_an_endless_stream(server):
    for method in ("GET", "DELETE"):
        status, headers, body = raw(
            server, method, "/mcp", {"Authorization": AUTH, "Accept": "text/event-stream"}
        )
        assert status == 405, (method, status, headers)
        assert headers["allow"] == "POST" and "POST" in json.loads(body)["error"]
    assert raw(server, "GET", "/mcp")[0] == 401  # the token is still checked first
    assert mcp_post(server) == 200

    result = server.call_tool("search_docs", {"query": "E1234"})  # a real MCP client
    assert not result.is_error and result.structured_content["results"]


MALFORMED = [
    (b"{not json", -32700, None),
    (b'[{"jsonrpc": "2.0", "id": 2, "method": "ping"}]', -32600, None),
    (b'{"jsonrpc": "2.0", "id": null, "method": "ping"}', -32600, None),
    (b'{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', -32600, None),
    (b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}', -32600, None),
    (b'{"id": 7, "method": "ping"}', -32600, 7),
    (b'{"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": [1, 2]}', -32600, 8),
    (b'"ping"', -32600, None),
]


@pytest.mark.parametrize(("body", "code", "answer_to"), MALFORMED)
def test_a_body_that_is_no_request_gets_the_json_rpc_error(server, body, code, answer_to):
    status, _headers, reply = raw(
        server, "POST", "/mcp", {**MCP_HEADERS, "Authorization": AUTH}, body
    )
    error = json.loads(reply)
    assert status == 400 and error["error"]["code"] == code, reply
    assert error["id"] == answer_to and "pydantic" not in reply.decode()


def search_call(query_json: str) -> bytes:
    """A search_docs call whose query is `query_json`, written as is."""
    return (
        '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":'
        f'{{"name":"search_docs","arguments":{{"query":{query_json}}}}}}}'
    ).encode()


DEEP = {  # nested too deep for docdex (and, but the last, for Python's json as well)
    "1,000 arrays in params": search_call("[" * 1_000 + "]" * 1_000),
    "1,000 objects in params": search_call('{"a":' * 1_000 + "1" + "}" * 1_000),
    "100,000 arrays": b"[" * 100_000 + b"]" * 100_000,
    "100 arrays in params": search_call("[" * 100 + "]" * 100),
}


@pytest.mark.parametrize("body", DEEP.values(), ids=list(DEEP))
def test_deeply_nested_json_is_a_parse_error_not_a_crash(server, body):
    status, headers, reply = raw(
        server, "POST", "/mcp", {**MCP_HEADERS, "Authorization": AUTH}, body
    )
    assert status == 400 and headers["content-type"] == "application/json", (status, reply[:200])
    error = json.loads(reply)
    assert error["id"] is None and error["error"]["code"] == -32700, error
    assert "nested deeper than" in error["error"]["message"]
    assert mcp_post(server) == 200  # the server goes on answering
    assert "Traceback" not in server.output()


MODERN = "2026-07-28"


def mcp_call(server: ServeProcess, method: str, params: dict, version: str) -> tuple[int, dict]:
    """(status, JSON-RPC reply) of one request under the protocol `version`: 2026-07-28 has
    no handshake, and each request says its version and capabilities in `_meta` and its
    method (and name) in headers."""
    headers = {**MCP_HEADERS, "Authorization": AUTH, "MCP-Protocol-Version": version}
    if version == MODERN:
        meta = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        params = {**params, "_meta": meta}
        headers["Mcp-Method"] = method
        if "name" in params:
            headers["Mcp-Name"] = params["name"]
    body = json.dumps({"jsonrpc": "2.0", "id": 3, "method": method, "params": params})
    status, _headers, reply = raw(server, "POST", "/mcp", headers, body.encode())
    return status, json.loads(reply)


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25", MODERN])
def test_prompts_are_a_method_docdex_does_not_have_under_every_protocol_version(server, version):
    """docdex declares no prompts capability: its methods are -32601, as any method the
    server does not implement (HTTP 404 under 2026-07-28, which says so)."""
    for method, params in (("prompts/list", {}), ("prompts/get", {"name": "summarise"})):
        status, reply = mcp_call(server, method, params, version)
        assert reply["id"] == 3 and reply["error"]["code"] == -32601, (method, reply)
        assert "docdex offers no prompts" in reply["error"]["message"]
        assert status == (404 if version == MODERN else 200), (method, status)
    status, listed = mcp_call(server, "tools/list", {}, version)  # the rest answers
    assert status == 200 and listed["result"]["tools"], listed


# --- 4. Host and Origin ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "host",
    [
        "localhost:evil.example.com",
        "127.0.0.1:80.evil.example",
        "localhost:@evil.example",
        "localhost.evil.example",
        "evil.example",
        "localhost:",
        "localhost:8085:1",
        "[::1]evil",
        "",
    ],
)
def test_foreign_host_is_refused_on_every_path(server, host):
    for path in ("/health", "/api/search?q=install"):
        assert raw(server, "GET", path, {"Host": host, "Authorization": AUTH})[0] == 421, path
    assert mcp_post(server, Host=host) == 421


@pytest.mark.parametrize(
    "origin",
    [
        "http://127.0.0.1:41655.evil.com",
        "http://localhost:@evil.com",
        "http://localhost:8085@evil.com",
        "http://localhost.evil.com",
        "http://evil.com",
        "http://localhost:8085/path",
        "ftp://localhost:8085",
        "null",
    ],
)
def test_foreign_origin_is_refused(server, origin):
    assert mcp_post(server, Origin=origin) == 403
    status, _, _ = raw(server, "GET", "/health", {"Origin": origin, "Authorization": AUTH})
    assert status == 403


def test_our_names_are_accepted_by_docdex_and_the_mcp_transport_alike(server):
    port = server.port
    for host in (
        f"127.0.0.1:{port}",
        f"localhost:{port}",
        f"LOCALHOST:{port}",  # host names are case-insensitive: the SDK's check said 421
        "LocalHost",
        "127.0.0.1",
    ):
        assert mcp_post(server, Host=host) == 200, host
        assert raw(server, "GET", "/health", {"Host": host})[0] == 200, host
    for origin in (
        f"http://127.0.0.1:{port}",
        f"http://localhost:{port}",
        f"HTTP://LOCALHOST:{port}",
        "https://localhost",
    ):
        assert mcp_post(server, Origin=origin) == 200, origin


# --- 5. a token that is not ASCII --------------------------------------------------------------


def test_non_ascii_token_is_refused_at_start(tmp_path):
    env = {**os.environ, "DOCDEX_TOKEN": "sécret-token"}
    command = [sys.executable, "-m", "docdex.cli", "--data", str(tmp_path), "serve"]
    command += ["--port", str(free_port()), "--no-worker"]
    process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    try:
        _, err = process.communicate(timeout=30)  # before the fix it started and served on
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        pytest.fail("a server with a non-ASCII DOCDEX_TOKEN started")
    assert process.returncode == 1
    assert "DOCDEX_TOKEN must be printable ASCII" in err, err
    assert "model loaded" not in err  # refused before any work


def test_a_busy_port_is_said_in_one_line_before_the_index_is_read(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        command = [sys.executable, "-m", "docdex.cli", "--data", str(tmp_path), "serve"]
        command += ["--port", str(port), "--no-worker"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"127.0.0.1:{port}" in lines[0], done.stderr
    assert "the port is in use" in lines[0] and "--port" in lines[0]
    assert "Errno" not in done.stderr and "Traceback" not in done.stderr


def test_token_bytes_are_compared_as_sent(server):
    path = "/api/search?q=install"
    assert raw(server, "GET", path, {"Authorization": AUTH})[0] == 200
    for wrong in (f"Bearer {TOKEN}é".encode(), f"Bearer {TOKEN}é".encode("latin-1")):
        assert raw(server, "GET", path, {"Authorization": wrong})[0] == 401


# --- 7. /health without the token --------------------------------------------------------------


def test_health_without_the_token_says_only_up(server):
    for headers in ({}, {"Authorization": b"Bearer wrong"}, {"Authorization": TOKEN.encode()}):
        status, _, body = raw(server, "GET", "/health", headers)
        assert (status, json.loads(body)) == (200, {"status": "ok"}), headers
    status, _, body = raw(server, "GET", "/health", {"Authorization": AUTH})
    details = json.loads(body)
    assert status == 200 and details["status"] == "ok"
    assert len(details["sources"]["docs"]["commit"]) == 40
    assert details["models"]["embedder"] and details["index_version"]


def test_page_and_static_files_stay_open(server):
    assert raw(server, "GET", "/")[0] == 200
    assert raw(server, "GET", "/static/app.js")[0] == 200
    assert raw(server, "GET", "/api/sources")[0] == 401


def test_connections_on_the_listening_socket_send_without_delay():
    """The socket `docdex serve` binds hands asyncio connections with TCP_NODELAY, so an
    answer written in two parts is not held back by Nagle's algorithm."""
    listening = bound_socket("127.0.0.1", 0)
    listening.listen()

    async def accept_one() -> int:
        accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            sock = writer.get_extra_info("socket")
            accepted.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(on_connection, sock=listening)
        async with server:
            _reader, writer = await asyncio.open_connection(*listening.getsockname())
            nodelay = await accepted
            writer.close()
        return nodelay

    assert asyncio.run(accept_one()) != 0
