"""What a page's chunks must give back (index-format/FORMAT.md, "Page text"), and pages to
check it on: a shared corpus at its head, read from git as the indexer reads it, and
generated markdown."""

from __future__ import annotations

import logging
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from hypothesis import strategies as st

from docdex.index_format.reassembly import reassemble, served_text
from docdex.index_format.records import ChunkerSettings, ParsedPage
from docdex.indexer.chunking.page_parser import parse_page
from docdex.indexer.git.blobs import decode_markdown

from bench.common import CORPORA as BENCH_CORPORA
from bench.common import blobs_at_head, corpus_bundle, first_differing_line
from paths import SHARED


class Bundle(NamedTuple):
    branch: str
    pages: int  # markdown files at its head (../shared/corpora/README.md)


CORPORA = {
    "apm-docs": Bundle("main", 51),
    "rustc-dev-guide-md": Bundle("md-linear", 244),
    "PowerShell-Docs-md": Bundle("md-linear", 3_112),
    "msmarco-5k": Bundle("main", 5_000),
    "vite-docs": Bundle("main", 57),
    "mkdocs-docs": Bundle("master", 19),
    "rust-book": Bundle("main", 112),
    "hugo-docs": Bundle("master", 993),
}
PAGE_SUFFIXES = (".md", ".markdown", ".mdx")  # the default include globs
_NO_SIZE_LIMIT = 1 << 40


def assert_served_whole(text: str, page: ParsedPage, max_chars: int) -> None:
    """The chunks give the page back exactly, none over the bound."""
    assert all(len(chunk.text) <= max_chars for chunk in page.chunks)
    rebuilt, expected = reassemble(page.chunks, page.front_matter), served_text(text)
    if rebuilt != expected:  # name the first line that differs, not the whole page
        line = first_differing_line(rebuilt, expected)
        raise AssertionError(f"line {line} is not served as it is in the file")


@dataclass
class Corpus:
    """The files of a repository at its head: pages decoded as the indexer decodes them,
    every blob readable by path (for includes)."""

    name: str
    pages: dict[str, str]
    blobs: dict[str, bytes]

    def read(self, path: str) -> str | None:
        data = self.blobs.get(path)
        return None if data is None else data.decode("utf-8", "replace")


class _Errors(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextmanager
def chunker_errors() -> Iterator[list[logging.LogRecord]]:
    """The errors the chunker logs meanwhile: parse_page logs one when it falls back to
    plain lines, so an empty list means the real chunker ran."""
    errors = _Errors()
    logger = logging.getLogger("docdex.indexer.chunking.page_parser")
    logger.addHandler(errors)
    try:
        yield errors.records
    finally:
        logger.removeHandler(errors)


class ParsedCorpus(NamedTuple):
    corpus: Corpus
    pages: dict[str, ParsedPage]  # path -> the chunker's page, with the default settings
    fallbacks: list[str]  # what the chunker logged when it fell back to plain lines


def parse_corpus(corpus: Corpus) -> ParsedCorpus:
    with chunker_errors() as errors:
        pages = {
            path: parse_page(text, path, ChunkerSettings(), corpus.read)
            for path, text in corpus.pages.items()
        }
    return ParsedCorpus(corpus, pages, [e.getMessage() for e in errors])


def bundle_path(name: str) -> Path:
    return SHARED / "corpora" / f"{name}.bundle"


def corpus_at_head(name: str, root: Path) -> Corpus:
    """The bundle cloned bare under `root`, its head's files read with git cat-file."""
    bare = root / f"{name}.git"
    subprocess.run(
        [
            "git",
            "clone",
            "-q",
            "--bare",
            "-b",
            CORPORA[name].branch,
            str(bundle_path(name)),
            str(bare),
        ],
        check=True,
    )
    blobs = blobs_at_head(bare)
    pages = {}
    for path, data in blobs.items():
        if path.lower().endswith(PAGE_SUFFIXES):
            text = decode_markdown(path, data, _NO_SIZE_LIMIT)
            if isinstance(text, str):  # else a file the indexer refuses (binary, UTF-16)
                pages[path] = text
    return Corpus(name, pages, blobs)


def bench_corpus_files(corpus: str, root: Path) -> dict[str, bytes]:
    """The files at the head of a corpus bench/corpora keeps (a key of bench.common.CORPORA:
    "sqlmodel", "starlight", ...), its bundle cloned bare under `root`."""
    bare = root / f"{corpus}.git"
    branch = BENCH_CORPORA[corpus][1]
    bundle = str(corpus_bundle(corpus))
    subprocess.run(["git", "clone", "-q", "--bare", "-b", branch, bundle, str(bare)], check=True)
    return blobs_at_head(bare)


# --- generated markdown: what breaks chunkers and renderers -------------------------------

_WORDS = st.sampled_from(["agent", "deploy", "Intune", "the", "a", "x", "é", "`code`", "**b**"])
_PHRASE = st.lists(_WORDS, min_size=1, max_size=12).map(" ".join)
_INDENT = st.sampled_from(["", " ", "  ", "    ", "\t", "   "])


def _heading(phrase: str, level: int) -> str:
    return f"{'#' * level} {phrase}"


_ATX = st.builds(_heading, _PHRASE, st.integers(1, 7))
_SETEXT = st.builds(lambda p, rule: f"{p}\n{rule}", _PHRASE, st.sampled_from(["===", "---", "-"]))
_EMPTY_SECTIONS = st.lists(_ATX, min_size=2, max_size=5).map("\n".join)
_PARAGRAPH = st.lists(_PHRASE, min_size=1, max_size=4).map("\n".join)
_LONG_LINE = st.builds(lambda p, n: " ".join([p] * n), _PHRASE, st.integers(5, 60))
_SPACES = st.sampled_from(["  ", "\t", " \t ", ""])


def _nested_list(depth: int, marker: str, body: str, step: int) -> str:
    return "\n".join(f"{' ' * (step * d)}{marker} {body} {d}" for d in range(depth))


_DEEP_LIST = st.builds(
    _nested_list, st.integers(1, 24), st.sampled_from(["-", "*", "1."]), _PHRASE, st.integers(1, 4)
)
_LIST_HEADING = st.builds(lambda h, m: f"{m} {h}", _ATX, st.sampled_from(["-", "1.", "  -"]))
_QUOTE = st.builds(
    lambda depth, block: "\n".join(">" * depth + " " + line for line in block.split("\n")),
    st.integers(1, 30),
    st.one_of(_ATX, _PARAGRAPH, _SETEXT),
)
_FENCE = st.builds(
    lambda fence, body, closed: f"{fence}sh\n{body}" + (f"\n{fence}" if closed else ""),
    st.sampled_from(["```", "~~~", "````"]),
    st.lists(st.one_of(_ATX, _PHRASE), max_size=4).map("\n".join),
    st.booleans(),
)
_HTML = st.sampled_from(
    [
        "<div>\n<p>inside a div</p>\n</div>",
        "<!-- a comment -->",
        "<!--\nunclosed comment",
        "<details><summary>Is it free?</summary>Yes.</details>",
        "<details>\n<summary>Open question</summary>\n\nAn answer.\n",
        "</details>",
        "<br>",
        "<img src=x.png>",
    ]
)
_TABLE = st.builds(
    lambda cells, rows: (
        "| a | b |\n|---|---|\n" + "\n".join(f"| {cells} | {n} |" for n in range(rows))
    ),
    _PHRASE,
    st.integers(0, 6),
)
_RULE = st.sampled_from(["---", "***", "___", "- - -"])
_FRONT_MATTER = st.sampled_from(
    [
        "",
        "---\ntitle: Deploy\ntags: [a, b]\n---\n",
        "---\ntitle: Unclosed\n\n",
        "---\n: not a field\n---\n",
        "+++\ntitle = 'Toml'\n+++\n",
        "---\n---\n",
        "---\n\n",
        "\ufeff---\ndescription: >-\n  folded\n  text\n---\n",
    ]
)
_BLOCKS = [
    _ATX,
    _SETEXT,
    _EMPTY_SECTIONS,
    _PARAGRAPH,
    _LONG_LINE,
    _SPACES,
    _DEEP_LIST,
    _LIST_HEADING,
    _QUOTE,
    _FENCE,
    _TABLE,
    _RULE,
    st.builds(lambda indent, p: indent + p, _INDENT, _PARAGRAPH),
]


@st.composite
def _pages(draw: st.DrawFn, html: bool) -> str:
    blocks = draw(st.lists(st.one_of(*_BLOCKS, *([_HTML] if html else [])), max_size=25))
    separators = draw(st.lists(st.sampled_from(["\n", "\n\n", "\n\n\n", "\n  \n"]), min_size=25))
    body = "".join(block + separator for block, separator in zip(blocks, separators, strict=False))
    text = draw(_FRONT_MATTER) + body + draw(st.sampled_from(["", "\n", "\n\n  ", "\n\n\n"]))
    newline = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    return text.replace("\n", newline)


def markdown_pages(html: bool = True) -> st.SearchStrategy[str]:
    """Pages of front matter variants, empty sections, lists and quotes nested past
    markdown-it's limit, headings in lists and quotes, setext headings, fences left open,
    tables, long lines and lines of spaces (and HTML blocks, unless `html` is false), with
    LF, CRLF or CR line breaks."""
    return _pages(html)
