"""Searchers that ask a real server without pause while something changes under it (new
versions, another model), keeping every answer and every failure."""

from __future__ import annotations

import asyncio
import threading
import urllib.parse

from mcp import Client

from fixtures import http


class Searcher(threading.Thread):
    """Searches without pause until stopped, keeping every answer (or failure)."""

    def __init__(self, name: str, stop: threading.Event) -> None:
        super().__init__(name=name, daemon=True)
        self.stop = stop
        self.answers: list[dict] = []
        self.failures: list[str] = []


class HttpSearcher(Searcher):
    def __init__(self, url: str, query: str, stop: threading.Event) -> None:
        super().__init__("http-searcher", stop)
        self.url = f"{url}/api/search?" + urllib.parse.urlencode({"q": query, "n": 10})

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                reply = http(self.url)
            except OSError as exc:
                self.failures.append(repr(exc))
                continue
            if reply.status != 200:
                self.failures.append(f"{reply.status}: {reply.body[:200]!r}")
            else:
                self.answers.append(reply.json())


class McpSearcher(Searcher):
    def __init__(self, url: str, query: str, stop: threading.Event) -> None:
        super().__init__("mcp-searcher", stop)
        self.url = url
        self.query = query

    def run(self) -> None:
        asyncio.run(self._run())

    async def _run(self) -> None:
        async with Client(self.url) as client:
            while not self.stop.is_set():
                try:
                    result = await client.call_tool("search_docs", {"query": self.query})
                except Exception as exc:  # noqa: BLE001 - every failure is a finding
                    self.failures.append(repr(exc))
                    continue
                if result.is_error:
                    self.failures.append(result.content[0].text)
                else:
                    self.answers.append(result.structured_content)
