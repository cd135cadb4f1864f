"""`Docs`: the answers behind every tool and route, each from one leased index version.

The MCP layer (tools.py) and the HTTP layer (routes.py) only translate its answers and its
errors: `SearchError` (bad arguments, unknown ids) and `NoVersion` (nothing to serve yet).
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from docdex.index_format.config import ConfigError, load_config
from docdex.index_format.layout import DataDir
from docdex.index_format.model import ServedPage

from .budget import DEFAULT_MAX_CHARS, check_max_chars, within_budget
from .health import health_report
from .pages import CHUNK_ID, chunk_document, page_document, page_summary, source_info
from .reindex import request_reindex
from .search import SearchResult, search
from .validation import check_doc_id, check_limit, check_source, parse_date, unknown_doc
from .versions import VersionHolder

if TYPE_CHECKING:
    from docdex.model.embedder import Embedder

log = logging.getLogger("docdex.server")


class Docs:
    """Answers for every tool and route, from one leased version each."""

    def __init__(
        self,
        data: DataDir,
        embedder: Embedder,
        holder: VersionHolder,
        reranker: str = "default",
        started: float | None = None,  # time.monotonic() of the start, for uptime_s
    ):
        self.data = data
        self.embedder = embedder
        self.holder = holder
        self.reranker = reranker
        self.started = time.monotonic() if started is None else started

    def search(
        self,
        query: str,
        num_results: int = 10,
        source: str = "",
        path_prefix: str = "",
        max_chars: int = DEFAULT_MAX_CHARS,
    ) -> SearchResult:
        """search_docs and /api/search: the hits' texts hold at most `max_chars`."""
        check_max_chars(max_chars)
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
        return within_budget(result, max_chars)

    def query_docs(
        self,
        source: str = "",
        file_path_contains: str = "",
        title_contains: str = "",
        created_after: str = "",
        created_before: str = "",
        limit: int = 20,
    ) -> dict[str, Any]:
        """Pages by metadata, sorted by source and path: at most `limit` of `total`."""
        check_limit(limit)
        after = parse_date("created_after", created_after)
        before = parse_date("created_before", created_before)
        path_part, title_part = file_path_contains.casefold(), title_contains.casefold()
        with self.holder.acquire() as snapshot:
            check_source(snapshot, source)
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
            "documents": [page_summary(p) for p in matched[:limit]],
            "total": len(matched),
            "truncated": len(matched) > limit,
            "index_version": version,
        }

    def get_document(self, doc_id: str) -> dict[str, Any]:
        """A page (SOURCE:PATH) or one of its chunks (SOURCE:PATH#chunkN)."""
        check_doc_id(doc_id)
        with self.holder.acquire() as snapshot:
            if CHUNK_ID.search(doc_id) and (chunk := snapshot.chunk(doc_id)) is not None:
                return chunk_document(snapshot, chunk)
            page = snapshot.pages.get(doc_id)
            if page is None:
                raise unknown_doc(snapshot, doc_id)
            return page_document(snapshot, page)

    def list_sources(self) -> dict[str, Any]:
        """The indexed sources, then the configured ones the served version lacks."""
        with self.holder.acquire() as snapshot:
            states = dict(snapshot.manifest.sources)
            version = snapshot.version
        sources = [source_info(state) for _, state in sorted(states.items())]
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

    def reindex(self, source: str = "") -> dict[str, Any]:
        """File a reindex request (the server itself never writes the index)."""
        return request_reindex(self.data, self.holder, source)

    def health(self) -> tuple[int, dict[str, Any]]:
        """/health: (HTTP status, body)."""
        return health_report(self.data, self.embedder, self.holder, self.reranker, self.started)


def _created_within(page: ServedPage, after: datetime | None, before: datetime | None) -> bool:
    if after is None and before is None:
        return True
    try:
        created = datetime.fromisoformat(page.created)
    except ValueError:
        return False  # no usable date: it cannot satisfy a date filter
    created = created if created.tzinfo else created.replace(tzinfo=UTC)
    return (after is None or created > after) and (before is None or created < before)
