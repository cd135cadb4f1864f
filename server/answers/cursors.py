"""Paging through a long text: get_document answers a window of at most `max_chars`
characters and an opaque cursor that continues exactly where the window stopped.

A window is a slice [begin, end) of the text, so the windows a cursor chain visits,
concatenated, give back the text. It ends after a line break where one falls inside the
budget, else after a space in the budget's second half, else at the budget.
"""

from __future__ import annotations

import base64
import binascii
import bisect

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
    try:
        kind, after = msgspec.msgpack.decode(_unb64(text), type=tuple[str, str])
    except (binascii.Error, ValueError, msgspec.DecodeError):
        kind = after = ""
    if kind != "pages":
        raise InvalidArgument(
            "cursor is not one resources/list returned; pass nextCursor unchanged"
        )
    return after


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
