"""The query analyzer (index_format.text.analyze) against Tantivy's own en_stem analysis of
the same text: a query term that the index never made would silently match nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
import tantivy

from docdex.index_format.text import TEXT_FIELDS, analyze, text_schema

ROOT = Path(__file__).resolve().parent.parent

SAMPLES = [
    "How do I rotate the signing key?",
    "Running runners ran; the RUNNER's runs",
    "Get-ChildItem -Recurse -Filter *.md | Where-Object { $_.Length -gt 1kb }",
    "Error 0x801C03F3: device not found in Azure AD (WOW6432Node)",
    "self.typeck_results() and tcx.hir().body(id) in rustc_middle::ty",
    "Café, naïve façade — Ünïcödé ß straße 東京 مرحبا",
    "a" * 39 + " " + "b" * 40 + " " + "c" * 41,  # remove_long drops tokens of 40+ bytes
    "it's don't can't O'Reilly \"quoted\" (x `code` [link](http://example.com/a_b))",
    "tabs\tand\nnewlines\r\nand   spaces",
    "!!! ??? ... --- ***",
    "",
]


def tantivy_terms(text: str) -> set[str]:
    """Every term Tantivy indexed for `text` in the text fields (they share en_stem)."""
    index = tantivy.Index(text_schema())
    writer = index.writer()
    writer.add_document(tantivy.Document(chunk_id="c", **dict.fromkeys(TEXT_FIELDS, text)))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    searcher = index.searcher()
    found = {field: {t for t, _ in searcher.terms_with_prefix(field, "")} for field in TEXT_FIELDS}
    assert all(terms == found["body"] for terms in found.values())
    return found["body"]


@pytest.mark.parametrize("text", SAMPLES)
def test_query_terms_are_the_terms_tantivy_indexes(text: str) -> None:
    assert set(analyze(text)) == tantivy_terms(text)


def test_the_same_on_real_documentation() -> None:
    pages = sorted((ROOT / "docs").rglob("*.md"))[:12]
    assert pages
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert set(analyze(text)) == tantivy_terms(text), page.name
