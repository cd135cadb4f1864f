"""What several test modules share: the pages of a small documentation repository, that
repository indexed, waiting for a condition, and raw HTTP requests (headers, methods and
bodies as given; servers themselves are started with docdex.serverproc.ServeProcess)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from docdex.index_format.config import Config, Settings, SourceConfig, save_config
from docdex.index_format.layout import DataDir
from docdex.indexer.run.pipeline import index_sources
from docdex.server.engine import Engine, EngineSettings, Scope, SearchResult
from docdex.serverproc import ServeProcess

from gitrepo import Workspace

INSTALL = """---
title: Install guide
tags: [setup, install]
---
# Install

Run the installer with `--prefix /opt/docdex` to pick a directory.

## Requirements

Python 3.11 and a C compiler are needed to build hnswlib from source.
"""

FAQ = """# FAQ

## Why is my index stale?

The post-receive hook files a request; the worker publishes a new version within seconds.
"""

FAQ_E1234 = (  # the FAQ with a section an exact-token search finds
    FAQ
    + """
## Error E1234

The error code E1234 means the writer lock file is busy: another indexer is running.
"""
)

API = """# API reference

## Endpoints

`GET /api/search?q=...` returns the same JSON as the search_docs tool.

## Tokens

Set DOCDEX_TOKEN to require a bearer token on every request.
"""


def pushed_workspace(root: Path, files: dict[str, str]) -> Workspace:
    """A bare repository whose first push carries `files`."""
    ws = Workspace(root)
    for path, text in files.items():
        ws.write(path, text)
    ws.commit_and_push("initial")
    return ws


def build_workspace(root: Path) -> Workspace:
    """guide/install.md, faq.md (FAQ_E1234) and reference/api.md, pushed."""
    return pushed_workspace(
        root, {"guide/install.md": INSTALL, "faq.md": FAQ_E1234, "reference/api.md": API}
    )


def index_workspace(data: DataDir, ws: Workspace, embedder, **settings) -> int:
    """`ws` as the source "docs" of `data`, indexed; the published version."""
    config = Config(
        settings=Settings(**settings), sources=[SourceConfig(name="docs", location=str(ws.bare))]
    )
    data.ensure()
    save_config(data, config)
    report = index_sources(data, config, embedder=embedder)
    assert report.published, report
    return report.version


@contextmanager
def served_workspace(root: Path, embedder, token: str | None = None) -> Iterator[ServeProcess]:
    """build_workspace indexed under root/data and answered by a real `docdex serve` (with
    `token` required, when given) until the block ends."""
    data = DataDir(root / "data")
    index_workspace(data, build_workspace(root), embedder)
    with ServeProcess(data.root, root / "serve.log", token=token) as server:
        server.wait_serving()
        yield server


def open_indexed_docs(root: Path, files: dict[str, str], embedder, **settings):
    """`files` pushed, indexed as the source "docs", and opened as the server opens them (a
    `Docs` whose holder follows new versions; stop it with `docs.holder.stop()`)."""
    return open_workspace_docs(root, pushed_workspace(root, files), embedder, **settings)


def open_workspace_docs(root: Path, ws: Workspace, embedder, **settings):
    """`ws` indexed as the source "docs" of root/data, opened as the server opens it."""
    from docdex.server.boot import Boot, open_docs

    data = DataDir(root / "data")
    index_workspace(data, ws, embedder, **settings)
    model: Future = Future()
    model.set_result(embedder)
    return open_docs(data, Boot(), model)


@contextmanager
def indexed_engine(root: Path, files: dict[str, str], embedder) -> Iterator[Engine]:
    """`files` pushed, indexed as the source "docs" of root/data, and opened as an Engine."""
    data = DataDir(root / "data")
    index_workspace(data, pushed_workspace(root / "docs", files), embedder)
    opened = Engine.open(data, embedder)
    try:
        yield opened
    finally:
        opened.close()


def search_index(
    data: DataDir, embedder, query: str, num_results: int = 10, source: str = "", **settings
) -> SearchResult:
    """One search of the version CURRENT names in `data`, by an engine opened for it with
    `settings`; `source`: one manifest entry (every entry when empty)."""
    engine = Engine.open(data, embedder, settings=EngineSettings(**settings))
    try:
        return engine.search(query, num_results, Scope(frozenset([source] if source else [])))
    finally:
        engine.close()


def wait_for(predicate, timeout: float = 20, what: str = "condition", poll: float = 0.1):
    """predicate()'s first true value, asked every `poll` seconds for up to `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(poll)
    raise AssertionError(f"timed out waiting for {what}")


@dataclass
class HttpReply:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)

    def json(self):
        return json.loads(self.body)


def http(url: str, headers: dict[str, str] | None = None, method: str = "GET", data=None):
    request = urllib.request.Request(url, headers=headers or {}, method=method, data=data)
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return HttpReply(reply.status, reply.read(), dict(reply.headers))
    except urllib.error.HTTPError as err:
        return HttpReply(err.code, err.read(), dict(err.headers))
