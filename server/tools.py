"""The MCP tools: search_docs, query_docs, get_document, list_sources, reindex.

Each tool is a thin function over `Docs` whose signature is its input schema; its answer
goes out as structured content plus the same JSON as text. `SearchError` and `NoVersion`
become tool errors the agent can act on; anything else is a bug and surfaces as one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Annotated, Any

import msgspec
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError, create_model

from .budget import DEFAULT_MAX_CHARS, MAX_MAX_CHARS, MIN_MAX_CHARS
from .documents import Docs
from .errors import SearchError
from .search import MAX_RESULTS, Hit, SearchResult
from .validation import MAX_LIMIT
from .versions import NoVersion

log = logging.getLogger("docdex.server")

_encode = msgspec.json.Encoder().encode

INSTRUCTIONS = (
    "Documentation search over markdown from git. Start with search_docs "
    "(query in English); cite path and lines from its results."
)


def _pydantic_model(struct: type[msgspec.Struct], name: str, doc: str | None = None, **types):
    """A pydantic model with the fields of a msgspec Struct, for the SDK's output schemas:
    the schema follows the Struct the answer is encoded from, so the two cannot drift."""
    fields = {
        f.name: (types.get(f.name, f.type), ... if f.required else f.default)
        for f in msgspec.structs.fields(struct)
    }
    return create_model(name, __doc__=doc, **fields)


HitModel = _pydantic_model(Hit, "HitModel")
SearchOutput = _pydantic_model(
    SearchResult,
    "SearchOutput",
    "search_docs' structured content (the same JSON as GET /api/search).",
    results=list[HitModel],
)


SEARCH_DESCRIPTION = (
    "Search the indexed documentation (markdown pages from git repositories) and return the "
    "best-matching sections. Write the query in English, whatever language the conversation "
    "is in: keywords, an identifier, an error message or code, or a short question. Each "
    "result cites where it comes from: source, path, start_line-end_line of the file at "
    "commit, and the heading breadcrumb; `text` is the section's raw markdown. Cite results as "
    "path:start_line-end_line. Fetch the whole page with get_document(doc_id), or one section "
    "with get_document(chunk_id); a hit with truncated=true was cut to keep the answer within "
    "max_chars, and get_document(chunk_id) has all of it. "
    "low_confidence=true means nothing matched well: rephrase or "
    "use other terms rather than trusting the results. Optional filters: source (a name from "
    "list_sources) and path_prefix (e.g. 'guide/')."
)
QUERY_DESCRIPTION = (
    "List indexed pages by metadata (no text search): filter by source, a substring of the "
    "file path or of the title (case-insensitive), and creation date (ISO 8601, e.g. "
    "2024-05-01 or 2024-05-01T12:00:00Z; created_after and created_before are exclusive). "
    "Returns doc_id, source, path, title, description, tags, created, modified, commit and "
    "chunk count per page, sorted by source and path, at most `limit` (1-100) of `total`."
)
GET_DESCRIPTION = (
    "Fetch a page or one of its sections by id. A page id is SOURCE:PATH (doc_id from "
    "search_docs or query_docs): returns its metadata, its sections with line ranges, and its "
    "text reassembled from the indexed sections, line-aligned with the file. A section id is "
    "SOURCE:PATH#chunkN (chunk_id from search_docs): returns that section's raw markdown, "
    "lines, and the ids of the previous and next sections."
)
SOURCES_DESCRIPTION = (
    "List the documentation sources: name, kind (bare, checkout, remote), branch, the indexed "
    "commit, file and chunk counts, when it was last indexed and its last indexing error."
)
REINDEX_DESCRIPTION = (
    "Ask the indexer to re-read a source (or every source when source is empty) from its git "
    "repository now. Files a request and returns its id; the index changes when the indexer "
    "publishes the new version, usually within seconds."
)

_READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
_FILES_A_REQUEST = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)


class DocdexMCP(MCPServer):
    """The SDK's server, with arguments that fail validation answered in plain sentences
    (the SDK's own message names pydantic's internal model and links to its docs)."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context=None):
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(argument_errors(name, exc.__cause__)) from exc.__cause__
            raise


def argument_errors(tool: str, error: ValidationError) -> str:
    """`error`, as one sentence per argument: which argument, what was wrong, what came."""
    problems = []
    for item in error.errors(include_url=False):
        name = ".".join(str(part) for part in item["loc"]) or "arguments"
        if item["type"] == "missing":
            problems.append(f"{name} is required")
        else:
            got = repr(item.get("input"))[:80]
            problems.append(f"{name}: {item['msg'][:1].lower()}{item['msg'][1:]} (got {got})")
    return f"invalid arguments for {tool}: " + "; ".join(problems)


def build_mcp(docs: Docs) -> MCPServer:
    """The MCP server with every tool registered, in the order list_tools shows them."""
    mcp = DocdexMCP("docdex", instructions=INSTRUCTIONS)
    _add_search_tools(mcp, docs)
    _add_document_tools(mcp, docs)
    _add_reindex_tool(mcp, docs)
    return mcp


def _add_search_tools(mcp: MCPServer, docs: Docs) -> None:
    def search_docs(
        query: Annotated[str, Field(description="what to look for, in English")],
        num_results: Annotated[int, Field(description=f"1-{MAX_RESULTS}")] = 10,
        source: Annotated[str, Field(description="only this source ('' = all)")] = "",
        path_prefix: Annotated[str, Field(description="only paths starting with this")] = "",
        max_chars: Annotated[
            int, Field(description=f"budget for the hits' text ({MIN_MAX_CHARS}-{MAX_MAX_CHARS})")
        ] = DEFAULT_MAX_CHARS,
    ) -> Annotated[CallToolResult, SearchOutput]:
        return _answer(
            "search_docs",
            lambda: docs.search(query, num_results, source, path_prefix, max_chars),
        )

    def query_docs(
        source: str = "",
        file_path_contains: str = "",
        title_contains: str = "",
        created_after: Annotated[str, Field(description="ISO 8601 date, exclusive")] = "",
        created_before: Annotated[str, Field(description="ISO 8601 date, exclusive")] = "",
        limit: Annotated[int, Field(description=f"1-{MAX_LIMIT}")] = 20,
    ) -> CallToolResult:
        return _answer(
            "query_docs",
            lambda: docs.query_docs(
                source, file_path_contains, title_contains, created_after, created_before, limit
            ),
        )

    mcp.add_tool(search_docs, description=SEARCH_DESCRIPTION, annotations=_READ_ONLY)
    mcp.add_tool(query_docs, description=QUERY_DESCRIPTION, annotations=_READ_ONLY)


def _add_document_tools(mcp: MCPServer, docs: Docs) -> None:
    def get_document(
        doc_id: Annotated[str, Field(description="SOURCE:PATH or SOURCE:PATH#chunkN")],
    ) -> CallToolResult:
        return _answer("get_document", lambda: docs.get_document(doc_id))

    def list_sources() -> CallToolResult:
        return _answer("list_sources", docs.list_sources)

    mcp.add_tool(get_document, description=GET_DESCRIPTION, annotations=_READ_ONLY)
    mcp.add_tool(list_sources, description=SOURCES_DESCRIPTION, annotations=_READ_ONLY)


def _add_reindex_tool(mcp: MCPServer, docs: Docs) -> None:
    def reindex(
        source: Annotated[str, Field(description="source name ('' = every source)")] = "",
    ) -> CallToolResult:
        return _answer("reindex", lambda: docs.reindex(source))

    mcp.add_tool(reindex, description=REINDEX_DESCRIPTION, annotations=_FILES_A_REQUEST)


def _answer(name: str, call: Callable[[], Any]) -> CallToolResult:
    """Run a tool body; turn our anticipated errors into tool errors the agent can act on."""
    try:
        return _tool_result(call())
    except (SearchError, NoVersion) as exc:
        log.info("%s refused: %s", name, exc)
        raise ToolError(str(exc)) from None


def _tool_result(value: Any) -> CallToolResult:
    builtins = msgspec.to_builtins(value)
    return CallToolResult(
        content=[TextContent(type="text", text=_encode(builtins).decode())],
        structured_content=builtins,
    )
