"""Answers that fit an agent's context: the text of a search answer stays within a budget of
characters, and no answer of any tool passes a hard cap, whatever the index holds.

Hits keep their rank order. Each gets its whole text while the budget allows, but always
leaves `FLOOR_CHARS` for every hit ranked after it, so a long first hit cannot crowd the
others out; a text that does not fit is cut at a line (else a word) boundary and marked
`truncated`, and its `chunk_id` fetches the rest with get_document.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import msgspec

from docdex.errors import InvalidArgument
from docdex.server.engine import Hit

AnswerT = TypeVar("AnswerT", bound=msgspec.Struct)

# 20,000 characters of text plus the hits' metadata (440-830 characters each, measured:
# docs/benchmarks.md, "Answer sizes") keep a 10-hit answer at 20,000-28,000 characters, about
# 5,500-7,500 tokens at the 3.5-4 characters per token of English markdown: under the 8k
# tokens an agent can afford for one tool answer.
DEFAULT_MAX_CHARS = 20_000
MIN_MAX_CHARS = 1_000
MAX_MAX_CHARS = 100_000  # no answer carries more text than this
FLOOR_CHARS = 200
# The hard cap on any tool's whole answer (its JSON, in characters): MAX_MAX_CHARS of text,
# its escapes, and the metadata of 100 hits; an answer that would pass it leaves out its last
# items (hits, pages, sections) and says how many in `omitted`.
ANSWER_CAP_CHARS = 200_000

_encode = msgspec.json.Encoder().encode


def check_max_chars(max_chars: int) -> None:
    if not isinstance(max_chars, int) or not MIN_MAX_CHARS <= max_chars <= MAX_MAX_CHARS:
        raise InvalidArgument(
            f"max_chars must be between {MIN_MAX_CHARS:,} and {MAX_MAX_CHARS:,}, got {max_chars!r}"
        )


class Budget:
    """What each hit, taken in rank order, may hold of `max_chars`: all that is left, less
    FLOOR_CHARS for every hit still to come."""

    def __init__(self, max_chars: int):
        self.left = max_chars

    def allowance(self, after: int) -> int:
        """The characters the next hit may take, `after` hits coming after it."""
        return min(self.left, max(self.left - FLOOR_CHARS * after, FLOOR_CHARS))

    def spend(self, hit: Hit, after: int) -> Hit:
        """`hit`, cut to its allowance (and marked `truncated`), its text counted spent."""
        allowance = self.allowance(after)
        if len(hit.text) > allowance:
            hit = msgspec.structs.replace(hit, text=cut(hit.text, allowance), truncated=True)
        self.left -= len(hit.text)
        return hit


def answer_chars(answer: msgspec.Struct) -> int:
    return len(_encode(answer).decode())


def within_cap(answer: AnswerT, items: str) -> AnswerT:
    """`answer` with its list `items` shortened until the whole answer is at most
    ANSWER_CAP_CHARS: the longest prefix that fits, found by bisection."""
    if answer_chars(answer) <= ANSWER_CAP_CHARS:
        return answer
    full = getattr(answer, items)

    def keeping(n: int) -> AnswerT:
        return msgspec.structs.replace(answer, **{items: full[:n], "omitted": len(full) - n})

    def fits(n: int) -> bool:  # keeping(0) does: the items' metadata is clipped
        return answer_chars(keeping(n)) <= ANSWER_CAP_CHARS

    return keeping(longest_prefix(len(full), fits))


def longest_prefix(count: int, fits: Callable[[int], bool]) -> int:
    """The largest n <= count for which `fits(n)` (false from some n on, true for 0), by
    bisection."""
    if fits(count):
        return count
    low, high = 0, count
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low


def cut(text: str, limit: int) -> str:
    """At most `limit` characters of `text`, ending at a line break or, failing one in the
    second half, a space, else anywhere."""
    head = text[:limit]
    for boundary in ("\n", " "):
        at = head.rfind(boundary)
        if at >= limit // 2:
            return head[:at].rstrip()
    return head
