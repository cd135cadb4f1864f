"""The plain HTTP routes beside /mcp.

    /              the search page for a browser (search_page.py); for curl and scripts, what
                   this server is and each MCP client's configuration (= /clients.txt)
    /clients.txt   that text
    /health        status (health.py); with a token, only {"status": ...} without it
    /api/search    the same JSON as search_docs (changed_since= too)
    /api/changes   the same JSON as the changes tool
    /api/sources   the same JSON as list_sources
    /api/page      a page rendered for the search page (answers/page_views.py)
    /api/clients   the client configurations as JSON, for the page's "Connect an agent"
    /static/NAME   the page's script, stylesheet and icon

/api answers 400 for bad arguments, 404 for a page the served version does not hold (or a
point of history the repository does not), 503 while no version can be served or when a
source's repository cannot be read; with a token it needs the token (access.py), as /mcp does.
Every answer is the caller's (`Docs.for_caller` with its grant's sources, grants.py): a token
limited to some sources gets those only, /health included.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import msgspec
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from docdex.errors import DocdexError, InvalidArgument, NotFound
from docdex.index_format.config import SourceError
from docdex.server.answers.budget import DEFAULT_MAX_CHARS
from docdex.server.answers.docs import Docs
from docdex.server.answers.source_limits import limit_in
from docdex.server.engine import MAX_RESULTS
from docdex.server.versions import NoVersion

from .clients import EXAMPLE_LAUNCH, Launch, configs_json, configs_text, served_launch
from .grants import is_authorized
from .search_page import shell, static_routes, wants_page

MCP_PATH = "/mcp"
# The status of a refused call, by its error's type; any other DocdexError is a 500.
ERROR_STATUS: tuple[tuple[type[DocdexError], int], ...] = (
    (InvalidArgument, 400),
    (NotFound, 404),
    (NoVersion, 503),
    (SourceError, 503),
)

log = logging.getLogger("docdex.server")

_encode = msgspec.json.Encoder().encode


def http_routes(docs: Docs, token_required: bool, url_only: str = "") -> list[Route]:
    """The routes over `docs`; `url_only`: the address a client that takes only a URL is
    given (OAuth's resource, PUBLIC_URL/mcp; "" without OAuth)."""

    def base(request: Request) -> str:
        return str(request.base_url).rstrip("/")

    def mine(request: Request) -> Docs:
        return docs.for_caller(limit_in(request.scope))

    async def index(request: Request) -> Response:
        if wants_page(request):
            return shell(request)
        return await clients_text(request)

    served = served_launch(docs.data.root)

    def launch(request: Request) -> Launch:
        """This server's own paths, for whoever may read the index; the documentation's
        examples for a caller without the token (the text is open: it names no file)."""
        if token_required and not is_authorized(request.scope):
            return EXAMPLE_LAUNCH
        return served

    async def clients_text(request: Request) -> Response:
        text = index_page(base(request), token_required, launch(request), url_only)
        return PlainTextResponse(text)

    async def clients(request: Request) -> Response:
        mcp_url = f"{base(request)}{MCP_PATH}"
        return _json(200, configs_json(mcp_url, token_required, launch(request), url_only))

    async def health(request: Request) -> Response:
        status, body = mine(request).health()
        if token_required and not is_authorized(request.scope):
            body = {"status": body["status"]}  # up or not; the details need the token
        return _json(status, body)

    async def api_search(request: Request) -> Response:
        return await _api_search(mine(request), request)

    async def api_sources(request: Request) -> Response:
        return await _answer(mine(request).list_sources)

    async def api_changes(request: Request) -> Response:
        return await _api_changes(mine(request), request)

    async def api_page(request: Request) -> Response:
        return await _answer(mine(request).page_view, request.query_params.get("doc_id", ""))

    return [
        Route("/", index, methods=["GET"]),
        Route("/clients.txt", clients_text, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
        Route("/api/search", api_search, methods=["GET"]),
        Route("/api/sources", api_sources, methods=["GET"]),
        Route("/api/changes", api_changes, methods=["GET"]),
        Route("/api/page", api_page, methods=["GET"]),
        Route("/api/clients", clients, methods=["GET"]),
        *static_routes(),
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
    return await _answer(
        docs.search,
        params.get("q", ""),
        n,
        params.get("source", ""),
        params.get("path_prefix", ""),
        max_chars,
        params.get("ref", ""),
        (),
        params.get("changed_since", ""),
    )


async def _api_changes(docs: Docs, request: Request) -> Response:
    params = request.query_params
    try:
        max_chars = int(params.get("max_chars", DEFAULT_MAX_CHARS))
    except ValueError:
        return _json(400, {"error": "max_chars must be an integer"})
    named = ("source", "since", "until", "ref", "path_prefix", "cursor")
    return await _answer(docs.changes, *(params.get(name, "") for name in named), max_chars)


async def _answer(call: Callable[..., Any], *args: Any) -> Response:
    """`call(*args)` in a worker thread, as JSON; a DocdexError as {"error": its message}, with
    the status ERROR_STATUS gives its type."""
    try:
        result = await run_in_threadpool(call, *args)
    except DocdexError as exc:
        status = next((code for kind, code in ERROR_STATUS if isinstance(exc, kind)), 500)
        if status == 500:
            log.error("%s failed: %s", getattr(call, "__name__", "a route"), exc)
        return _json(status, {"error": str(exc)})
    return _json(200, result)


def _json(status: int, body: Any) -> Response:
    return Response(_encode(body), status_code=status, media_type="application/json")


def index_page(
    base: str, token_required: bool, launch: Launch = EXAMPLE_LAUNCH, url_only: str = ""
) -> str:
    """The text at `/clients.txt` (and `/` for anything but a browser): the MCP endpoint, the
    tools, and each client's configuration for this server (server/http/clients.py;
    docs/clients.md explains them), its stdio entries launching `launch`."""
    mcp_url = f"{base}{MCP_PATH}"
    auth = "Requests to /mcp and /api need 'Authorization: Bearer <DOCDEX_TOKEN>'.\n"
    paths = (
        "put in your paths"
        if launch.has_placeholders
        else "these are this server's paths, for a client on its machine"
    )
    return f"""docdex: documentation search for AI agents, over MCP.

MCP endpoint (streamable HTTP): {mcp_url}
Tools: search_docs, query_docs, get_document, list_sources, changes, reindex
Also: {base}/ in a browser (the search page), {base}/health (status),
{base}/api/search?q=...&n=10 (same JSON as search_docs),
{base}/api/changes?source=...&since=... (same JSON as changes)
{auth if token_required else ""}
Client configurations (stdio: the client starts docdex on its own machine; {paths}):

{configs_text(mcp_url, token_required, launch, url_only)}"""
