"""docdex's errors: every failure docdex raises on purpose is a `DocdexError`.

Each entry point (the CLI, an MCP tool, an HTTP route, the indexing cycle) catches
`DocdexError` once and reports its message as one sentence; anything else is a bug and
keeps its traceback. Two kinds of request errors say who has to change what:

- `InvalidArgument`: the request is not valid as sent (an empty query, a number out of
  range, an unknown source name): HTTP 400, a tool error over MCP;
- `NotFound`: the request is well formed but names nothing in the served version (a page,
  a chunk, a ref): HTTP 404, a tool error over MCP.

`ConfigError` is the configuration's (docdex.toml, a variable of the environment, a change
asked of either); the other errors are defined beside the code that raises them, each
under this root.
"""

from __future__ import annotations

SHOWN_CHARS = 200  # of an argument echoed in an error


class DocdexError(Exception):
    """A failure docdex reports as one sentence, without a traceback."""


class InvalidArgument(DocdexError, ValueError):
    """A request's argument is not valid (empty query, out-of-range number, unknown source):
    the MCP layer turns it into a tool error, the HTTP layer into a 400."""


class NotFound(DocdexError, LookupError):
    """What a well-formed request names is not in the served version (a page, a chunk, a
    ref of a source): a tool error over MCP, a 404 over HTTP."""


class ConfigError(DocdexError):
    """The configuration, or a change asked of it, is not valid."""


def shown(text: str, chars: int = SHOWN_CHARS) -> str:
    """`text` quoted for an error, cut after `chars` characters: an error quotes what it
    refuses, and stays a sentence however long that was."""
    if len(text) <= chars:
        return repr(text)
    return f"{text[:chars]!r}... ({len(text):,} characters)"
