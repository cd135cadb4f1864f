"""The caller of each MCP request, as the answers see it: `Docs` limited to the sources the
request's token may read (server/answers/source_limits.py), and whether it may reindex
(server/answers/reindex.py).

The SDK hands every request's context to a server middleware before anything else runs;
`Caller.middleware` reads what the HTTP layer put in the request's ASGI scope from the
token's grant (stdio has no request: its caller is the machine's own user, who reads every
source and may reindex) and keeps it in a context variable for that request, which the
tools, the resources and the instructions read through `Caller()` (context variables
follow the request into the SDK's worker threads). The tools are given a `Caller`, never the
unlimited `Docs`, so none of them can answer beyond the limit, and the reindex tool asks
`Caller.reindex`, which refuses a caller whose grant lacks docdex:reindex whatever path
the call took to get here.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any, NamedTuple

from mcp.server.context import CallNext, ServerRequestContext

from docdex.server.answers.docs import Docs
from docdex.server.answers.reindex import ReindexRefused, may_reindex
from docdex.server.answers.shapes import ReindexReceipt
from docdex.server.answers.source_limits import SourceLimit, limit_in


class _Rights(NamedTuple):
    limit: SourceLimit
    reindex: bool


# outside a request (nothing the SDK routes): no source at all and no reindex
NOTHING = _Rights(SourceLimit(frozenset()), reindex=False)
_RIGHTS: ContextVar[_Rights] = ContextVar("docdex_caller_rights", default=NOTHING)


class Caller:
    """`caller()`: the answers of the current request's caller."""

    def __init__(self, docs: Docs) -> None:
        self._docs = docs

    def __call__(self) -> Docs:
        limit = _RIGHTS.get().limit
        return self._docs if limit.unlimited else self._docs.for_caller(limit)

    def reindex(self, source: str) -> ReindexReceipt:
        """The reindex tool's answer; ReindexRefused for a caller that may not reindex."""
        if not _RIGHTS.get().reindex:
            raise ReindexRefused()
        return self().reindex(source)

    async def middleware(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
        scope = getattr(ctx.request, "scope", None)
        token = _RIGHTS.set(_Rights(limit_in(scope), may_reindex(scope)))
        try:
            return await call_next(ctx)
        finally:
            _RIGHTS.reset(token)
