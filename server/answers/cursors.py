"""Paging through a long text: get_document answers a window of at most `max_chars`
characters and an opaque cursor that continues exactly where the window stopped.

A window is a slice [begin, end) of the text, so the windows a cursor chain visits,
concatenated, give back the text. It ends after a line break where one falls inside the
budget, else after a space in the budget's second half, else at the budget.

Listings page on the same way: resources/list and query_docs hand out an opaque cursor that
names the last item answered, and the next answer starts after it.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import hashlib

import msgspec

from docdex.errors import InvalidArgument, shown


class Window(msgspec.Struct, frozen=True):
    text: str
    start_line: int
    end_line: int
    stop: int  # offset where the requested lines end
    next_offset: int | None  # where the next window starts (None: nothing follows)


class Cursor(msgspec.Struct, frozen=True, array_like=True):
    doc_id: str
    # the blob sha of the page the windows come from: a cursor outlives no change, committed
    # or not (a working-tree edit has no commit of its own)
    content: str
    offset: int
    stop: int


class Lines:
    """A text and the offsets where its lines start; line numbers begin at `first_line`."""

    def __init__(self, text: str, first_line: int = 1):
        self.text = text
        self.first_line = first_line
        self.starts = [0]
        at = text.find("\n")
        while at != -1:
            self.starts.append(at + 1)
            at = text.find("\n", at + 1)

    @property
    def last_line(self) -> int:
        return self.first_line + len(self.starts) - 1

    def line_at(self, offset: int) -> int:
        return self.first_line + bisect.bisect_right(self.starts, offset) - 1

    def span(self, start_line: int, end_line: int) -> tuple[int, int]:
        """Offsets of lines start_line..end_line (0 = the first / the last line)."""
        wanted_first, wanted_last = start_line or self.first_line, end_line or self.last_line
        if wanted_first > self.last_line:
            raise InvalidArgument(
                f"start_line {start_line} is past the end (line {self.last_line})"
            )
        if wanted_last < self.first_line:
            raise InvalidArgument(
                f"lines {wanted_first}-{wanted_last} come before this text, which covers lines "
                f"{self.first_line}-{self.last_line}"
            )
        first = max(wanted_first, self.first_line) - self.first_line
        last = min(wanted_last, self.last_line) - self.first_line
        end = self.starts[last + 1] - 1 if last + 1 < len(self.starts) else len(self.text)
        return self.starts[first], max(end, self.starts[first])

    def window(self, begin: int, stop: int, max_chars: int) -> Window:
        end = stop if stop - begin <= max_chars else _cut_point(self.text, begin, max_chars)
        return Window(
            text=self.text[begin:end],
            start_line=self.line_at(begin),
            end_line=self.line_at(max(end - 1, begin)),
            stop=stop,
            next_offset=end if end < stop else None,
        )


def _cut_point(text: str, begin: int, max_chars: int) -> int:
    limit = begin + max_chars
    newline = text.rfind("\n", begin, limit)
    if newline != -1:
        return newline + 1
    space = text.rfind(" ", begin + max_chars // 2, limit)
    return space + 1 if space != -1 else limit


def check_lines(start_line: int, end_line: int) -> None:
    for name, value in (("start_line", start_line), ("end_line", end_line)):
        if not isinstance(value, int) or value < 0:
            raise InvalidArgument(
                f"{name} must be a line number (1 or more; 0 = no bound), got {value!r}"
            )
    if end_line and start_line > end_line:
        raise InvalidArgument(f"start_line {start_line} is after end_line {end_line}")


RESOURCE_PAGE = 100  # resources/list: pages per answer


def encode_page_cursor(last_doc_id: str) -> str:
    """resources/list's cursor: the next answer starts after this page."""
    return _b64(msgspec.msgpack.encode(["pages", last_doc_id]))


def decode_page_cursor(text: str) -> str:
    """The doc_id a resources/list cursor continues after ("" for no cursor)."""
    if not text:
        return ""
    [after] = _after_key(text, "pages", 1, "resources/list", "nextCursor")
    return after


def query_filters(*filters: object) -> str:
    """A digest of query_docs' filters: its cursor continues the same query only."""
    return hashlib.sha256(msgspec.msgpack.encode(filters)).hexdigest()[:16]


def encode_query_cursor(filters: str, last: tuple[str, str]) -> str:
    """query_docs' cursor: the next answer starts after the page `last` (source, path) of
    the query whose filters digest to `filters`."""
    return _b64(msgspec.msgpack.encode(["query", filters, *last]))


def decode_query_cursor(text: str, filters: str) -> tuple[str, str] | None:
    """The (source, path) a query_docs cursor continues after (None for no cursor)."""
    if not text:
        return None
    made_for, source, path = _after_key(text, "query", 3, "query_docs", "next_cursor")
    if made_for != filters:
        raise InvalidArgument(
            "this cursor continues a query_docs call with other filters; pass it with the "
            "filters it came with, or leave it out to start again"
        )
    return source, path


def _after_key(text: str, kind: str, size: int, tool: str, field: str) -> list[str]:
    """The strings after `kind` in a listing cursor of `size` of them."""
    try:
        decoded = msgspec.msgpack.decode(_unb64(text), type=list[str])
    except (binascii.Error, ValueError, msgspec.DecodeError):
        decoded = []
    if decoded[:1] != [kind] or len(decoded) != size + 1:
        raise InvalidArgument(f"cursor is not one {tool} returned; pass {field} unchanged")
    return decoded[1:]


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def encode_cursor(cursor: Cursor) -> str:
    return _b64(msgspec.msgpack.encode(cursor))


def decode_cursor(text: str, doc_id: str, content: str, length: int) -> Cursor:
    """The cursor `text` names, checked against the document (of `length` characters) it is
    used with."""
    try:
        cursor = msgspec.msgpack.decode(_unb64(text), type=Cursor)
    except (binascii.Error, ValueError, msgspec.DecodeError):
        raise InvalidArgument(
            "cursor is not one get_document returned; pass next_cursor unchanged"
        ) from None
    if cursor.doc_id != doc_id:
        raise InvalidArgument(
            f"this cursor continues {shown(cursor.doc_id)}, not {shown(doc_id)}; "
            "pass it with the doc_id it came with"
        )
    if cursor.content != content:
        raise InvalidArgument(
            f"{shown(doc_id)} changed since this cursor was made (its text is now blob "
            f"{content[:12]}); fetch it again without a cursor"
        )
    if not 0 <= cursor.offset < cursor.stop <= length:
        raise InvalidArgument("cursor is not one get_document returned; pass next_cursor unchanged")
    return cursor


class ChangesCursor(msgspec.Struct, frozen=True, array_like=True):
    """Where a `changes` answer continues: the same range, pinned to the commits its ends
    resolved to (so that a branch moving meanwhile does not mix two ranges), from `offset`."""

    source: str
    ref: str
    since: str  # a commit id ("" = the start of history)
    until: str  # a commit id
    path_prefix: str
    offset: int


def encode_changes_cursor(cursor: ChangesCursor) -> str:
    return _b64(msgspec.msgpack.encode(["changes", cursor]))


def decode_changes_cursor(text: str) -> ChangesCursor:
    try:
        kind, cursor = msgspec.msgpack.decode(_unb64(text), type=tuple[str, ChangesCursor])
    except (binascii.Error, ValueError, msgspec.DecodeError):
        kind, cursor = "", None
    if kind != "changes" or cursor is None or cursor.offset < 0:
        raise InvalidArgument("cursor is not one changes returned; pass next_cursor unchanged")
    return cursor
