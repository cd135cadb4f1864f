"""Bind policy, Host header and bearer token checks (the middlewares over a stub app; the
real server is exercised in tests/server/http/test_server.py)."""

from __future__ import annotations

import asyncio
import json

import pytest

from docdex.server.http.access import (
    BearerAuth,
    BindRefused,
    HostCheck,
    allowed_hosts,
    check_bind,
    host_allowed,
    is_loopback,
    origin_allowed,
)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.5", False),
        ("docs.example.com", False),
    ],
)
def test_is_loopback(host, loopback):
    assert is_loopback(host) is loopback


def test_check_bind_needs_a_token_or_insecure_off_loopback():
    check_bind("127.0.0.1", None, False)
    check_bind("0.0.0.0", "token", False)
    check_bind("0.0.0.0", None, True)
    with pytest.raises(BindRefused, match="DOCDEX_TOKEN"):
        check_bind("10.0.0.1", None, False)
    with pytest.raises(BindRefused, match="--insecure"):
        check_bind("0.0.0.0", "", False)


def test_allowed_hosts():
    local = allowed_hosts("127.0.0.1")
    assert host_allowed("127.0.0.1:8085", local) and host_allowed("LOCALHOST:1", local)
    assert host_allowed("[::1]:8085", local) and host_allowed("localhost", local)
    assert not host_allowed("evil.example:8085", local) and not host_allowed("", local)
    assert not host_allowed("localhost.evil.example", local)

    bound = allowed_hosts("10.1.2.3", ["docs.example.com"])
    assert host_allowed("10.1.2.3:8085", bound) and host_allowed("docs.example.com", bound)
    assert not host_allowed("10.1.2.4:8085", bound)
    assert host_allowed("[fe80::1]:80", allowed_hosts("fe80::1"))
    # parsed and compared exactly, not by prefix
    for bad in ("localhost:evil.example.com", "localhost:", "localhost:1:2", "[::1]x", "a@b"):
        assert not host_allowed(bad, local), bad
    assert origin_allowed("http://LOCALHOST:8085", local)
    assert origin_allowed("https://[::1]", local)
    for bad in ("http://127.0.0.1:41655.evil.com", "http://localhost:@evil.com", "null"):
        assert not origin_allowed(bad, local), bad


def run_asgi(app, path: str, headers: dict[str, str]) -> tuple[int, dict]:
    sent: list[dict] = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "path": path,
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
    }
    asyncio.run(app(scope, receive, send))
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return sent[0]["status"], json.loads(body)


async def ok_app(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b'{"ok": true}'})


def test_bearer_auth_guards_everything_but_open_paths():
    app = BearerAuth(ok_app, token="t0ken")
    assert run_asgi(app, "/mcp", {})[0] == 401
    assert run_asgi(app, "/api/search", {"Authorization": "Bearer wrong"})[0] == 401
    assert run_asgi(app, "/api/search", {"Authorization": "Basic t0ken"})[0] == 401
    assert run_asgi(app, "/api/search", {"Authorization": "Bearer t0ken"})[0] == 200
    assert run_asgi(app, "/MCP", {"Authorization": "bearer t0ken"})[0] == 200
    assert run_asgi(app, "//mcp", {})[0] == 401  # unknown paths are guarded too
    assert run_asgi(app, "/health", {}) == (200, {"ok": True})
    assert run_asgi(app, "/", {})[0] == 200
    with pytest.raises(ValueError):
        BearerAuth(ok_app, token="")
    # the bytes sent are compared with the token's bytes (run_asgi sends UTF-8)
    utf8 = BearerAuth(ok_app, token="sécret")
    assert run_asgi(utf8, "/api/search", {"Authorization": "Bearer sécret"})[0] == 200


def test_host_check():
    app = HostCheck(ok_app, allowed_hosts("127.0.0.1"))
    assert run_asgi(app, "/health", {"Host": "127.0.0.1:8085"})[0] == 200
    status, body = run_asgi(app, "/health", {"Host": "attacker.example"})
    assert status == 421 and "Host" in body["error"]
