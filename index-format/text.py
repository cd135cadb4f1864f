"""The full-text (Tantivy) side of the format: its schema, and the two analyses that the
indexer applies to chunk text and the searcher applies to queries, identically: `en_stem`
terms for the text fields and identifier terms for the `ident` field."""

from __future__ import annotations

import re
from functools import lru_cache

import tantivy

# Raw fields (untokenized) identify and filter; text fields are ranked with BM25.
RAW_FIELDS = ("chunk_id", "doc_id", "source", "path")
TEXT_FIELDS = ("title", "headings", "body")
IDENT_FIELD = "ident"

_EDGE_PUNCTUATION = "\"'`()[]{}<>,;!?*|“”‘’«»"
_PATH_SEPARATORS = re.compile(r"[./\\:@=]+")
_WORD_SEPARATORS = re.compile(r"[-_]+")
_MAX_SPAN_PARTS = 6


@lru_cache(maxsize=1)
def text_schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    for name in RAW_FIELDS:
        builder.add_text_field(name, stored=name == "chunk_id", tokenizer_name="raw")
    for name in TEXT_FIELDS:
        builder.add_text_field(name, tokenizer_name="en_stem")
    builder.add_text_field(IDENT_FIELD, tokenizer_name="raw", index_option="freq")
    return builder.build()


def analyze(text: str) -> list[str]:
    """The terms Tantivy's `en_stem` tokenizer makes of `text` for the text fields, in order:
    a query is analysed exactly as the documents were (tests/test_text_analysis.py checks it
    against Tantivy's own index of the same text)."""
    return _en_stem().analyze(text)


@lru_cache(maxsize=1)
def _en_stem() -> tantivy.TextAnalyzer:
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


def identifier_terms(text: str) -> list[str]:
    """Lower-cased identifier terms of `text`, each once.

    For every whitespace token: the whole token, its parts split on path-like separators
    (`./\\:@=`), those split again on `-` and `_`, every contiguous run of the hyphenated
    parts (`get-child-item` gives `get-child` and `child-item` too), and each term without
    its leading digits (so `0x801C03F3` also matches `x801c03f3`).
    """
    terms: dict[str, None] = {}
    for raw in text.split():
        token = raw.strip(_EDGE_PUNCTUATION).rstrip(".:").lower()
        if len(token) < 2:
            continue
        for term in _token_terms(token):
            terms[term] = None
            stripped = term.lstrip("0123456789")
            if len(stripped) >= 2 and stripped != term:
                terms[stripped] = None
    return list(terms)


def _token_terms(token: str) -> list[str]:
    out = [token]
    for part in _PATH_SEPARATORS.split(token):
        if len(part) < 2:
            continue
        out.append(part)
        words = [w for w in _WORD_SEPARATORS.split(part) if w]
        if len(words) > 1:
            out.extend(words)
            out.extend(_hyphen_spans(part, words))
    return [t for t in out if len(t) >= 2]


def _hyphen_spans(part: str, words: list[str]) -> list[str]:
    """Contiguous runs of two or more words, joined with the separator the part used."""
    if len(words) > _MAX_SPAN_PARTS:
        return []
    joiner = "-" if "-" in part else "_"
    n = len(words)
    return [joiner.join(words[i:j]) for i in range(n) for j in range(i + 2, n + 1)]
