"""Answers that fit an agent's context (server/answers/budget.py): a search answer's text stays
within `max_chars`, long hits are cut and say so, and the rest is one get_document away."""

from __future__ import annotations

import asyncio
from typing import cast

import pytest
from mcp import Client

from docdex.errors import InvalidArgument
from docdex.server.answers.budget import (
    DEFAULT_MAX_CHARS,
    FLOOR_CHARS,
    MAX_MAX_CHARS,
    cut,
)
from docdex.server.answers.widening import with_context
from docdex.server.engine import Hit, SearchResult, VersionReader
from docdex.server.mcp.tools import build_mcp

from fixtures import FAQ, open_indexed_docs


def hit(text: str, n: int = 0) -> Hit:
    return Hit(
        chunk_id=f"s:p{n}.md#chunk0",
        source="s",
        path=f"p{n}.md",
        title="T",
        heading="T",
        text=text,
        score=1.0,
        start_line=1,
        end_line=1,
        commit="",
        match="both",
    )


def within_budget(result: SearchResult, max_chars: int) -> SearchResult:
    """The budget alone: no widening and no copies (which would read pages), each hit a page
    of its own."""
    no_index = cast(VersionReader, None)
    return with_context(
        no_index, result, len(result.results), max_chars, 0, page_hits=0, copies=False
    )


def answer(*texts: str) -> SearchResult:
    hits = [hit(t, n) for n, t in enumerate(texts)]
    return SearchResult(results=hits, index_version=1, took_ms=1.0, low_confidence=False)


def test_short_hits_pass_whole():
    result = within_budget(answer("alpha", "beta"), 1_000)
    assert [h.text for h in result.results] == ["alpha", "beta"]
    assert not any(h.truncated for h in result.results)


def test_a_long_first_hit_leaves_room_for_the_others():
    words = " ".join(f"word{i}" for i in range(5_000))  # about 45,000 characters
    result = within_budget(answer(words, "second", words, "fourth"), 3_000)
    texts = [h.text for h in result.results]
    assert sum(map(len, texts)) <= 3_000
    assert [h.truncated for h in result.results] == [True, False, True, False]
    assert texts[1] == "second" and texts[3] == "fourth"
    assert len(texts[0]) >= 3_000 - 3 * FLOOR_CHARS - len("second") - len("fourth")
    assert words.startswith(texts[0]) and not texts[0].endswith(" ")  # cut between words
    assert result.results[0].chunk_id == "s:p0.md#chunk0"  # the rest is fetchable


def test_cuts_prefer_line_then_word_boundaries():
    assert cut("first line\nsecond line", 15) == "first line"
    assert cut("one two three", 9) == "one two"
    assert cut("x" * 50, 10) == "x" * 10


@pytest.fixture(scope="module")
def docs(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("budget")
    # One 60 KB line (a minified table row, a pasted log): a single huge chunk, as indexes
    # built before chunks had an upper bound hold (a budget of 25,000 bounds them at 100,000).
    huge = "# Export log\n\n" + " ".join(f"entry-{i}=ok" for i in range(6_000)) + "\n"
    files = {"faq.md": FAQ, "export.md": huge}
    docs = open_indexed_docs(root, files, embedder, budget_chars=25_000)
    yield docs
    docs.holder.stop()


def test_a_huge_chunk_is_cut_to_the_default_budget_and_fetched_whole(docs):
    result = docs.search("export log entry-42", num_results=5)
    top = result.results[0]
    assert top.path == "export.md" and top.truncated
    assert sum(len(h.text) for h in result.results) <= DEFAULT_MAX_CHARS
    window = docs.get_document(top.chunk_id)
    assert window.truncated and len(window.text) <= DEFAULT_MAX_CHARS
    whole = window.text
    while window.next_cursor:
        window = docs.get_document(top.chunk_id, cursor=window.next_cursor)
        whole += window.text
    assert len(whole) > 60_000 and whole.startswith(top.text)


def test_max_chars_over_mcp_and_its_bounds(docs):
    async def run():
        async with Client(build_mcp(docs)) as client:  # the real tools, in process
            small = await client.call_tool(
                "search_docs", {"query": "export log", "num_results": 3, "max_chars": 1_000}
            )
            too_big = await client.call_tool(
                "search_docs", {"query": "export log", "max_chars": MAX_MAX_CHARS + 1}
            )
            return small, too_big

    small, too_big = asyncio.run(run())
    hits = small.structured_content["results"]
    assert sum(len(h["text"]) for h in hits) <= 1_000 and hits[0]["truncated"] is True
    assert too_big.is_error and "max_chars must be between" in too_big.content[0].text
    with pytest.raises(InvalidArgument, match="max_chars"):
        docs.search("export", max_chars=10)
