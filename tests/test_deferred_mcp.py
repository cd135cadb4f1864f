"""/mcp before and after the MCP SDK is built (server/deferred_mcp.py), driven as ASGI."""

from __future__ import annotations

import asyncio
import json
import threading
from contextlib import asynccontextmanager

from docdex.server.deferred_mcp import DeferredMCP


class FakeSessionManager:
    def __init__(self) -> None:
        self.running = False

    @asynccontextmanager
    async def run(self):
        self.running = True
        yield
        self.running = False


class FakeMCP:
    def __init__(self) -> None:
        self.session_manager = FakeSessionManager()


async def answer_ok(scope, receive, send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


async def request(app) -> tuple[int, bytes]:
    sent: list[dict] = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": [], "query_string": b""}
    await app(scope, receive, send)
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, body


def test_a_request_waits_for_the_build_then_reaches_the_sdk():
    release = threading.Event()
    mcp = FakeMCP()
    ready_calls = []

    def build():
        release.wait(10)  # the SDK "imports" until the request is already waiting
        return mcp, answer_ok

    async def scenario():
        deferred = DeferredMCP(build, on_ready=lambda: ready_calls.append(1))
        deferred.start()
        pending = asyncio.ensure_future(request(deferred))
        await asyncio.sleep(0.05)
        assert not pending.done()  # waiting, not failed
        release.set()
        status, body = await asyncio.wait_for(pending, 10)
        assert mcp.session_manager.running
        await deferred.stop()
        return status, body

    assert asyncio.run(scenario()) == (200, b"ok")
    assert ready_calls == [1]
    assert not mcp.session_manager.running  # stopped with the server


def test_a_failed_build_answers_503_with_the_reason():
    def build():
        raise ImportError("no module named 'mcp'")

    async def scenario():
        deferred = DeferredMCP(build)
        deferred.start()
        answer = await asyncio.wait_for(request(deferred), 10)
        await deferred.stop()
        return answer

    status, body = asyncio.run(scenario())
    assert status == 503
    assert "could not be built" in json.loads(body)["error"]
    assert "no module named 'mcp'" in json.loads(body)["error"]


def with_deferred(grace: float, scenario) -> tuple[object, list[str]]:
    """Run `scenario(deferred, calls)` on a started DeferredMCP whose build appends to
    `calls` each time it runs, then stop it; the scenario's result and the calls."""
    calls: list[str] = []
    mcp = FakeMCP()

    def build():
        calls.append("built")
        return mcp, answer_ok

    async def main():
        deferred = DeferredMCP(build, grace=grace)
        deferred.start()
        try:
            return await scenario(deferred, calls)
        finally:
            await deferred.stop()

    return asyncio.run(main()), calls


def test_without_a_request_the_build_waits_out_its_grace():
    async def scenario(deferred, calls):
        await asyncio.sleep(0.1)
        built_early = len(calls)
        for _ in range(200):  # the grace, then the build in its thread
            if calls:
                break
            await asyncio.sleep(0.02)
        return built_early

    built_early, calls = with_deferred(0.3, scenario)
    assert built_early == 0  # /health and /api/search had the GIL to themselves
    assert calls == ["built"]


def test_an_mcp_request_ends_the_grace_at_once():
    async def scenario(deferred, _calls):
        return await asyncio.wait_for(request(deferred), 10)

    answer, calls = with_deferred(60, scenario)
    assert answer == (200, b"ok")
    assert calls == ["built"]


def test_a_server_stopped_in_its_grace_builds_nothing():
    async def scenario(deferred, _calls):
        await asyncio.sleep(0.05)
        await asyncio.wait_for(deferred.stop(), 5)
        return await request(deferred)

    (status, body), calls = with_deferred(60, scenario)
    assert calls == []
    assert (status, json.loads(body)["error"]) == (503, "the server is stopping")
