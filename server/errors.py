"""The reading side's one error for a request it cannot answer as asked."""

from __future__ import annotations

SHOWN_CHARS = 200  # of an argument echoed in an error


def shown(text: str, chars: int = SHOWN_CHARS) -> str:
    """`text` quoted for an error, cut after `chars` characters: an error quotes what it
    refuses, and stays a sentence however long that was."""
    if len(text) <= chars:
        return repr(text)
    return f"{text[:chars]!r}... ({len(text):,} characters)"


class SearchError(ValueError):
    """The request is not valid (unknown source, empty query, out-of-range argument): the
    MCP layer turns it into a tool error, the HTTP layer into a 400."""
