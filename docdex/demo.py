"""`just demo`: docdex end to end on the docs that ship with it, with nothing faked.

A temporary bare repository gets the repository's own markdown (README, docs/, FORMAT.md)
through a real `git push`; the installed post-receive hook queues it; `docdex serve` and its
worker index it; one real MCP `search_docs` call shows the hits; it ends by printing the search
page's URL. Then it serves until Ctrl-C (or exits at once with `--exit` / DOCDEX_DEMO_EXIT=1)
and removes everything it made. An entry point: it reads the environment, and gives its git
commands and its server the same one without DOCDEX_TOKEN (a loopback demo: no token) and
with a neutral git identity.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

from docdex.errors import DocdexError
from docdex.index_format.layout import DataDir
from docdex.indexer.triggers.worker import worker_pid
from docdex.runtime.environment import read_environment

from .serverproc import ServeProcess

ROOT = Path(__file__).resolve().parents[1]
SOURCE = "docdex-docs"
QUERY = "how does a git push get indexed?"
READY_TIMEOUT_S = 180
INDEX_TIMEOUT_S = 600
WORKER_STOP_S = 30  # a worker stops its cycle and exits on SIGTERM
GIT_ENV = {
    "GIT_AUTHOR_NAME": "docdex demo",
    "GIT_AUTHOR_EMAIL": "demo@docdex.invalid",
    "GIT_COMMITTER_NAME": "docdex demo",
    "GIT_COMMITTER_EMAIL": "demo@docdex.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,  # the user's own git settings (signing, hooksPath) stay out
    "GIT_CONFIG_NOSYSTEM": "1",
}


class DemoError(DocdexError):
    """A step of the demo failed (a git command, the indexing)."""


def main(argv: list[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """The demo, in the environment `environ` (default: this process's)."""
    parser = argparse.ArgumentParser(prog="python -m docdex.demo", description=__doc__)
    parser.add_argument("--exit", action="store_true", help="exit after the search")
    args = parser.parse_args(argv)
    inherited = os.environ if environ is None else environ
    demo_environ = {k: v for k, v in inherited.items() if k != "DOCDEX_TOKEN"} | GIT_ENV
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started ignoring it
    tmp = Path(tempfile.mkdtemp(prefix="docdex-demo-"))
    data = DataDir(tmp / "data")
    started: list[ServeProcess] = []
    try:
        exit_after = args.exit or read_environment(demo_environ).demo_exit
        url = _run(tmp, data, demo_environ, started)
        if not exit_after:
            say(f"serving {url}/ until Ctrl-C (server log: {tmp / 'serve.log'})")
            started[0].proc.wait()
        return 0
    except DocdexError as exc:
        print(f"docdex demo: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        say("stopping…")
        return 0
    finally:
        _stop(started[0] if started else None, data)
        shutil.rmtree(tmp, ignore_errors=True)


def _run(tmp: Path, data: DataDir, environ: Mapping[str, str], started: list[ServeProcess]) -> str:
    work, bare = tmp / "work", tmp / "docs.git"
    git = Git(environ)
    count = _make_repo(git, work, bare)
    say(f"made a bare repository with {count} markdown files that ship with docdex")
    _install_hook(environ, data, bare)
    say(f"installed the post-receive hook in {bare} (source {SOURCE})")
    server = ServeProcess(data.root, tmp / "serve.log", worker=True, environ=environ)
    started.append(server)
    say(f"starting `docdex serve` on {server.url} with its indexing worker…")
    server.wait_ready(READY_TIMEOUT_S)
    say("pushing…")
    for line in _push(git, work):
        say(f"  {line}")
    _wait_searchable(server)
    _search(server)
    _print_connection(server.mcp_url)
    print(f"\nSearch page for people, in a browser: {server.url}/", flush=True)
    return server.url


# --- the repository ------------------------------------------------------------------------


def shipped_docs() -> dict[str, bytes]:
    """Markdown that ships with docdex: the checkout's own docs, else the packaged spec."""
    files = {}
    for pattern in ("README.md", "docs/**/*.md", "index-format/FORMAT.md"):
        for path in sorted(ROOT.glob(pattern)):
            files[path.relative_to(ROOT).as_posix()] = path.read_bytes()
    if not files:
        spec = resources.files("docdex.index_format").joinpath("FORMAT.md")
        files["index-format/FORMAT.md"] = spec.read_bytes()
    return files


class Git:
    """git commands in one environment (the push's hook and worker inherit it)."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.environ = dict(environ)

    def __call__(self, cwd: Path, *args: str) -> subprocess.CompletedProcess:
        result = subprocess.run(
            ["git", *args], cwd=cwd, env=self.environ, capture_output=True, text=True
        )
        if result.returncode != 0:
            raise DemoError(f"git {' '.join(args[:2])} failed: {result.stderr.strip()}")
        return result


def _make_repo(git: Git, work: Path, bare: Path) -> int:
    files = shipped_docs()
    git(work.parent, "init", "-q", "--bare", "--initial-branch=main", str(bare))
    git(work.parent, "init", "-q", "--initial-branch=main", str(work))
    for name, content in files.items():
        target = work / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "docs that ship with docdex")
    git(work, "remote", "add", "origin", str(bare))
    return len(files)


def _install_hook(environ: Mapping[str, str], data: DataDir, bare: Path) -> None:
    """`docdex hook install`, as a user runs it, with the demo's git settings."""
    command = [sys.executable, "-m", "docdex.cli", "--data", str(data.root), "hook", "install"]
    command += [str(bare), "--source", SOURCE]
    done = subprocess.run(command, env=dict(environ), capture_output=True, text=True)
    if done.returncode != 0:
        raise DemoError(f"docdex hook install failed: {done.stderr.strip()}")


def _push(git: Git, work: Path) -> list[str]:
    result = git(work, "push", "origin", "main")
    return [ln.strip() for ln in result.stderr.splitlines() if ln.startswith("remote: docdex")]


# --- the server ----------------------------------------------------------------------------


def _wait_searchable(server: ServeProcess) -> None:
    started = time.monotonic()
    shown = None
    while True:
        server.check_alive()
        health = server.health() or {}
        failure = health.get("last_ingestion_failure")
        if failure:
            raise DemoError(f"indexing failed: {failure.get('error')}{server.tail()}")
        chunks = health.get("total_chunks") or 0
        if health.get("index_version") and chunks:
            took = time.monotonic() - started
            say(f"indexed: version {health['index_version']}, {chunks} chunks, {took:.1f} s")
            return
        line = "indexing… (the worker embeds every section of the pushed files)"
        if line != shown:
            say(line)
            shown = line
        if time.monotonic() - started > INDEX_TIMEOUT_S:
            raise DemoError(f"nothing searchable after {INDEX_TIMEOUT_S} s{server.tail()}")
        time.sleep(0.3)


def _stop(server: ServeProcess | None, data: DataDir) -> None:
    """The server and its worker, then a worker the hook started before serve's, if any;
    returns once the worker is gone, so that nothing writes into the files removed next."""
    if server is not None:
        server.stop()
    pid = worker_pid(data) if data.state.is_dir() else None
    if pid is not None and pid != os.getpid():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        _wait_gone(pid, WORKER_STOP_S)


def _wait_gone(pid: int, timeout_s: float) -> None:
    """Until `pid` has exited (a zombie nobody reaps yet counts as exited)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            return
        if state == "Z":
            return
        time.sleep(0.05)


# --- the search ----------------------------------------------------------------------------


def _search(server: ServeProcess) -> None:
    result = server.call_tool("search_docs", {"query": QUERY, "num_results": 5})
    if result.is_error:
        raise DemoError(f"search_docs failed: {result.content[0].text}")
    hits = result.structured_content["results"]
    say(f'search_docs "{QUERY}" over MCP: {len(hits)} hits')
    for hit in hits:
        lines = [ln.strip() for ln in hit["text"].splitlines() if ln.strip()]
        first = next((ln for ln in lines if not ln.startswith("#")), lines[0] if lines else "")
        print(f"  {hit['path']}:{hit['start_line']}-{hit['end_line']}  {hit['heading']}")
        print(f"      {first[:100]}")


def _print_connection(mcp_url: str) -> None:
    from docdex.server.http.clients import CLAUDE_CODE, http_config

    print(f"\nMCP endpoint (streamable HTTP): {mcp_url}")
    print("Add it to an agent with this .mcp.json (other clients: docs/clients.md):")
    print(json.dumps(http_config(CLAUDE_CODE, mcp_url, token_required=False), indent=2), flush=True)


def say(message: str) -> None:
    print(message, flush=True)


def _interrupt(*_) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
