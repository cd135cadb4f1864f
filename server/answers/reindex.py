"""The reindex tool: the server never writes the index; it files a request under state/queue/
for the indexer (the worker beside `docdex serve`, or one a hook starts) to take.

Who may ask: a request's credential says it (`REINDEX_KEY`, which the HTTP layer puts in
the request's ASGI scope beside its source limit); a request no credential check accepted
(a server that requires none, or stdio, where the caller is the machine's own user) may.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from docdex.errors import DocdexError, InvalidArgument, shown
from docdex.index_format.config import ConfigError, load_config
from docdex.index_format.layout import DataDir, IndexFormatError
from docdex.index_format.queue import IndexRequest, file_request, pending_requests
from docdex.server.versions import VersionHolder

from .shapes import ReindexReceipt
from .source_limits import EVERY_SOURCE, SCOPE_KEY, SourceLimit

log = logging.getLogger("docdex.server")

REINDEX_KEY = "docdex.may_reindex"  # an ASGI scope's key: whether its credential may reindex


class ReindexRefused(DocdexError):
    """The request's credential may search and read, not reindex."""

    def __init__(self) -> None:
        super().__init__(
            "reindex refused: this token may search and read but not reindex (it lacks the "
            "scope docdex:reindex; ask the server's owner for a token that has it)"
        )


def may_reindex(scope: Mapping[str, object] | None) -> bool:
    """Whether the request of ASGI `scope` may reindex: what its credential allows, as the
    HTTP layer put it there. A request without a credential (no source limit either: a
    server that requires none, or stdio's None) may; one with a source limit but no word
    on reindexing may not."""
    if scope is None:
        return True
    allowed = scope.get(REINDEX_KEY)
    return allowed if isinstance(allowed, bool) else SCOPE_KEY not in scope


def request_reindex(
    data: DataDir, holder: VersionHolder, source: str = "", limit: SourceLimit = EVERY_SOURCE
) -> ReindexReceipt:
    """File a request to re-read `source` ("" = every source `limit` allows), unless one is
    pending. A limited caller's "" files one request per source of its own (the receipt
    names the first; `already_pending` only when every one was)."""
    try:
        data.check()
        names = limit.names(s.name for s in load_config(data).sources)
    except (ConfigError, IndexFormatError) as exc:
        raise InvalidArgument(f"cannot file a reindex request: {exc}") from None
    if not names:
        raise InvalidArgument("no sources are configured; add one with `docdex source add`")
    if source and source not in names:
        raise InvalidArgument(f"unknown source {shown(source)}; valid sources: {', '.join(names)}")
    wanted = [source] if source or limit.unlimited else names
    filings = [_file_once(data, name) for name in wanted]
    request, filed = filings[0][0], any(new for _, new in filings)
    log.info(
        "reindex %s: %s request %s",
        ", ".join(wanted) or "(all)",
        "filed" if filed else "pending",
        request.id,
    )
    return ReindexReceipt(
        request_id=request.id,
        source=source,
        requested_at=request.requested_at,
        already_pending=not filed,
        serving_version=holder.serving,
        message="the indexer publishes a new version when it takes the request; "
        "search results name the version they come from (index_version)",
    )


def _file_once(data: DataDir, source: str) -> tuple[IndexRequest, bool]:
    """File a request, unless the same one is still waiting in the queue."""
    for request in pending_requests(data):
        if request.source == source and request.origin == "reindex":
            return request, False
    return file_request(data, source, origin="reindex"), True
