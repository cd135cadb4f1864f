"""`docdex serve`: the MCP server (streamable HTTP at /mcp) plus /health, /api/search and /.

    uvicorn ─ HostCheck ─ BearerAuth ─ Starlette ─┬─ /          what this is, .mcp.json
                                                   ├─ /health    status, versions, run metrics
                                                   ├─ /api/search
                                                   └─ /mcp       MCPServer: search_docs,
                                                                 query_docs, get_document,
                                                                 list_sources, reindex

`Docs` holds the logic of every tool and route; the MCP and HTTP layers only translate its
answers and its errors (`SearchError` -> tool error / 400, `NoVersion` -> tool error / 503).
Every request leases one index version from the `VersionHolder` and answers from it alone.
The server never writes the index: `reindex` files a request under state/queue/.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any

import msgspec
import uvicorn
from docdex.index_format.layout import DataDir, IndexFormatError
from docdex.index_format.model import ChunkRecord, PageRecord
from docdex.indexer.queue import file_request, pending_requests
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Mount, Route

from docdex.config import SOURCE_NAME, ConfigError, load_config
from docdex.logs import configure_logging, is_configured

from . import metrics
from .auth import BearerAuth, BindRefused, HostCheck, allowed_hosts, check_bind
from .auth import transport_security as make_transport_security
from .rerank import resolve_reranker
from .search import MAX_RESULTS, SearchError, SearchResult, search
from .snapshot import Snapshot
from .versions import NoVersion, VersionHolder

log = logging.getLogger("docdex.server")

MCP_PATH = "/mcp"
MAX_LIMIT = 100
MAX_ID_CHARS = 1100
WARMUP_QUERY = "docdex warm-up query"
_CHUNK_ID = re.compile(r"#chunk(\d+)$")
_encode = msgspec.json.Encoder().encode


# --- the service behind tools and routes -------------------------------------------------------


class Docs:
    """Answers for every tool and route, from one leased version each."""

    def __init__(
        self,
        data: DataDir,
        embedder,
        holder: VersionHolder,
        reranker: str = "default",
        started: float | None = None,  # time.monotonic() of the start, for uptime_s
    ):
        self.data = data
        self.embedder = embedder
        self.holder = holder
        self.reranker = reranker
        self.started = time.monotonic() if started is None else started

    # search_docs, /api/search

    def search(
        self, query: str, num_results: int = 10, source: str = "", path_prefix: str = ""
    ) -> SearchResult:
        with self.holder.acquire() as snapshot:
            result = search(
                snapshot,
                self.embedder,
                query,
                num_results,
                source,
                path_prefix,
                reranker=self.reranker,
            )
        log.info(
            "search %r n=%d%s -> %d hits, version %d, %.1f ms",
            query[:80],
            num_results,
            f" source={source}" if source else "",
            len(result.results),
            result.index_version,
            result.took_ms,
        )
        return result

    # query_docs

    def query_docs(
        self,
        source: str = "",
        file_path_contains: str = "",
        title_contains: str = "",
        created_after: str = "",
        created_before: str = "",
        limit: int = 20,
    ) -> dict[str, Any]:
        _check_limit(limit)
        after = _parse_date("created_after", created_after)
        before = _parse_date("created_before", created_before)
        path_part, title_part = file_path_contains.casefold(), title_contains.casefold()
        with self.holder.acquire() as snapshot:
            _check_source(snapshot, source)
            matched = [
                page
                for page in snapshot.pages.values()
                if (not source or page.source == source)
                and path_part in page.path.casefold()
                and title_part in page.title.casefold()
                and _created_within(page, after, before)
            ]
            version = snapshot.version
        matched.sort(key=lambda p: (p.source, p.path))
        return {
            "documents": [_page_summary(p) for p in matched[:limit]],
            "total": len(matched),
            "truncated": len(matched) > limit,
            "index_version": version,
        }

    # get_document

    def get_document(self, doc_id: str) -> dict[str, Any]:
        _check_doc_id(doc_id)
        with self.holder.acquire() as snapshot:
            if _CHUNK_ID.search(doc_id) and (chunk := snapshot.chunk(doc_id)) is not None:
                return _chunk_document(snapshot, chunk)
            page = snapshot.pages.get(doc_id)
            if page is None:
                raise SearchError(_unknown_doc(snapshot, doc_id))
            return _page_document(snapshot, page)

    # list_sources

    def list_sources(self) -> dict[str, Any]:
        with self.holder.acquire() as snapshot:
            states = dict(snapshot.manifest.sources)
            version = snapshot.version
        sources = [_source_info(state) for _, state in sorted(states.items())]
        sources += [
            {"name": name, "indexed": False, "note": "configured but not in this index version yet"}
            for name in self._configured_sources()
            if name not in states
        ]
        return {"sources": sources, "index_version": version}

    def _configured_sources(self) -> list[str]:
        try:
            return [s.name for s in load_config(self.data).sources]
        except ConfigError as exc:
            log.warning("cannot read %s: %s", self.data.config, exc)
            return []

    # reindex

    def reindex(self, source: str = "") -> dict[str, Any]:
        try:
            self.data.check()
            names = [s.name for s in load_config(self.data).sources]
        except (ConfigError, IndexFormatError) as exc:
            raise SearchError(f"cannot file a reindex request: {exc}") from None
        if not names:
            raise SearchError("no sources are configured; add one with `docdex source add`")
        if source and source not in names:
            raise SearchError(f"unknown source {source!r}; valid sources: {', '.join(names)}")
        request, filed = self._file_once(source)
        log.info(
            "reindex %s: %s request %s",
            source or "(all)",
            "filed" if filed else "pending",
            request.id,
        )
        return {
            "request_id": request.id,
            "source": source,
            "requested_at": request.requested_at,
            "already_pending": not filed,
            "serving_version": self.holder.serving,
            "message": "the indexer publishes a new version when it takes the request; "
            "search results name the version they come from (index_version)",
        }

    def _file_once(self, source: str):
        """File a request, unless the same one is still waiting in the queue."""
        for request in pending_requests(self.data):
            if request.source == source and request.origin == "reindex":
                return request, False
        return file_request(self.data, source, origin="reindex"), True

    # /health

    def health(self) -> tuple[int, dict[str, Any]]:
        stats = self.holder.stats()
        body: dict[str, Any] = {
            "status": "ok",
            "index_version": None,
            "total_sources": 0,
            "total_chunks": 0,
            "sources": {},
            "refused_version": msgspec.to_builtins(stats.refused_version),
            "last_ingestion": msgspec.to_builtins(metrics.read_last_ingestion(self.data)),
            "last_ingestion_failure": msgspec.to_builtins(metrics.read_last_failure(self.data)),
            "models": {
                "embedder": self.embedder.info.id,
                "dim": self.embedder.info.dim,
                "reranker": self.reranker,
            },
            "versions": {
                "serving_since": stats.serving_since,
                "load_ms": _round(stats.load_ms),
                "swaps": stats.swaps,
                "closed": stats.closed,
                "held_old": stats.held_old,
            },
            "uptime_s": round(time.monotonic() - self.started, 1),
        }
        try:
            with self.holder.acquire() as snapshot:
                body.update(_index_summary(snapshot))
                body["models"]["reranker"] = _reranker_name(self.reranker, snapshot)
        except NoVersion as exc:
            body.update(status="error", error=str(exc))
            return 503, body
        if stats.refused_version is not None:
            body["status"] = "degraded"  # serving an older version than CURRENT names
        return 200, body


# --- validation ----------------------------------------------------------------------------


def _check_limit(limit: int) -> None:
    if not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise SearchError(f"limit must be between 1 and {MAX_LIMIT}, got {limit!r}")


def _check_source(snapshot: Snapshot, source: str) -> None:
    if source and source not in snapshot.manifest.sources:
        valid = ", ".join(snapshot.sources) or "(none indexed yet)"
        raise SearchError(f"unknown source {source!r}; valid sources: {valid}")


def _parse_date(name: str, text: str) -> datetime | None:
    if not text:
        return None
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        raise SearchError(
            f"{name} must be an ISO 8601 date or date-time such as 2024-05-01 or "
            f"2024-05-01T12:00:00Z, got {text[:60]!r}"
        ) from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _created_within(page: PageRecord, after: datetime | None, before: datetime | None) -> bool:
    if after is None and before is None:
        return True
    try:
        created = datetime.fromisoformat(page.created)
    except ValueError:
        return False  # no usable date: it cannot satisfy a date filter
    created = created if created.tzinfo else created.replace(tzinfo=UTC)
    return (after is None or created > after) and (before is None or created < before)


def _check_doc_id(doc_id: str) -> None:
    """Reject ids that cannot name an indexed page or chunk before looking anything up.
    Ids are only ever looked up in the version's tables, never turned into a file path."""
    example = "ids look like SOURCE:PATH or SOURCE:PATH#chunkN, e.g. docs:guide/install.md"
    if not isinstance(doc_id, str) or not doc_id.strip():
        raise SearchError(f"doc_id is empty; {example} (from search_docs or query_docs)")
    if len(doc_id) > MAX_ID_CHARS:
        raise SearchError(f"doc_id is {len(doc_id)} characters long; the limit is {MAX_ID_CHARS}")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in doc_id):
        raise SearchError(f"doc_id contains control characters (NUL, newline, ...); {example}")
    source, sep, path = doc_id.partition(":")
    if not sep or not SOURCE_NAME.fullmatch(source):
        raise SearchError(f"doc_id {doc_id[:80]!r} is not a document id; {example}")
    if path.startswith(("/", "\\")) or "\\" in path or ".." in path.split("/"):
        raise SearchError(
            f"doc_id {doc_id[:80]!r} is not a document id: paths are relative to the repository "
            f"and never contain '..' or backslashes; {example}"
        )


def _unknown_doc(snapshot: Snapshot, doc_id: str) -> str:
    source = doc_id.partition(":")[0]
    if source not in snapshot.manifest.sources:
        valid = ", ".join(snapshot.sources) or "(none indexed yet)"
        return f"no document {doc_id!r}: unknown source {source!r}; valid sources: {valid}"
    return (
        f"no document {doc_id!r} in index version {snapshot.version}; use a doc_id or chunk_id "
        "returned by search_docs or query_docs"
    )


# --- documents -----------------------------------------------------------------------------


def _page_summary(page: PageRecord) -> dict[str, Any]:
    return {
        "doc_id": page.doc_id,
        "source": page.source,
        "path": page.path,
        "title": page.title,
        "description": page.description,
        "tags": list(page.tags),
        "created": page.created,
        "modified": page.modified,
        "commit": page.commit,
        "chunks": len(page.chunks),
    }


def _page_chunks(snapshot: Snapshot, page: PageRecord) -> list[ChunkRecord]:
    by_id = {seg.id: seg for seg in snapshot.segments}
    out = []
    for ref in page.chunks:
        seg = by_id.get(ref.segment)
        if seg is not None and 0 <= ref.index < len(seg.chunks):
            out.append(seg.chunks[ref.index])
    return out


def reassemble(chunks: list[ChunkRecord]) -> str:
    """The page's markdown rebuilt from its chunks, line-aligned with the file: line N of the
    result is line N of the file wherever a chunk covers it; other lines (front matter, blank
    separators, dropped near-empty fragments) are empty."""
    lines: list[str] = []
    for chunk in sorted(chunks, key=lambda c: c.start_line):
        first = chunk.start_line - 1
        if first > len(lines):
            lines += [""] * (first - len(lines))
        lines += chunk.text.split("\n")[len(lines) - first :]
    return "\n".join(lines)


def _page_document(snapshot: Snapshot, page: PageRecord) -> dict[str, Any]:
    chunks = _page_chunks(snapshot, page)
    return {
        "kind": "page",
        **_page_summary(page),
        "size": page.size,
        "index_version": snapshot.version,
        "text": reassemble(chunks),
        "text_kind": "reassembled from the indexed chunks, line-aligned with the file (lines "
        "outside every chunk, such as front matter, are blank)",
        "sections": [
            {
                "chunk_id": c.chunk_id,
                "heading": " › ".join(c.headings),
                "start_line": c.start_line,
                "end_line": c.end_line,
            }
            for c in chunks
        ],
    }


def _chunk_document(snapshot: Snapshot, chunk: ChunkRecord) -> dict[str, Any]:
    page = snapshot.pages.get(chunk.doc_id)
    number = int(_CHUNK_ID.search(chunk.chunk_id).group(1))  # type: ignore[union-attr]

    def neighbour(n: int) -> str | None:
        chunk_id = f"{chunk.doc_id}#chunk{n}"
        return chunk_id if n >= 0 and snapshot.chunk(chunk_id) is not None else None

    return {
        "kind": "chunk",
        "chunk_id": chunk.chunk_id,
        "doc_id": chunk.doc_id,
        "source": chunk.source,
        "path": chunk.path,
        "title": chunk.title,
        "headings": list(chunk.headings),
        "heading": " › ".join(chunk.headings),
        "text": chunk.text,
        "start_line": chunk.start_line,
        "end_line": chunk.end_line,
        "commit": page.commit if page else "",
        "previous_chunk_id": neighbour(number - 1),
        "next_chunk_id": neighbour(number + 1),
        "index_version": snapshot.version,
    }


def _source_info(state) -> dict[str, Any]:
    return {
        "name": state.name,
        "indexed": bool(state.commit),
        "kind": state.kind,
        "branch": state.branch,
        "commit": state.commit,
        "files": state.files,
        "chunks": state.chunks,
        "indexed_at": state.indexed_at,
        "last_error": state.last_error,
        "problems": len(state.problems),
    }


def _index_summary(snapshot: Snapshot) -> dict[str, Any]:
    sources = snapshot.manifest.sources
    return {
        "index_version": snapshot.version,
        "index_created_at": snapshot.manifest.created_at,
        "total_sources": len(sources),
        "total_chunks": snapshot.manifest.chunks,
        "sources": {
            name: {
                "commit": s.commit,
                "files": s.files,
                "chunks": s.chunks,
                "indexed_at": s.indexed_at,
                "last_error": s.last_error,
            }
            for name, s in sorted(sources.items())
        },
    }


def _reranker_name(configured: str, snapshot: Snapshot) -> str:
    try:
        resolved = resolve_reranker(configured, snapshot)
    except ValueError as exc:
        return f"{configured} (unavailable: {exc})"
    return "none" if resolved is None else getattr(resolved, "name", configured)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


# --- MCP tools -----------------------------------------------------------------------------


class HitModel(BaseModel):
    doc_id: str
    chunk_id: str
    source: str
    path: str
    title: str
    headings: list[str]
    heading: str
    text: str
    score: float
    start_line: int
    end_line: int
    commit: str
    match: str


class SearchOutput(BaseModel):
    """search_docs' structured content (the same JSON as GET /api/search)."""

    results: list[HitModel]
    index_version: int
    took_ms: float
    low_confidence: bool


SEARCH_DESCRIPTION = (
    "Search the indexed documentation (markdown pages from git repositories) and return the "
    "best-matching sections. Write the query in English, whatever language the conversation "
    "is in: keywords, an identifier, an error message or code, or a short question. Each "
    "result cites where it comes from: source, path, start_line-end_line of the file at "
    "commit, and the heading breadcrumb; `text` is the section's raw markdown. Cite results as "
    "path:start_line-end_line. Fetch the whole page with get_document(doc_id), or one section "
    "with get_document(chunk_id). low_confidence=true means nothing matched well: rephrase or "
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


def _tool_result(value: Any) -> CallToolResult:
    builtins = msgspec.to_builtins(value)
    return CallToolResult(
        content=[TextContent(type="text", text=_encode(builtins).decode())],
        structured_content=builtins,
    )


def _answer(name: str, call: Callable[[], Any]) -> CallToolResult:
    """Run a tool body; turn our anticipated errors into tool errors the agent can act on."""
    try:
        return _tool_result(call())
    except (SearchError, NoVersion) as exc:
        log.info("%s refused: %s", name, exc)
        raise ToolError(str(exc)) from None


def build_mcp(docs: Docs) -> MCPServer:
    mcp = MCPServer(
        "docdex",
        instructions="Documentation search over markdown from git. Start with search_docs "
        "(query in English); cite path and lines from its results.",
    )

    def search_docs(
        query: Annotated[str, Field(description="what to look for, in English")],
        num_results: Annotated[int, Field(description=f"1-{MAX_RESULTS}")] = 10,
        source: Annotated[str, Field(description="only this source ('' = all)")] = "",
        path_prefix: Annotated[str, Field(description="only paths starting with this")] = "",
    ) -> Annotated[CallToolResult, SearchOutput]:
        return _answer("search_docs", lambda: docs.search(query, num_results, source, path_prefix))

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

    def get_document(
        doc_id: Annotated[str, Field(description="SOURCE:PATH or SOURCE:PATH#chunkN")],
    ) -> CallToolResult:
        return _answer("get_document", lambda: docs.get_document(doc_id))

    def list_sources() -> CallToolResult:
        return _answer("list_sources", docs.list_sources)

    def reindex(
        source: Annotated[str, Field(description="source name ('' = every source)")] = "",
    ) -> CallToolResult:
        return _answer("reindex", lambda: docs.reindex(source))

    mcp.add_tool(search_docs, description=SEARCH_DESCRIPTION, annotations=_READ_ONLY)
    mcp.add_tool(query_docs, description=QUERY_DESCRIPTION, annotations=_READ_ONLY)
    mcp.add_tool(get_document, description=GET_DESCRIPTION, annotations=_READ_ONLY)
    mcp.add_tool(list_sources, description=SOURCES_DESCRIPTION, annotations=_READ_ONLY)
    mcp.add_tool(
        reindex,
        description=REINDEX_DESCRIPTION,
        annotations=ToolAnnotations(
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        ),
    )
    return mcp


# --- HTTP routes ---------------------------------------------------------------------------


def _json(status: int, body: Any) -> Response:
    return Response(_encode(body), status_code=status, media_type="application/json")


def http_routes(docs: Docs, token_required: bool) -> list[Route]:
    async def health(request: Request) -> Response:
        status, body = docs.health()
        return _json(status, body)

    async def api_search(request: Request) -> Response:
        params = request.query_params
        try:
            n = int(params.get("n", "10"))
        except ValueError:
            return _json(400, {"error": f"n must be an integer between 1 and {MAX_RESULTS}"})
        try:
            result = await run_in_threadpool(
                docs.search,
                params.get("q", ""),
                n,
                params.get("source", ""),
                params.get("path_prefix", ""),
            )
        except SearchError as exc:
            return _json(400, {"error": str(exc)})
        except NoVersion as exc:
            return _json(503, {"error": str(exc)})
        return _json(200, result)

    async def index(request: Request) -> Response:
        return PlainTextResponse(_index_page(str(request.base_url).rstrip("/"), token_required))

    return [
        Route("/", index, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
        Route("/api/search", api_search, methods=["GET"]),
    ]


def _index_page(base: str, token_required: bool) -> str:
    headers = (
        ',\n      "headers": {"Authorization": "Bearer ${DOCDEX_TOKEN}"}' if token_required else ""
    )
    return f"""docdex: documentation search for AI agents, over MCP.

MCP endpoint (streamable HTTP): {base}{MCP_PATH}
Tools: search_docs, query_docs, get_document, list_sources, reindex
Also: {base}/health (status), {base}/api/search?q=...&n=10 (same JSON as search_docs)
{"Requests to /mcp and /api need 'Authorization: Bearer <DOCDEX_TOKEN>'." if token_required else ""}
.mcp.json:
{{
  "mcpServers": {{
    "docdex": {{
      "type": "http",
      "url": "{base}{MCP_PATH}"{headers}
    }}
  }}
}}
"""


# --- the application -----------------------------------------------------------------------


def build_app(
    docs: Docs,
    host: str = "127.0.0.1",
    token: str | None = None,
    extra_hosts: list[str] | None = None,
) -> Starlette:
    """The ASGI app. Its lifespan runs the MCP session manager and the version watcher."""
    mcp = build_mcp(docs)
    hosts = allowed_hosts(host, extra_hosts or [])
    mcp_app = mcp.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        transport_security=make_transport_security(hosts),
        host=host,
    )

    @contextlib.asynccontextmanager
    async def lifespan(app):
        docs.holder.start()
        async with mcp.session_manager.run():
            yield
        docs.holder.stop()

    middleware = [Middleware(HostCheck, allowed=hosts)]
    if token:
        middleware.append(Middleware(BearerAuth, token=token))
    return Starlette(
        routes=[*http_routes(docs, bool(token)), Mount("/", app=mcp_app)],
        middleware=middleware,
        lifespan=lifespan,
    )


def load_snapshot(data: DataDir, embedder, reranker: str = "default") -> Callable[[int], Snapshot]:
    """The holder's loader: open a version, refuse what this server cannot serve, warm it."""

    def load(version: int) -> Snapshot:
        snapshot = Snapshot.load(data, version, embedder=embedder)
        try:
            _warm(snapshot, embedder, reranker)
        except Exception as exc:
            snapshot.close()
            raise IndexFormatError(f"version {version} failed its warm-up search: {exc}") from exc
        return snapshot

    return load


def _warm(snapshot: Snapshot, embedder, reranker: str) -> None:
    """Open every lazily mapped file now (a later GC may delete them; open maps survive) and
    run one search, so the first real query pays no one-off costs."""
    for seg in snapshot.segments:
        _ = seg.segment.vectors
    if snapshot.manifest.chunks:
        search(snapshot, embedder, WARMUP_QUERY, 1, reranker=reranker)


# --- serve ---------------------------------------------------------------------------------


class Boot:
    """`[boot +N ms] ...` lines, timed from process start when we can tell it."""

    def __init__(self) -> None:
        self.t0 = _process_start() or time.monotonic()

    def mark(self, what: str) -> None:
        ms = round((time.monotonic() - self.t0) * 1000)
        log.info("[boot +%d ms] %s", ms, what, extra={"event": "boot", "fields": {"ms": ms}})


def _process_start() -> float | None:
    """The monotonic time this process started (Linux), to count interpreter start-up too."""
    try:
        with open(f"/proc/{os.getpid()}/stat") as f:
            ticks = int(f.read().rpartition(")")[2].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        age = uptime - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None
    return time.monotonic() - max(age, 0.0)


def setup_logging() -> None:
    """docdex.logs' configuration (text or JSON lines); the CLI has usually set it up."""
    if not is_configured():
        configure_logging()


def load_embedder(data: DataDir):
    from docdex.indexer.embedder import Embedder

    try:
        threads = load_config(data).settings.threads
    except ConfigError:
        threads = 0
    return Embedder.load(threads=threads or min(2, os.cpu_count() or 1))


class _Uvicorn(uvicorn.Server):
    """uvicorn that reports when its socket is listening."""

    def __init__(self, config: uvicorn.Config, on_listening: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_listening = on_listening

    async def startup(self, sockets=None) -> None:
        await super().startup(sockets)
        if self.started:
            self._on_listening()


def serve(data: DataDir, host: str = "127.0.0.1", port: int = 8085, insecure: bool = False) -> int:
    """Run the server until interrupted. Returns the process exit code."""
    setup_logging()
    token = os.environ.get("DOCDEX_TOKEN", "").strip() or None
    try:
        check_bind(host, token, insecure)
    except BindRefused as exc:
        print(f"docdex: error: {exc}", file=sys.stderr)
        return 1
    boot = Boot()
    reranker = load_config(data).settings.reranker
    embedder = load_embedder(data)
    boot.mark(f"model loaded: {embedder.info.id} ({embedder.info.dim} dims)")
    holder = VersionHolder(data, load_snapshot(data, embedder, reranker))
    holder.refresh()
    served = holder.serving
    why = holder.stats().error
    boot.mark(f"version {served} loaded" if served else f"no version to serve yet: {why}")
    docs = Docs(data, embedder, holder, started=boot.t0, reranker=reranker)
    extra = [h for h in os.environ.get("DOCDEX_ALLOWED_HOSTS", "").split(",") if h.strip()]
    app = build_app(docs, host=host, token=token, extra_hosts=extra)
    url = f"http://{host if ':' not in host else f'[{host}]'}:{port}{MCP_PATH}"
    auth = "bearer token required" if token else "no token"
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_config=None,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=5,
    )
    server = _Uvicorn(config, lambda: boot.mark(f"ready: MCP at {url} ({auth})"))
    server.run()
    return 0 if server.started else 1
