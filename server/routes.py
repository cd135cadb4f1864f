"""The plain HTTP routes beside /mcp: `/` (what this is, client configurations), /health,
/api/search.

/api/search answers with the same JSON as search_docs: 400 for bad arguments, 503 while no
version can be served.
"""

from __future__ import annotations

from typing import Any

import msgspec
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from .budget import DEFAULT_MAX_CHARS
from .clients import configs_text
from .documents import Docs
from .errors import SearchError
from .search import MAX_RESULTS
from .versions import NoVersion

MCP_PATH = "/mcp"

_encode = msgspec.json.Encoder().encode


def http_routes(docs: Docs, token_required: bool) -> list[Route]:
    async def health(request: Request) -> Response:
        status, body = docs.health()
        return _json(status, body)

    async def api_search(request: Request) -> Response:
        return await _api_search(docs, request)

    async def index(request: Request) -> Response:
        return PlainTextResponse(index_page(str(request.base_url).rstrip("/"), token_required))

    return [
        Route("/", index, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
        Route("/api/search", api_search, methods=["GET"]),
    ]


async def _api_search(docs: Docs, request: Request) -> Response:
    params = request.query_params
    try:
        n = int(params.get("n", "10"))
    except ValueError:
        return _json(400, {"error": f"n must be an integer between 1 and {MAX_RESULTS}"})
    try:
        max_chars = int(params.get("max_chars", DEFAULT_MAX_CHARS))
    except ValueError:
        return _json(400, {"error": "max_chars must be an integer"})
    try:
        result = await run_in_threadpool(
            docs.search,
            params.get("q", ""),
            n,
            params.get("source", ""),
            params.get("path_prefix", ""),
            max_chars,
        )
    except SearchError as exc:
        return _json(400, {"error": str(exc)})
    except NoVersion as exc:
        return _json(503, {"error": str(exc)})
    return _json(200, result)


def _json(status: int, body: Any) -> Response:
    return Response(_encode(body), status_code=status, media_type="application/json")


def index_page(base: str, token_required: bool) -> str:
    """The text at `/`: the MCP endpoint, the tools, and each client's configuration for this
    server (server/clients.py; docs/clients.md explains them)."""
    mcp_url = f"{base}{MCP_PATH}"
    auth = "Requests to /mcp and /api need 'Authorization: Bearer <DOCDEX_TOKEN>'.\n"
    return f"""docdex: documentation search for AI agents, over MCP.

MCP endpoint (streamable HTTP): {mcp_url}
Tools: search_docs, query_docs, get_document, list_sources, reindex
Also: {base}/health (status), {base}/api/search?q=...&n=10 (same JSON as search_docs)
{auth if token_required else ""}
Client configurations (stdio: the client starts docdex on its own machine; put in your paths):

{configs_text(mcp_url, token_required)}"""
