"""The MCP tools: search_docs, query_docs, get_document, list_sources, changes, reindex.

Each tool is a thin function over `Docs` whose signature is its input schema; its answer
goes out as structured content plus its text form (text_content.py: markdown for searches
and documents, the JSON for the rest and for sessions without structured output). A
`DocdexError` (a bad argument, an id the served version does not hold, no version yet...)
becomes a tool error the agent can act on; anything else is a bug and surfaces as one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import cache
from importlib.metadata import version as package_version
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

import msgspec
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ResourceLink, TextContent, ToolAnnotations
from pydantic import BaseModel, Field, ValidationError, create_model

from docdex.errors import DocdexError
from docdex.server.answers.budget import DEFAULT_MAX_CHARS, MAX_MAX_CHARS, MIN_MAX_CHARS
from docdex.server.answers.docs import Docs
from docdex.server.answers.instructions import USAGE
from docdex.server.answers.shapes import (
    Changes,
    Document,
    PageList,
    ReindexReceipt,
    SourceList,
)
from docdex.server.answers.validation import MAX_LIMIT
from docdex.server.engine import MAX_RESULTS, Hit, SearchResult

from .announcements import Announcements
from .arguments import ArgumentSchema
from .caller import Caller
from .protocol_errors import keep_to_the_protocol
from .resources import MARKDOWN, add_resources
from .text_content import protocol_version, text_content

log = logging.getLogger("docdex.server")


@cache
def pydantic_model(struct: type[msgspec.Struct]) -> type[BaseModel]:
    """A pydantic model with the fields of a msgspec Struct (nested Structs too), for the
    SDK's output schemas: the schema follows the Struct the answer is encoded from, so the
    two cannot drift."""
    fields: dict[str, Any] = {}
    for f in msgspec.structs.fields(struct):
        if f.required:
            default = ...
        elif f.default_factory is not msgspec.NODEFAULT:
            default = Field(default_factory=f.default_factory)
        else:
            default = f.default
        fields[f.name] = (_pydantic_type(f.type), default)
    return create_model(struct.__name__, __doc__=struct.__doc__, **fields)


def _pydantic_type(kind: Any) -> Any:
    if isinstance(kind, type) and issubclass(kind, msgspec.Struct):
        return pydantic_model(kind)
    args = get_args(kind)
    if get_origin(kind) is list:
        return list[_pydantic_type(args[0])]  # type: ignore[misc]  # built at run time
    if isinstance(kind, UnionType):
        return Union[tuple(_pydantic_type(arg) for arg in args)]  # noqa: UP007 (built at run time)
    return kind


SEARCH_DESCRIPTION = (
    "Search the indexed documentation (markdown pages from git repositories) and return the "
    "best-matching sections. Write the query in English, whatever language the conversation "
    "is in: keywords, an identifier, an error message or code, or a short question. Each "
    "result cites where it comes from: source, path, start_line-end_line of the file at "
    "commit, and the heading breadcrumb; `text` is the raw markdown of those lines: the "
    "matching chunk, widened when it fits to the whole section its heading names "
    "(context='section') or to the chunks beside it in that section (context='neighbours'; "
    "the chunk's own lines are then chunk_start_line-chunk_end_line), as the site shows "
    "it: an include line replaced by the text of the file it names (listed in `included`), "
    "MDX imports and component tags left out (get_document serves the exact lines). A hit "
    "holding only part of a long section carries its `outline`: the section and its "
    "subsections with their lines, for get_document(source:path, start_line, end_line). "
    "A later hit with the same text (a page's copy in another version folder, say) is "
    "folded into the first and listed in its `copies` (source, path, lines, ref); "
    "path_prefix or ref searches one version. "
    "Fields at their default "
    "('', false, 0) are left out. Cite results as path:start_line-end_line. Fetch one section "
    "with get_document(chunk_id), or the whole page with get_document of the chunk_id up to "
    "its '#' (source:path); a hit with "
    "truncated=true was cut to keep the answer within max_chars, and get_document(chunk_id) "
    "has all of it. low_confidence=true means nothing matched well: rephrase or use other "
    "terms rather than trusting the results. Optional filters: source (a name from "
    "list_sources), path_prefix (e.g. 'guide/') and ref (a branch or tag the source indexes, "
    "e.g. a release: each hit names its ref; without one, each source's default branch). "
    "Hits carry url, a permalink to their lines, when the source has one. changed_since "
    "(a tag, branch, commit id, date such as 2026-11-01, or age such as 7d) keeps only pages "
    "changed since then: 'what is new about X'."
)
QUERY_DESCRIPTION = (
    "List indexed pages by metadata (no text search): filter by source, a substring of the "
    "file path or of the title (case-insensitive), and creation date (ISO 8601, e.g. "
    "2024-05-01 or 2024-05-01T12:00:00Z; created_after and created_before are exclusive). "
    "Returns doc_id, source, path, title, description, tags, created, modified, commit and "
    "chunk count per page, sorted by source and path, at most `limit` (1-100) of `total`. "
    "When truncated=true, call again with cursor=next_cursor (and the same filters) for the "
    "pages that follow."
)
GET_DESCRIPTION = (
    "Read a page or one of its sections by id, a window at a time. A page id is SOURCE:PATH "
    "(doc_id from search_docs or query_docs): returns its metadata, its text reassembled from "
    "the indexed sections (line-aligned with the file), and the sections the window overlaps. "
    "A section id is SOURCE:PATH#chunkN (chunk_id from search_docs): returns that section's "
    "raw markdown and the ids of the previous and next sections. The text is at most "
    "max_chars long; narrow it with start_line/end_line (file lines, inclusive). When "
    "truncated=true, call again with cursor=next_cursor (and the same doc_id) for what "
    "follows: the windows join into the exact text. With ref set to a commit id, a tag or a "
    "branch the index does not hold, the page is read as of that commit from git (the whole "
    "file's text, same windows and cursors); changes(source, path_prefix=its path) lists its "
    "commits."
)
CHANGES_DESCRIPTION = (
    "What changed in a source's pages between two points of its git history: since and until "
    "each take a tag, a branch, a commit id, a date (2026-11-01, 2026-11-01T09:30:00Z) or an "
    "age (7d, 12h, 2w); since '' is the start of history, until '' the tip of ref (a branch "
    "or tag; '' = the source's default branch; source may also be SOURCE@REF as list_sources "
    "names it). Returns the pages added, modified, deleted and renamed, in path order, each "
    "with the ids of the commits that touched it, the lines added and removed, the headings of "
    "the sections whose text changed, and doc_id, uri and url: get_document(doc_id, "
    "ref=since.commit) reads the page as it was, ref=until.commit as it is now (a deleted "
    "page: its last text, at since.commit). commits lists each commit once (id, date, "
    "subject). "
    "path_prefix narrows it to a folder, or to one page for that page's history. When "
    "next_cursor is set, call again with cursor=next_cursor for the pages that follow; notes "
    "say where history stops (a shallow clone) or what a bound left out."
)
SOURCES_DESCRIPTION = (
    "List the documentation sources, one entry per indexed branch or tag (entries "
    "source@ref besides each source's default): what each holds (description), kind, ref, "
    "the indexed commit and the ref's tip now, how many commits the index is behind and "
    "since when, whether a request is queued, file and chunk counts, when it was last indexed "
    "and its last indexing error."
)
REINDEX_DESCRIPTION = (
    "Ask the indexer to re-read a source (or every source you may read when source is empty) "
    "from its git repository now. Files a request and returns its id; the index changes when "
    "the indexer publishes the new version, usually within seconds."
)

_READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
_FILES_A_REQUEST = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)


class DocdexMCP(MCPServer):
    """The SDK's server, with arguments checked strictly against each tool's declared input
    schema before the SDK's lax validation (arguments.py), and what fails either answered in
    plain sentences (the SDK's own message names pydantic's internal model and links to its
    docs)."""

    _schemas: dict[str, ArgumentSchema] | None = None

    async def call_tool(self, name: str, arguments: dict[str, Any], context=None):
        schema = (await self._argument_schemas()).get(name)
        problems = schema.problems(arguments) if schema is not None else []
        if problems:
            raise ToolError(f"invalid arguments for {name}: " + "; ".join(problems))
        version = getattr(context, "protocol_version", None) or ""
        protocol_version.set(version)  # for the answer's text content (text_content.py)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(argument_errors(name, exc.__cause__)) from exc.__cause__
            raise

    async def _argument_schemas(self) -> dict[str, ArgumentSchema]:
        """Each tool's input schema as list_tools declares it (read at the first call, once
        every tool is registered)."""
        if self._schemas is None:
            tools = await self.list_tools()
            self._schemas = {t.name: ArgumentSchema(t.name, t.input_schema) for t in tools}
        return self._schemas


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
    """The MCP server with every tool registered (in the order list_tools shows them), the
    pages as resources, and instructions that follow the index. Every request is answered
    as its caller sees the index (caller.py): the tools get the caller's `Docs`, never
    `docs` itself. The instructions given here name no source: each connection gets its
    caller's (resources.py)."""
    caller = Caller(docs)
    announcements = Announcements(
        lambda: caller().limit, lambda swapped: docs.holder.on_swap(swapped)
    )
    mcp = DocdexMCP(
        "docdex",
        instructions=USAGE,
        version=package_version("docdex"),
        subscriptions=announcements,
    )
    mcp.middleware.insert(0, caller.middleware)  # outermost: before anything reads `caller`
    mcp.middleware.insert(1, announcements.middleware)
    _add_search_tools(mcp, caller)
    _add_document_tools(mcp, caller)
    _add_changes_tool(mcp, caller)
    _add_reindex_tool(mcp, caller)
    add_resources(mcp, caller)
    keep_to_the_protocol(mcp)
    return mcp


MAX_CHARS_RANGE = f"{MIN_MAX_CHARS}-{MAX_MAX_CHARS}"
REF_ARGUMENT = (
    "a branch or tag the source indexes, as list_sources names it: 'v2.1', 'docs@v2.1' or "
    "'refs/tags/v2.1' ('' = each source's default)"
)
TAGS_ARGUMENT = "only pages with any of these front matter tags or keywords"
POINT_FORMS = "a tag, branch, commit id, date (2026-11-01) or age (7d)"
CHANGED_SINCE_ARGUMENT = f"only pages changed since: {POINT_FORMS} ('' = any page)"


def _add_search_tools(mcp: MCPServer, caller: Caller) -> None:
    def search_docs(
        query: Annotated[str, Field(description="what to look for, in English")],
        num_results: Annotated[int, Field(description=f"1-{MAX_RESULTS}")] = 10,
        source: Annotated[str, Field(description="only this source ('' = all)")] = "",
        path_prefix: Annotated[str, Field(description="only paths starting with this")] = "",
        max_chars: Annotated[
            int, Field(description=f"budget for the hits' text ({MAX_CHARS_RANGE})")
        ] = DEFAULT_MAX_CHARS,
        ref: Annotated[str, Field(description=REF_ARGUMENT)] = "",
        tags: Annotated[list[str], Field(description=TAGS_ARGUMENT)] = [],  # noqa: B006
        changed_since: Annotated[str, Field(description=CHANGED_SINCE_ARGUMENT)] = "",
    ) -> Annotated[CallToolResult, pydantic_model(SearchResult)]:
        return _answer(
            "search_docs",
            lambda: caller().search(
                query, num_results, source, path_prefix, max_chars, ref, tags, changed_since
            ),
            links=_page_links,
        )

    def query_docs(
        source: str = "",
        file_path_contains: str = "",
        title_contains: str = "",
        created_after: Annotated[str, Field(description="ISO 8601 date, exclusive")] = "",
        created_before: Annotated[str, Field(description="ISO 8601 date, exclusive")] = "",
        limit: Annotated[int, Field(description=f"1-{MAX_LIMIT}")] = 20,
        ref: Annotated[str, Field(description=REF_ARGUMENT)] = "",
        tags: Annotated[list[str], Field(description=TAGS_ARGUMENT)] = [],  # noqa: B006
        cursor: Annotated[
            str, Field(description="next_cursor of the previous answer (same filters)")
        ] = "",
    ) -> Annotated[CallToolResult, pydantic_model(PageList)]:
        return _answer(
            "query_docs",
            lambda: caller().query_docs(
                source,
                file_path_contains,
                title_contains,
                created_after,
                created_before,
                limit,
                ref,
                tags,
                cursor,
            ),
        )

    mcp.add_tool(search_docs, description=SEARCH_DESCRIPTION, annotations=_READ_ONLY)
    mcp.add_tool(query_docs, description=QUERY_DESCRIPTION, annotations=_READ_ONLY)


def _add_document_tools(mcp: MCPServer, caller: Caller) -> None:
    def get_document(
        doc_id: Annotated[str, Field(description="SOURCE:PATH or SOURCE:PATH#chunkN")],
        start_line: Annotated[int, Field(description="first file line (0 = the start)")] = 0,
        end_line: Annotated[int, Field(description="last file line (0 = the end)")] = 0,
        cursor: Annotated[str, Field(description="next_cursor of the previous answer")] = "",
        max_chars: Annotated[
            int, Field(description=f"budget for the text ({MAX_CHARS_RANGE})")
        ] = DEFAULT_MAX_CHARS,
        ref: Annotated[
            str, Field(description="the same path at this branch or tag, or at any commit (git)")
        ] = "",
    ) -> Annotated[CallToolResult, pydantic_model(Document)]:
        return _answer(
            "get_document",
            lambda: caller().get_document(doc_id, start_line, end_line, cursor, max_chars, ref),
        )

    def list_sources() -> Annotated[CallToolResult, pydantic_model(SourceList)]:
        return _answer("list_sources", lambda: caller().list_sources())

    mcp.add_tool(get_document, description=GET_DESCRIPTION, annotations=_READ_ONLY)
    mcp.add_tool(list_sources, description=SOURCES_DESCRIPTION, annotations=_READ_ONLY)


def _add_changes_tool(mcp: MCPServer, caller: Caller) -> None:
    def changes(
        source: Annotated[
            str, Field(description="SOURCE or SOURCE@REF ('' = your one source)")
        ] = "",
        since: Annotated[str, Field(description=f"from: {POINT_FORMS} ('' = the start)")] = "",
        until: Annotated[str, Field(description=f"to: {POINT_FORMS} ('' = ref's tip)")] = "",
        ref: Annotated[str, Field(description="the branch or tag read ('' = the default)")] = "",
        path_prefix: Annotated[str, Field(description="only paths starting with this")] = "",
        cursor: Annotated[str, Field(description="next_cursor of the previous answer")] = "",
        max_chars: Annotated[
            int, Field(description=f"budget for the answer ({MAX_CHARS_RANGE})")
        ] = DEFAULT_MAX_CHARS,
    ) -> Annotated[CallToolResult, pydantic_model(Changes)]:
        return _answer(
            "changes",
            lambda: caller().changes(source, since, until, ref, path_prefix, cursor, max_chars),
        )

    mcp.add_tool(changes, description=CHANGES_DESCRIPTION, annotations=_READ_ONLY)


def _add_reindex_tool(mcp: MCPServer, caller: Caller) -> None:
    def reindex(
        source: Annotated[str, Field(description="source name ('' = every source)")] = "",
    ) -> Annotated[CallToolResult, pydantic_model(ReindexReceipt)]:
        return _answer("reindex", lambda: caller.reindex(source))

    mcp.add_tool(reindex, description=REINDEX_DESCRIPTION, annotations=_FILES_A_REQUEST)


def _answer(
    name: str,
    call: Callable[[], msgspec.Struct],
    links: Callable[[Any], list[ResourceLink]] = lambda _: [],
) -> CallToolResult:
    """Run a tool body; turn our anticipated errors into tool errors the agent can act on."""
    try:
        answer = call()
    except DocdexError as exc:
        log.info("%s refused: %s", name, exc)
        raise ToolError(str(exc)) from None
    builtins = msgspec.to_builtins(answer)
    return CallToolResult(
        content=[TextContent(type="text", text=text_content(answer, builtins)), *links(answer)],
        structured_content=builtins,
    )


def _page_links(result: SearchResult) -> list[ResourceLink]:
    """One resource link per page among the hits, in rank order."""
    first_hits: dict[str, Hit] = {}
    for hit in result.results:
        first_hits.setdefault(hit.uri, hit)
    return [
        ResourceLink(
            type="resource_link", uri=uri, name=hit.path, title=hit.title, mime_type=MARKDOWN
        )
        for uri, hit in first_hits.items()
    ]
