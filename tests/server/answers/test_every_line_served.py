"""Every line is served, end to end: through the real index, get_document and the page view,
the two pages that lost lines (a heading whose section has no text of its own, served blank;
a list nested past markdown-it's limit, after which every heading was lost and the view
stopped) and a page of markup only; and the view's renderer on generated pages, against a
parse with no nesting limit."""

from __future__ import annotations

import re
from collections import Counter
from html.parser import HTMLParser

import pytest
from hypothesis import HealthCheck, given, settings
from markdown_it import MarkdownIt

from docdex.index_format.reassembly import served_text
from docdex.server.rendering.renderer import Where, render_markdown

from fixtures import open_indexed_docs
from pagetext import markdown_pages

HOOK = """---
title: useState
description: A React Hook that adds a state variable to your component.
---
# useState

`useState` is a React Hook that lets you add a state variable to your component.

## Reference

### useState(initialState)

Call `useState` at the top level of your component to declare a state variable.

#### Parameters

`initialState`: the value you want the state to be initially. It can be a value of any type.

## Usage

### Adding state to a component

Call `useState` at the top level of your component to declare one or more state variables.
"""

DEEP_LIST = "\n".join(f"{'  ' * depth}- Level {depth} of the outline" for depth in range(12))
DEEP_SECTIONS = [
    f"## Harbour {n}\n\nThe ferry from harbour {n} leaves at {n % 12 + 1} o'clock every morning."
    for n in range(40)
]
DEEP = "# Ferries\n\nThe outline of the timetable:\n\n" + DEEP_LIST + "\n\n"
DEEP += "\n\n".join(DEEP_SECTIONS) + "\n"
MARKUP_ONLY = "<!-- nothing to read here yet -->\n\n[spec]: https://example.com/spec\n\n---\n"


@pytest.fixture(scope="module")
def docs(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("every-line")
    docs = open_indexed_docs(
        root, {"hook.md": HOOK, "ferries.md": DEEP, "notes.md": MARKUP_ONLY}, embedder
    )
    yield docs
    docs.holder.stop()


def whole_document(docs, doc_id: str) -> str:
    return docs.get_document(doc_id, max_chars=100_000).text


def test_a_heading_without_text_of_its_own_is_served(docs):
    text = whole_document(docs, "docs:hook.md")
    assert text == served_text(HOOK)
    assert text.split("\n")[8] == "## Reference"  # line 9, where the file has it
    html = docs.page_view("docs:hook.md").html
    assert re.search(r'<h2 id="doc-reference">Reference', html)
    assert re.search(r'<h3 id="doc-usestateinitialstate">useState\(initialState\)', html)


def test_the_sections_after_a_list_nested_too_deep_are_served_and_found(docs):
    assert whole_document(docs, "docs:ferries.md") == served_text(DEEP)
    hits = docs.search("when does the ferry from harbour 37 leave", num_results=3).results
    assert hits[0].headings == ["Ferries", "Harbour 37"]
    view = docs.page_view("docs:ferries.md")
    assert [s.heading.rsplit(" › ", 1)[-1] for s in view.sections[-40:]] == [
        f"Harbour {n}" for n in range(40)
    ]
    assert all(f'<h2 id="doc-harbour-{n}">' in view.html for n in range(40))
    pre = re.search(r"<pre><code>(.*?)</code></pre>", view.html, re.DOTALL)
    assert pre and "- Level 11 of the outline" in pre.group(1)  # the too-deep part, as text


def test_a_page_of_markup_only_is_served(docs):
    assert whole_document(docs, "docs:notes.md") == served_text(MARKUP_ONLY)


def test_the_view_shows_a_quote_nested_too_deep_as_text_and_goes_on():
    html = render_markdown(">" * 50 + " fifty deep\n\n## After\n\nText.\n", Where("docs", "q.md"))
    assert "&gt;" * 30 + " fifty deep" in html  # markdown-it's limit is twenty levels
    assert '<div class="blk" id="L3" data-first="3" data-last="3"><h2 id="doc-after">' in html


class _ShownText(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def shown_words(html: str) -> Counter[str]:
    text = _ShownText()
    text.feed(html)
    return Counter(re.findall(r"[^\W_]+", " ".join(text.parts)))


# markdown-it with no practical nesting limit: what a page shows when nothing is skipped
_UNLIMITED = MarkdownIt("commonmark", {"html": False, "maxNesting": 1_000}).enable("table")


@settings(
    max_examples=200,
    deadline=None,  # no test depends on the machine's speed
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,  # no .hypothesis/ directory left in the repository
)
@given(text=markdown_pages(html=False))
def test_the_view_shows_every_word_a_parse_without_a_nesting_limit_shows(text):
    served = served_text(text)
    view = shown_words(render_markdown(served, Where("docs", "page.md")))
    missing = shown_words(_UNLIMITED.render(served)) - view
    assert not missing, f"the view leaves out {sorted(missing)}"
