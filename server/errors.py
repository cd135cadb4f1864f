"""The reading side's one error for a request it cannot answer as asked."""

from __future__ import annotations


class SearchError(ValueError):
    """The request is not valid (unknown source, empty query, out-of-range argument): the
    MCP layer turns it into a tool error, the HTTP layer into a 400."""
