"""The page model (page_model.py): its block parser skips the block rules a line's first
character rules out, and its tokens are markdown-it's own, on the lines where rules
interrupt each other; the counts and sizes chunks are cut by."""

from __future__ import annotations

from typing import Any

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from docdex.indexer.chunking.page_model import Lines, Page, PageText, alnum_count
from docdex.markdown.deep_blocks import DeepBlocksAsText

PAGES = {
    "interruptions": "A paragraph\n> a quote\n- a list\n1. one\n2. two\n# heading\n<div>\n\n"
    "text\n***\ntext\n```\ncode\n```\n~~~ info\ncode\n~~~\n",
    "ordered lists": "text\n2. two does not interrupt\n\n10) ten\n11) eleven\n\n1. one\n",
    "tables": "| a | b |\n|---|:-:|\n| 1 | 2 |\ntext\n-|-\n:--|--:\n\na | b\n- | -\n\n"
    "c | d\n:-- | --:\ne | f\n",
    "setext and rules": "Title\n=====\n\nSub\n---\n\n- - -\n_ _ _\n* * *\n",
    "references": "[ref]: https://example.com 'title'\n[ref2]:\n  <https://x.test>\n\n"
    "text [ref]\n[not]: a definition inside a paragraph\n",
    "html": "<details>\n<summary>Q</summary>\n\nA\n</details>\n<!-- c -->\n<pre>\n\n</pre>\n",
    "containers": "> quote\nlazy line\n>> nested\n\n- item\n  > quote in item\n  ```\n  "
    "code\n  ```\n    - deeper\n\n      code in item\n",
    "indented code": "    code\n\tcode\n\n  # not code\n   > not code\n",
    "edges": "#not a heading\n####### seven\n+\n*\n-\n1.\n[\n<\n>\n",
    "crlf and tabs": "a\r\n\t- tab list\r\n|x|\r\n|-|\r\n",
    "deep": "".join("  " * level + "- level\n" for level in range(30)) + "\nafter\n",
}


def reference_tokens(source: str, env: dict[str, Any]) -> list[Token]:
    parser = MarkdownIt("commonmark").enable("table").disable(["inline", "text_join"])
    parser.block = DeepBlocksAsText(parser)
    return parser.parse(source, env)


def shape(tokens: list[Token]) -> list[tuple[object, ...]]:
    return [(t.type, t.tag, t.map, t.content, t.level, t.markup, t.info, t.attrs) for t in tokens]


@pytest.mark.parametrize("name", sorted(PAGES))
def test_the_block_tokens_are_markdown_its_own(name: str) -> None:
    lines = PAGES[name].split("\n")
    ours: dict[str, Any] = {}
    page = Page(PageText(lines, lines), 0, len(lines), ours)
    theirs: dict[str, Any] = {}
    assert shape(page.tokens) == shape(reference_tokens("\n".join(lines), theirs))
    assert ours == theirs
    assert len(page.tokens) > 2


@pytest.mark.parametrize(
    ("text", "stop_at", "count"),
    [
        ("héllo wörld 123 ×÷ 日本", -1, 15),
        ("héllo wörld 123 ×÷ 日本", 0, 15),
        ("héllo wörld 123 ×÷ 日本", 5, 5),
        ("héllo wörld 123 ×÷ 日本", 15, 15),
        ("héllo wörld 123 ×÷ 日本", 16, 15),
        ("- " * 50 + "abc", 2, 2),  # found past the first slice looked at
        ("", 3, 0),
    ],
)
def test_alphanumeric_characters_are_counted_up_to_the_stop(
    text: str, stop_at: int, count: int
) -> None:
    assert alnum_count(text, stop_at) == count


def test_line_sizes_count_their_newlines() -> None:
    page = Lines(["ab", "", "cde"])
    assert page.size_offsets == [0, 3, 4, 8]
    assert (page.size(0, 0), page.size(0, 2), page.size(1, 2)) == (3, 8, 5)
