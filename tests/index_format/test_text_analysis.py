"""The query analyses (index_format.text) against what Tantivy indexes for the documents the
indexer writes (indexer/run/storage/text_index.py, `text_document`), for every analysis version an
index may have: a query term that the index never made would silently match nothing."""

from __future__ import annotations

import pytest
import tantivy

from docdex.index_format.records import ChunkRecord
from docdex.index_format.text import (
    ANALYSES,
    CJK_FIELD,
    TEXT_ANALYSIS,
    TEXT_FIELDS,
    TextAnalysis,
    analyze,
    identifier_terms,
    text_analysis,
)
from docdex.indexer.run.storage.text_index import text_document

from paths import ROOT

SAMPLES = [
    "How do I rotate the signing key?",
    "Running runners ran; the RUNNER's runs",
    "Get-ChildItem -Recurse -Filter *.md | Where-Object { $_.Length -gt 1kb }",
    "Error 0x801C03F3: device not found in Azure AD (WOW6432Node)",
    "self.typeck_results() and tcx.hir().body(id) in rustc_middle::ty",
    "Café, naïve façade — Ünïcödé ß straße 東京 مرحبا",
    "a" * 39 + " " + "b" * 40 + " " + "c" * 41,  # remove_long drops tokens of 40+ bytes
    "é" * 19 + " " + "ü" * 20 + " " + "ß" * 21,  # ... counted in bytes, before folding
    "it's don't can't O'Reilly \"quoted\" (x `code` [link](http://example.com/a_b))",
    "tabs\tand\nnewlines\r\nand   spaces",
    "!!! ??? ... --- ***",
    "索引を作成するには docdex index を実行します。Dockerをインストール",
    "使用Docker部署文档搜索服务，支持中文全文检索",
    "문서 검색 서버를 설치하려면 다음 명령을 실행하세요",
    "ｶﾀｶﾅ ﾃｽﾄ 々 〆 ・ 「引用」 〇",
    "Résumé, crème brûlée, Ærøskøbing, Łódź, Fußgängerübergänge, naïveté",
    "",
]


def indexed_terms(text: str, analysis: TextAnalysis) -> dict[str, set[str]]:
    """Field -> every term Tantivy indexed for a chunk whose title, headings and body are
    `text`, written as the indexer writes chunks."""
    index = tantivy.Index(analysis.schema())
    analysis.register(index)
    writer = index.writer()
    chunk = ChunkRecord(
        chunk_id="s:p.md#chunk0",
        doc_id="s:p.md",
        source="s",
        path="p.md",
        title=text,
        headings=["Page", text],
        text=text,
        start_line=1,
        end_line=1,
        content_hash="",
        window_start=0,
        window_count=0,
    )
    writer.add_document(text_document(chunk, text, analysis))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    searcher = index.searcher()
    fields = [*TEXT_FIELDS, *([CJK_FIELD] if analysis.fold else [])]
    return {f: {t for t, _ in searcher.terms_with_prefix(f, "")} for f in fields}


@pytest.mark.parametrize("version", sorted(ANALYSES))
@pytest.mark.parametrize("text", SAMPLES)
def test_query_terms_are_the_terms_tantivy_indexes(text: str, version: int) -> None:
    analysis = text_analysis(version)
    found = indexed_terms(text, analysis)
    for name in TEXT_FIELDS:
        assert set(analysis.terms(text)) == found[name], name
    if analysis.fold:
        # a run's characters and pairs are indexed; a query asks for pairs (or a character)
        assert set(analysis.cjk_terms(text)) == found[CJK_FIELD]
        assert set(analysis.cjk_query_terms(text)) <= found[CJK_FIELD]


def test_the_same_on_real_documentation() -> None:
    pages = sorted((ROOT / "docs").rglob("*.md"))[:12]
    assert pages
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert set(analyze(text)) == indexed_terms(text, text_analysis())["body"], page.name


def test_accents_fold_both_ways_from_analysis_2() -> None:
    new, old = text_analysis(2), text_analysis(1)
    for accented, plain in [("résumé", "resume"), ("Straße", "strasse"), ("Łódź", "lodz")]:
        assert new.terms(accented) == new.terms(plain)
        assert old.terms(accented) != old.terms(plain)


def test_cjk_runs_become_character_pairs_and_leave_the_text_fields() -> None:
    analysis = text_analysis(2)
    assert analysis.cjk_query_terms("東京都") == ["東京", "京都"]
    assert analysis.cjk_query_terms("猫") == ["猫"]
    assert analysis.cjk_query_terms("ｶﾀｶﾅ") == ["カタ", "タカ", "カナ"]  # NFKC: full-width
    # Latin written against kana is its own term; in analysis 1 it was one token with it
    assert analysis.terms("Dockerをインストール") == ["docker"]
    assert text_analysis(1).terms("Dockerをインストール") == ["dockerをインストール"]


def test_english_text_analyses_alike_in_both_versions() -> None:
    """On text without accented or CJK letters (punctuation of any kind kept)."""
    for page in sorted((ROOT / "docs").rglob("*.md")):
        lines = page.read_text(encoding="utf-8").splitlines()
        text = "\n".join(line for line in lines if not any(_foreign(ch) for ch in line))
        assert text_analysis(1).terms(text) == text_analysis(2).terms(text), page.name


def _foreign(ch: str) -> bool:
    return ch.isalnum() and not ch.isascii()


def test_an_unknown_analysis_is_refused() -> None:
    from docdex.index_format.layout import IndexFormatError

    with pytest.raises(IndexFormatError, match="text analysis 99"):
        text_analysis(99)
    assert text_analysis().version == TEXT_ANALYSIS


@pytest.mark.parametrize(
    ("text", "prepared", "runs"),
    [
        ("plain words, `code` and C:\\path", "plain words, `code` and C:\\path", []),
        ("café ☕ naïve — “quoted”", "café ☕ naïve — “quoted”", []),  # not ASCII, no CJK
        ("abc 日本語 def ﾃｽﾄ", "abc   def  ", ["日本語", "テスト"]),
        ("한국어 and 中文", "  and  ", ["한국어", "中文"]),
    ],
)
def test_cjk_runs_leave_the_text_fields_for_the_cjk_field(
    text: str, prepared: str, runs: list[str]
) -> None:
    analysis = text_analysis(2)
    assert analysis.prepare(text) == prepared
    assert analysis.cjk_values(text) == runs
    assert text_analysis(1).prepare(text) == text
    assert text_analysis(1).cjk_values(text) == []


def test_identifier_terms_come_once_each_in_order_of_first_use() -> None:
    text = "Set-Item b-c a b-c a-b Set-Item set-item 42x 42x a-b-c."
    assert identifier_terms(text) == ["set-item", "set", "item", "b-c", "a-b", "42x", "a-b-c"]
