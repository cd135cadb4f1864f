"""The caller of each MCP request, as the answers see it: `Docs` limited to the sources the
request's token may read (server/answers/limits.py).

The SDK hands every request's context to a server middleware before anything else runs;
`Caller.middleware` reads the limit the HTTP layer put in the request's ASGI scope (stdio
has no request: its caller is the machine's own user, who reads every source) and keeps it
in a context variable for that request, which the tools, the resources and
the instructions read through `Caller()` (context variables follow the request into the
SDK's worker threads). The tools are given a `Caller`, never the unlimited `Docs`, so none
of them can answer beyond the limit.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from mcp.server.context import CallNext, ServerRequestContext

from docdex.server.answers.docs import Docs
from docdex.server.answers.limits import SourceLimit, limit_in

NO_SOURCE = SourceLimit(frozenset())
_LIMIT: ContextVar[SourceLimit | None] = ContextVar("docdex_caller_limit", default=None)


class Caller:
    """`caller()`: the answers of the current request's caller."""

    def __init__(self, docs: Docs) -> None:
        self._docs = docs

    def __call__(self) -> Docs:
        # outside a request (nothing the SDK routes): no source at all rather than every one
        limit = _LIMIT.get()
        limit = NO_SOURCE if limit is None else limit
        return self._docs if limit.unlimited else self._docs.for_caller(limit)

    async def middleware(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
        token = _LIMIT.set(limit_in(getattr(ctx.request, "scope", None)))
        try:
            return await call_next(ctx)
        finally:
            _LIMIT.reset(token)
