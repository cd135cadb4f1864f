"""A `docdex serve` in a child process, driven over HTTP and MCP.

The demo, the benchmarks and the tests all start real servers; this is the one way they do.
The server reads its own environment (it is an entry point): the caller's, unless it passes
another, with DOCDEX_TOKEN only when the server has a token.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from docdex.errors import DocdexError


class ServerFailed(DocdexError, RuntimeError):
    """The server exited or did not become ready; the message ends with its log's tail."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServeProcess:
    """`docdex --data DATA serve` on 127.0.0.1, in its own process group, output to `log`."""

    def __init__(
        self,
        data: Path,
        log: Path,
        worker: bool = False,
        token: str | None = None,
        host: str = "127.0.0.1",
        port: int | None = None,
        extra_args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        """`worker`: run the indexing worker beside it; `env`: extra environment variables;
        `environ`: the environment to start from (None: this process's)."""
        self.data, self.log, self.host = Path(data), Path(log), host
        self.port = port or free_port()
        self.token = token
        command = [sys.executable, "-m", "docdex.cli", "--data", str(self.data), "serve"]
        command += ["--host", host, "--port", str(self.port), *extra_args]
        if not worker:
            command.append("--no-worker")
        self.started = time.monotonic()
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self._environment(environ, env),
                start_new_session=True,  # stop it and its worker as one group
            )

    def _environment(
        self, environ: Mapping[str, str] | None, extra: dict[str, str] | None
    ) -> dict[str, str]:
        """`environ` (None: this process's, which the server inherits as a child would) with
        `extra`, and DOCDEX_TOKEN only when this server has a token."""
        inherited = os.environ if environ is None else environ
        environment = {k: v for k, v in inherited.items() if k != "DOCDEX_TOKEN"}
        environment.update(extra or {})
        if self.token:
            environment["DOCDEX_TOKEN"] = self.token
        return environment

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def mcp_url(self) -> str:
        return f"{self.url}/mcp"

    def __enter__(self) -> ServeProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- HTTP ------------------------------------------------------------------------------

    def get(self, path: str, params: dict[str, Any] | None = None) -> tuple[int, dict | None]:
        """(status, JSON body); status 0 when nothing answered."""
        url = self.url + path + ("?" + urllib.parse.urlencode(params) if params else "")
        request = urllib.request.Request(url)
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=30) as reply:
                return reply.status, json.loads(reply.read())
        except urllib.error.HTTPError as err:  # 4xx/5xx still carry a JSON body
            with contextlib.suppress(ValueError):
                return err.code, json.loads(err.read())
            return err.code, None
        except (OSError, ValueError):
            return 0, None

    def health(self) -> dict | None:
        return self.get("/health")[1]

    def api_search(self, query: str, n: int = 10, **filters: str) -> dict:
        status, body = self.get("/api/search", {"q": query, "n": n, **filters})
        if status != 200 or body is None:
            raise ServerFailed(f"/api/search answered {status}: {body}")
        return body

    # --- MCP -------------------------------------------------------------------------------

    def call_tool(self, name: str, arguments: dict[str, Any] | None = None):
        """One MCP tool call with the real client; returns its CallToolResult."""
        return call_tool(self.mcp_url, name, arguments, self.token)

    def call_tools(self, calls: list[tuple[str, dict[str, Any]]]) -> list:
        """Each (tool, arguments) over one MCP session; the CallToolResults in order."""
        return call_tools(self.mcp_url, calls, self.token)

    # --- life cycle ------------------------------------------------------------------------

    def wait_ready(self, timeout: float = 120) -> float:
        """Wait until /health answers at all (200 or 503); return seconds since start."""
        deadline = time.monotonic() + timeout
        while self.health() is None:
            self.check_alive()
            if time.monotonic() > deadline:
                raise ServerFailed(f"the server did not answer within {timeout} s{self.tail()}")
            time.sleep(0.05)
        return time.monotonic() - self.started

    def wait_serving(self, timeout: float = 120, version: int | None = None) -> dict:
        """Wait until /health reports a served version (at least `version`)."""
        deadline = time.monotonic() + timeout
        while True:
            self.check_alive()
            health = self.health() or {}
            served = health.get("index_version") or 0
            if served and served >= (version or 1):
                return health
            if time.monotonic() > deadline:
                raise ServerFailed(f"the server served no version within {timeout} s{self.tail()}")
            time.sleep(0.1)

    def check_alive(self) -> None:
        if self.proc.poll() is not None:
            raise ServerFailed(f"the server exited with status {self.proc.returncode}{self.tail()}")

    def output(self) -> str:
        """What the server has logged so far."""
        with contextlib.suppress(OSError):
            return self.log.read_text(errors="replace")
        return ""

    def tail(self, lines: int = 15) -> str:
        text = self.output().splitlines()[-lines:]
        return "; server log:\n" + "\n".join(text) if text else ""

    def rss_mb(self) -> float:
        """Resident memory of the server process itself (not its worker)."""
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        return int(status.split("VmRSS:")[1].split()[0]) / 1024

    def stop(self, group: bool = True) -> None:
        """SIGTERM (SIGKILL after 20 s) to the server and its worker; with group=False to
        the server alone, for a test that checks the server stops its worker itself."""
        kill = os.killpg if group else os.kill
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


# --- MCP clients -------------------------------------------------------------------------------


def mcp_client(mcp_url: str, token: str | None = None):
    """A real MCP client (streamable HTTP), sending the bearer token when there is one."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http_client = httpx2.AsyncClient(headers=headers, timeout=60)
    return Client(streamable_http_client(mcp_url, http_client=http_client))


def call_tools(
    mcp_url: str, calls: list[tuple[str, dict[str, Any]]], token: str | None = None
) -> list:
    """Each (tool, arguments) over one MCP session; the CallToolResults in order."""

    async def run() -> list:
        async with mcp_client(mcp_url, token) as client:
            return [await client.call_tool(name, arguments) for name, arguments in calls]

    return asyncio.run(run())


def call_tool(
    mcp_url: str, name: str, arguments: dict[str, Any] | None = None, token: str | None = None
):
    """One MCP tool call; its CallToolResult."""
    return call_tools(mcp_url, [(name, arguments or {})], token)[0]
