"""Checks on tool and route arguments: limits, source names, dates and document ids.

Every check raises `InvalidArgument` with a message an agent can act on (the MCP layer turns it
into a tool error, the HTTP layer into a 400); a well-formed id that names nothing in the served
version is `NotFound` instead (`unknown_doc`: a 404). Document ids are checked before anything is
looked up, and are only ever looked up in a version's tables, never turned into a file path:
so an id only needs to be well-formed enough to split into its source and path, and any id
docdex hands out (a path with a tab, a newline or a backslash, or 200 folders deep) is
accepted back.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime

from docdex.errors import InvalidArgument, NotFound, shown
from docdex.index_format.ref_names import is_doc_source
from docdex.server.engine import VersionReader

MAX_LIMIT = 100
# The longest doc_id looked up. Git itself bounds no path, and the indexer takes the paths of
# the tree as they are; a checkout holds at most PATH_MAX (4,096 bytes) and the part before
# ':' at most 193 characters ("source@ref"), so this is many times any id handed out. An id
# is only hashed and looked up: a long one costs nothing, it is just bounded.
MAX_ID_CHARS = 65_536
ID_EXAMPLE = "ids look like SOURCE:PATH or SOURCE:PATH#chunkN, e.g. docs:guide/install.md"
# created_after / created_before: ISO 8601 extended form, a date or a date-time with
# optional seconds, fraction and zone. fromisoformat alone also takes "11111111" and longer.
MAX_DATE_CHARS = 40
ISO_DATE = re.compile(
    r"\d{4}-\d{2}-\d{2}"
    r"(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})?)?"
)
DATE_FORMS = (
    "an ISO 8601 date or date-time: YYYY-MM-DD, or YYYY-MM-DDTHH:MM[:SS[.ffffff]] with an "
    "optional Z or +HH:MM zone (UTC when none), e.g. 2024-05-01 or 2024-05-01T12:00:00Z"
)


def check_limit(limit: int) -> None:
    if not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidArgument(f"limit must be between 1 and {MAX_LIMIT}, got {limit!r}")


def parse_date(name: str, text: str) -> datetime | None:
    """An ISO 8601 date or date-time argument (UTC when it names no zone); None when empty."""
    if not text:
        return None
    value = text.strip() if isinstance(text, str) else ""
    if len(value) > MAX_DATE_CHARS or not ISO_DATE.fullmatch(value):
        raise InvalidArgument(f"{name} must be {DATE_FORMS}; got {shown(str(text), 60)}")
    try:
        parsed = datetime.fromisoformat(value.replace(",", "."))
    except ValueError as exc:
        raise InvalidArgument(
            f"{name} must be {DATE_FORMS}; {shown(value, 60)} is not a date: {exc}"
        ) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def check_doc_id(doc_id: str) -> None:
    """Refuse what cannot be an id before looking anything up: nothing, no SOURCE: part, a
    NUL (no git path holds one), a path not relative to the repository, or more than
    MAX_ID_CHARS. Anything else is looked up as given."""
    if not isinstance(doc_id, str) or not doc_id.strip():
        raise InvalidArgument(f"doc_id is empty; {ID_EXAMPLE} (from search_docs or query_docs)")
    if len(doc_id) > MAX_ID_CHARS:
        raise InvalidArgument(
            f"doc_id is {len(doc_id):,} characters long; the limit is {MAX_ID_CHARS:,}"
        )
    if "\x00" in doc_id:
        raise InvalidArgument(
            "doc_id contains NUL, which no path can hold (other control characters, such as a "
            f"tab or a newline, can be part of a file name); {ID_EXAMPLE}"
        )
    source, sep, path = doc_id.partition(":")
    if not sep or not is_doc_source(source):
        raise InvalidArgument(f"doc_id {shown(doc_id)} is not a document id; {ID_EXAMPLE}")
    if path.startswith("/") or ".." in path.split("/"):
        raise InvalidArgument(
            f"doc_id {shown(doc_id)} is not a document id: paths are relative to the "
            f"repository and never contain '..'; {ID_EXAMPLE}"
        )


def unknown_doc(index: VersionReader, doc_id: str, known: Sequence[str] | None = None) -> NotFound:
    """The error for a well-formed id that names nothing in this version: what it is missing,
    and where valid ids come from. `known`: the entries the caller sees (None: all), so that
    a source hidden from the caller is as unknown as one never indexed."""
    source = doc_id.partition(":")[0]
    known = index.sources if known is None else known
    if source not in known:
        return NotFound(
            f"no document {shown(doc_id)}: unknown source {shown(source)}; "
            f"valid sources: {', '.join(known) or '(none indexed yet)'}"
        )
    hint = (
        " (backslashes are part of a file name here, not separators: paths use '/')"
        if "\\" in doc_id
        else ""
    )
    return NotFound(
        f"no document {shown(doc_id)} in index version {index.version}{hint}; use a "
        "doc_id or chunk_id returned by search_docs or query_docs"
    )
