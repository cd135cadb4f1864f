"""Checks on tool and route arguments: limits, source names, dates and document ids.

Every check raises `SearchError` with a message an agent can act on (the MCP layer turns it
into a tool error, the HTTP layer into a 400). Document ids are checked before anything is
looked up, and are only ever looked up in a version's tables, never turned into a file path.
"""

from __future__ import annotations

from datetime import UTC, datetime

from docdex.index_format.refs import is_doc_source

from .errors import SearchError
from .snapshot import Snapshot

MAX_LIMIT = 100
MAX_ID_CHARS = 1100
ID_EXAMPLE = "ids look like SOURCE:PATH or SOURCE:PATH#chunkN, e.g. docs:guide/install.md"


def check_limit(limit: int) -> None:
    if not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise SearchError(f"limit must be between 1 and {MAX_LIMIT}, got {limit!r}")


def check_source(snapshot: Snapshot, source: str) -> None:
    if source and source not in snapshot.manifest.sources:
        raise SearchError(f"unknown source {source!r}; valid sources: {valid_sources(snapshot)}")


def valid_sources(snapshot: Snapshot) -> str:
    return ", ".join(snapshot.sources) or "(none indexed yet)"


def parse_date(name: str, text: str) -> datetime | None:
    """An ISO 8601 date or date-time argument (UTC when it names no zone); None when empty."""
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


def check_doc_id(doc_id: str) -> None:
    """Reject ids that cannot name an indexed page or chunk before looking anything up."""
    if not isinstance(doc_id, str) or not doc_id.strip():
        raise SearchError(f"doc_id is empty; {ID_EXAMPLE} (from search_docs or query_docs)")
    if len(doc_id) > MAX_ID_CHARS:
        raise SearchError(f"doc_id is {len(doc_id)} characters long; the limit is {MAX_ID_CHARS}")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in doc_id):
        raise SearchError(f"doc_id contains control characters (NUL, newline, ...); {ID_EXAMPLE}")
    source, sep, path = doc_id.partition(":")
    if not sep or not is_doc_source(source):
        raise SearchError(f"doc_id {doc_id[:80]!r} is not a document id; {ID_EXAMPLE}")
    if path.startswith(("/", "\\")) or "\\" in path or ".." in path.split("/"):
        raise SearchError(
            f"doc_id {doc_id[:80]!r} is not a document id: paths are relative to the repository "
            f"and never contain '..' or backslashes; {ID_EXAMPLE}"
        )


def unknown_doc(snapshot: Snapshot, doc_id: str) -> SearchError:
    """The error for a well-formed id that names nothing in this version."""
    source = doc_id.partition(":")[0]
    if source not in snapshot.manifest.sources:
        return SearchError(
            f"no document {doc_id!r}: unknown source {source!r}; "
            f"valid sources: {valid_sources(snapshot)}"
        )
    return SearchError(
        f"no document {doc_id!r} in index version {snapshot.version}; use a doc_id or chunk_id "
        "returned by search_docs or query_docs"
    )
