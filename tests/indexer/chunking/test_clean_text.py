"""The text a reader sees (cleanup.py): inline markdown to text, and tidied whitespace, pinned
on the cases that break renderers; a page's reference definitions read by its own text only,
however many pages share that text."""

from __future__ import annotations

import pytest

from docdex.indexer.chunking.cleanup import inline_text, tidy
from docdex.indexer.chunking.page_parser import parse_page

INLINE = [
    ("***bold and _nested_ italic***", "bold and nested italic"),
    ("**bold *in* bold** and _under_", "bold in bold and under"),
    ("`` a `b` c `` and `x`", "a `b` c and x"),
    ("``` ``` and `` ` ``", "  and `"),
    ("press <kbd>Ctrl</kbd>+<kbd>C</kbd><br>then <!-- note --> go", "press Ctrl+C then  go"),
    ("![alt *em*](p.png \"t\") and [a **b**](u 'single')", "alt em and a b"),
    ("&amp; &copy; \\*not\\* ~~gone~~", "& © *not* gone"),
    ("line one  \nline two\\\nthree", "line one\nline two\nthree"),
    ("<https://example.com/auto> and a_b_c and *a*b", "https://example.com/auto and a_b_c and ab"),
]


@pytest.mark.parametrize(("markdown", "text"), INLINE)
def test_inline_markdown_reads_as_its_text(markdown: str, text: str) -> None:
    assert inline_text(markdown) == text
    assert inline_text(markdown) == text  # asked again (a paragraph repeated on another page)


def test_a_link_without_text_keeps_its_target_where_asked() -> None:
    markdown = '[the guide](https://example.com/g "The title") and [](https://example.com/bare)'
    assert inline_text(markdown) == "the guide and https://example.com/bare"
    assert inline_text(markdown, link_urls=False) == "the guide and "
    assert inline_text(markdown) == "the guide and https://example.com/bare"


def embed_texts(markdown: str) -> list[str]:
    return [chunk.embed_text for chunk in parse_page(markdown, "docs/page.md").chunks]


PARAGRAPH = "# Setup\n\nSee [the install guide][guide] before you start the service here.\n"
DEFINED = PARAGRAPH + "\n[guide]: https://example.com/install\n"


@pytest.mark.parametrize("defined_first", [True, False])
def test_a_reference_link_reads_its_own_pages_definitions(defined_first: bool) -> None:
    """The same paragraph on two pages, one of which defines the reference: each page's
    text follows its own definitions, whichever page is read first."""
    first, second = (DEFINED, PARAGRAPH) if defined_first else (PARAGRAPH, DEFINED)
    texts = {first: embed_texts(first), second: embed_texts(second)}
    assert texts[DEFINED] == ["Setup\nSee the install guide before you start the service here."]
    assert texts[PARAGRAPH] == [
        "Setup\nSee [the install guide][guide] before you start the service here."
    ]


TIDY = [
    ("  a \t b  \n\n\n\n  c \n", "a b\n\nc"),
    ("\xa0x\u3000y\u2028z", "x y z"),  # only LF ends a line
    ("\n\n a\n \n\n", "a"),
    ("", ""),
    ("x\r\ny\x0cz", "x\ny z"),
    (" \n \n ", ""),
    ("one\n\n\ntwo\n \nthree", "one\n\ntwo\n\nthree"),
]


@pytest.mark.parametrize(("raw", "tidied"), TIDY)
def test_tidy_collapses_spaces_and_blank_lines(raw: str, tidied: str) -> None:
    assert tidy(raw) == tidied


def test_a_page_with_a_bom_and_crlf_reads_as_its_lf_twin() -> None:
    lf = "# Title\n\nA paragraph with `code`, *emphasis* and a [link](https://x.test).\n\n- item\n"
    crlf = "\ufeff" + lf.replace("\n", "\r\n")
    ours, twin = parse_page(crlf, "docs/page.md"), parse_page(lf, "docs/page.md")
    assert [c.embed_text for c in ours.chunks] == [c.embed_text for c in twin.chunks]
    assert [c.embed_text for c in ours.chunks] == [
        "Title\nA paragraph with code, emphasis and a link.\nitem"
    ]
    assert [(c.start_line, c.end_line) for c in ours.chunks] == [(1, 5)]
