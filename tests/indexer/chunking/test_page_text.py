"""Every line is served back: a page's chunks, joined by reassembly, give the file's text
(index-format/FORMAT.md, "Page text"), on every page of the shared corpora and on generated
markdown built from what breaks chunkers (empty sections, deep nesting, headings in lists
and quotes, setext headings, front matter, HTML blocks, open fences, CRLF)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from docdex.index_format.records import ChunkerSettings
from docdex.indexer.chunking.page_parser import parse_page

from pagetext import CORPORA, ParsedCorpus, assert_served_whole, chunker_errors, markdown_pages

CHUNKER = ChunkerSettings()
# Quick to clone and chunk, and one per docs dialect: GitBook, VitePress, MkDocs.
FAST_CORPORA = ("apm-docs", "vite-docs", "mkdocs-docs")


@contextmanager
def no_fallback() -> Iterator[None]:
    """The real chunker ran: parse_page logs an error when it falls back to plain lines."""
    with chunker_errors() as errors:
        yield
    assert not errors, errors[0].getMessage()


def assert_corpus_served_whole(parsed: ParsedCorpus) -> None:
    assert not parsed.fallbacks, parsed.fallbacks[0]
    corpus = parsed.corpus
    for path, text in corpus.pages.items():
        try:
            assert_served_whole(text, parsed.pages[path], CHUNKER.max_chars)
        except AssertionError as problem:
            raise AssertionError(f"{corpus.name}:{path}: {problem}") from None
    assert len(corpus.pages) == CORPORA[corpus.name].pages  # every page of the corpus was checked


@pytest.mark.parametrize("name", FAST_CORPORA)
def test_every_page_of_a_small_corpus_is_served_whole(name: str, parsed_corpus) -> None:
    assert_corpus_served_whole(parsed_corpus(name))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(set(CORPORA) - set(FAST_CORPORA)))
def test_every_page_of_every_corpus_is_served_whole(name: str, parsed_corpus) -> None:
    assert_corpus_served_whole(parsed_corpus(name))


# --- nesting past markdown-it's limit --------------------------------------------------------


def sections_after(deep: str) -> list[list[str]]:
    sections = [
        f"## Part {n}\n\nPart {n} has a sentence of its own, long enough." for n in range(5)
    ]
    text = f"# Deep\n\n{deep}\n\n" + "\n\n".join(sections) + "\n"
    with no_fallback():
        page = parse_page(text, "deep.md")
    assert_served_whole(text, page, CHUNKER.max_chars)
    return [chunk.headings for chunk in page.chunks if "has a sentence" in chunk.text]


@pytest.mark.parametrize(
    "deep",
    [
        "\n".join(f"{'  ' * depth}- level {depth} of a long outline" for depth in range(12)),
        "\n".join(f"{'   ' * depth}1. step {depth} of the procedure" for depth in range(30)),
        ">" * 40 + " a quote forty deep",
        "- " * 25 + "one line, twenty-five lists deep",
        "> - > - > - > - > - > - > - > - > - > - > - deep mix\n  lazy line",
    ],
    ids=["list", "ordered", "quote", "one-line", "mixed"],
)
def test_the_headings_after_blocks_nested_too_deep_are_sections(deep: str) -> None:
    assert sections_after(deep) == [["Deep", f"Part {n}"] for n in range(5)]


def test_blocks_nested_too_deep_are_embedded_as_text() -> None:
    deep = "\n".join(f"{'  ' * depth}- level{depth}" for depth in range(14))
    with no_fallback():
        page = parse_page(f"{deep}\n", "deep.md", ChunkerSettings(min_alnum=1))
    embedded = " ".join(chunk.embed_text for chunk in page.chunks)
    assert all(f"level{depth}" in embedded for depth in range(14))


# --- generated markdown ----------------------------------------------------------------------


@settings(
    max_examples=200,
    deadline=None,  # no test depends on the machine's speed
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,  # no .hypothesis/ directory left in the repository
)
@given(
    text=markdown_pages(),
    budget=st.sampled_from([40, 200, 1500]),
    min_alnum=st.sampled_from([1, 25, 200]),
    levels=st.integers(1, 6),
    path=st.sampled_from(["docs/page.md", "docs/page.mdx"]),
)
def test_generated_pages_are_served_whole(
    text: str, budget: int, min_alnum: int, levels: int, path: str
) -> None:
    chunker = ChunkerSettings(budget_chars=budget, min_alnum=min_alnum, section_levels=levels)
    with no_fallback():
        page = parse_page(text, path, chunker)
    assert_served_whole(text, page, chunker.max_chars)
