"""docs/first-run.md as a newcomer follows it: its commands, read from the page's fenced
blocks, run in order in a new home directory (the installed `docdex` on PATH, the default
data directory), then a real MCP client connects with each client configuration the page
gives and asks the page's question. The page cannot drift from what docdex does.

The page marks each block it holds (`<!-- first-run: KIND -->`): `run` blocks run as
written; `serve` is started and stopped; `client http` and `client stdio` are the
configurations a client reads (the HTTP one on the test's own port); `ask` is the tool
call. Of `install`, the install line itself is what `just wheel-check` does with the built
wheel; its other lines run here."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from mcp import Client, StdioServerParameters

from docdex.index_format.layout import DataDir
from docdex.indexer.triggers.worker import worker_pid
from docdex.runtime.environment import read_environment
from docdex.serverproc import free_port, mcp_client

from fixtures import http, wait_for
from gitrepo import GIT_ENV

PAGE = Path(__file__).resolve().parents[2] / "docs" / "first-run.md"
BLOCK = re.compile(r"<!-- first-run: ([a-z ]+) -->\n```(\w+)\n(.*?)\n```", re.DOTALL)
DOCUMENTED_PORT = 8085


def page_blocks() -> list[tuple[str, str]]:
    """(kind, text) of each marked block, in page order."""
    return [(kind, text) for kind, _language, text in BLOCK.findall(PAGE.read_text())]


def newcomer_environment(home: Path, port: int) -> dict[str, str]:
    """A shell of a user with a new home: docdex's variables unset but the port (and the
    machine's model cache, which only saves time), the installed `docdex` first on PATH."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("DOCDEX_", "XDG_"))}
    tools = str(Path(sys.executable).parent)
    return {
        **kept,
        **GIT_ENV,
        "HOME": str(home),
        "PATH": f"{tools}{os.pathsep}{kept.get('PATH', '')}",
        "DOCDEX_PORT": str(port),
        "DOCDEX_CACHE": str(read_environment(os.environ).cache_dir),
    }


def shell(text: str, home: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        ["bash", "-e", "-c", text], cwd=home, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, f"{text}\nfailed:\n{done.stdout}{done.stderr}"
    return done.stdout + done.stderr


def ask(config: dict, question: dict, env: dict[str, str], port: int):
    """The question's tool call through a client built from `config`, as a client reads it."""
    if "url" in config:
        url = config["url"].replace(f":{DOCUMENTED_PORT}/", f":{port}/")
        client = mcp_client(url)
    else:
        server = StdioServerParameters(command=config["command"], args=config["args"], env=env)
        client = Client(server)

    async def call():
        async with client as session:
            return await session.call_tool(question["tool"], question["arguments"])

    return asyncio.run(call())


def healthy(url: str) -> bool:
    try:
        return http(url).status == 200
    except OSError:  # not listening yet
        return False


def stop_worker(data: DataDir) -> None:
    """End the worker the hook started, if it still waits for work (not our child)."""
    pid = worker_pid(data)
    if pid is None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not Path(f"/proc/{pid}").exists(), 30, f"the worker {pid} to end")


def test_the_first_run_page_runs_as_written(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    port = free_port()
    env = newcomer_environment(home, port)
    blocks = page_blocks()
    kinds = [kind for kind, _ in blocks]
    assert kinds == ["install", "run", "run", "run", "run", "serve"] + [
        "client http",
        "client stdio",
        "ask",
    ]
    install, *steps = (text for kind, text in blocks if kind in ("install", "run"))
    install_line, *checks = install.splitlines()
    assert install_line.startswith("pipx install ./docdex")
    said = [shell("\n".join(checks), home, env)] + [shell(step, home, env) for step in steps]
    assert said[0].startswith("docdex ")
    assert "remote: docdex: queued for indexing: docs@" in said[3]
    assert "version 1 (current)" in said[4] and "docs:guide/keys.md:1-4" in said[4]

    (serve,) = (text for kind, text in blocks if kind == "serve")
    data = DataDir(home / ".local" / "share" / "docdex")
    log = (tmp_path / "serve.log").open("w")
    server = subprocess.Popen(
        ["bash", "-c", f"exec {serve}"], cwd=home, env=env, stdout=log, stderr=log,
        start_new_session=True,
    )  # fmt: skip
    try:
        address = f"http://127.0.0.1:{port}"
        wait_for(lambda: healthy(f"{address}/health"), 120, "docdex serve to answer")
        assert address in (tmp_path / "serve.log").read_text()
        question = json.loads(next(text for kind, text in blocks if kind == "ask"))
        for kind in ("client http", "client stdio"):
            config = json.loads(next(text for k, text in blocks if k == kind))
            result = ask(config["mcpServers"]["docdex"], question, env, port)
            assert not result.is_error, (kind, result.content)
            first = result.structured_content["results"][0]
            assert first["path"] == "guide/keys.md", kind
            assert "rotated every 90 days" in first["text"], kind
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)  # the server and the worker beside it
        server.wait(30)
        log.close()
        stop_worker(data)
