"""/mcp before and after the MCP SDK is built (server/mcp/deferred.py), driven as ASGI."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from docdex.server.mcp.deferred import DeferredMCP

LONG_GRACE = 600  # cannot run out during a test: only a request (or a stop) ends it
SHORT_GRACE = 0.3  # runs out during the test; it is waited for with a deadline, not a sleep
MONOTONIC_RESOLUTION = time.get_clock_info("monotonic").resolution


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


async def until(predicate, timeout: float):
    """predicate()'s first true value, polled on the event loop for up to `timeout` seconds
    (a deadline for something that must happen, never a guess at how long it takes)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not (value := predicate()) and loop.time() < deadline:
        await asyncio.sleep(0.01)
    return value


def test_a_request_waits_for_the_build_then_reaches_the_sdk():
    building = threading.Event()
    release = threading.Event()
    mcp = FakeMCP()
    ready_calls = []

    def build():
        building.set()
        release.wait(10)  # the SDK "imports" until the request is seen waiting
        return mcp, answer_ok

    async def scenario():
        # the grace cannot run out during the test: only the request starts the build
        deferred = DeferredMCP(build, on_ready=lambda: ready_calls.append(1), grace=LONG_GRACE)
        deferred.start()
        pending = asyncio.ensure_future(request(deferred))
        # the build has begun, so the request has arrived (it started it) and now waits
        assert await asyncio.to_thread(building.wait, 10)
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


@dataclass
class Builds:
    """What a DeferredMCP's build did: "built" in `calls` and time.monotonic() in `at` each
    time it ran; `started`: time.monotonic() just before DeferredMCP.start."""

    calls: list[str] = field(default_factory=list)
    at: list[float] = field(default_factory=list)
    started: float = 0.0


def with_deferred(grace: float, scenario) -> tuple[object, Builds]:
    """Run `scenario(deferred, builds)` on a started DeferredMCP whose build records itself
    in `builds`, then stop it; the scenario's result and the builds."""
    builds = Builds()
    mcp = FakeMCP()

    def build():
        builds.at.append(time.monotonic())
        builds.calls.append("built")
        return mcp, answer_ok

    async def main():
        deferred = DeferredMCP(build, grace=grace)
        builds.started = time.monotonic()
        deferred.start()
        try:
            return await scenario(deferred, builds)
        finally:
            await deferred.stop()

    return asyncio.run(main()), builds


def test_without_a_request_the_build_waits_out_its_grace():
    async def scenario(deferred, builds):
        built_early = len(builds.calls)
        await until(lambda: builds.calls, 30)  # the grace, then the build in its thread
        return built_early

    built_early, builds = with_deferred(SHORT_GRACE, scenario)
    assert built_early == 0  # /health and /api/search had the GIL to themselves
    assert builds.calls == ["built"]
    # Not before the grace ran out. No timing assumption: the grace's timer is set at or
    # after `started` and asyncio fires a timer at most its clock resolution early, so this
    # holds however slow the machine is (a stall only widens the gap); with a grace of 0 the
    # build comes milliseconds after the start and this fails.
    assert builds.at[0] - builds.started >= SHORT_GRACE - MONOTONIC_RESOLUTION


def test_an_mcp_request_ends_the_grace_at_once():
    async def scenario(deferred, _builds):
        return await asyncio.wait_for(request(deferred), 10)  # 10 s: far inside the grace

    answer, builds = with_deferred(LONG_GRACE, scenario)
    assert answer == (200, b"ok")
    assert builds.calls == ["built"]


def test_a_server_stopped_in_its_grace_builds_nothing():
    async def scenario(deferred, builds):
        # The grace cannot run out during the test, so no build may come. A DeferredMCP
        # that ignored its grace would build at once: watch for that for a second first.
        # (This wait can only miss such a bug on a stalled machine, never fail a good one.)
        assert not await until(lambda: builds.calls, 1.0)
        await asyncio.wait_for(deferred.stop(), 5)
        return await request(deferred)

    (status, body), builds = with_deferred(LONG_GRACE, scenario)
    assert builds.calls == []
    assert (status, json.loads(body)["error"]) == (503, "the server is stopping")
