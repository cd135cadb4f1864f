"""The full-text (Tantivy) side of the format: its schema, and the analyses that the indexer
applies to chunk text and the searcher applies to queries, identically: stemmed terms for
the text fields, identifier terms for the `ident` field and, from analysis 2 on, character
n-grams of Chinese, Japanese and Korean runs for the `cjk` field.

An index records the analysis it was built with (`Manifest.text_analysis`): the server
analyses queries the way the version it serves was built, and the indexer rebuilds the
text index of an older one (adr/0022)."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

import tantivy

from .layout import IndexFormatError

# The analysis this code writes. Raise it when a change to an analysis changes the terms
# an index holds; keep the older ones readable (`text_analysis`).
TEXT_ANALYSIS = 2  # 2: ASCII folding, CJK n-grams (adr/0022); 1: en_stem (absent: 1)

# Raw fields (untokenized) identify and filter; text fields are ranked with BM25.
RAW_FIELDS = ("chunk_id", "doc_id", "source", "path")
TEXT_FIELDS = ("title", "headings", "body")
IDENT_FIELD = "ident"
CJK_FIELD = "cjk"

_EDGE_PUNCTUATION = "\"'`()[]{}<>,;!?*|“”‘’«»"
_PATH_SEPARATORS = re.compile(r"[./\\:@=]+")
_WORD_SEPARATORS = re.compile(r"[-_]+")
_MAX_SPAN_PARTS = 6
_MAX_TERM_BYTES = 40  # Tantivy's remove_long: longer tokens are dropped

# Han (with its iteration marks), kana (not the middle dot ・), Hangul, and the half-width
# forms of kana and Hangul: scripts written without spaces between words, or whose words
# carry their particles, so whole runs make poor terms.
_CJK_RUN = re.compile(
    "[\u1100-\u11ff\u2e80-\u2fdf\u3005-\u3007\u3021-\u3029\u3031-\u3035\u303b\u303c"
    "\u3041-\u30fa\u30fc-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff66-\uffdc\U00020000-\U0003134f]+"
)
_STEM_TOKENIZER = "docdex_text"
_CJK_TOKENIZER = "docdex_cjk"


@dataclass(frozen=True)
class TextAnalysis:
    """One analysis version: the schema an index of it has, what the indexer hands Tantivy
    for each field, and the terms a query is looked up by."""

    version: int
    stem_tokenizer: str  # of the text fields: "en_stem" (built in) or a registered one
    fold: bool  # ASCII folding in the text fields, CJK runs moved to the cjk field

    def schema(self) -> tantivy.Schema:
        return _schema(self)

    def register(self, index: tantivy.Index) -> None:
        """Give a writer's index the analyzers this version's fields name (Tantivy refuses
        a document for a field whose tokenizer it does not know; readers need none: queries
        are built from terms)."""
        if self.fold:
            index.register_tokenizer(_STEM_TOKENIZER, _stem_analyzer(True))
            index.register_tokenizer(_CJK_TOKENIZER, _cjk_analyzer())

    def prepare(self, text: str) -> str:
        """What the indexer hands Tantivy for a text field (title, headings, body)."""
        return _CJK_RUN.sub(" ", text) if self.fold and not text.isascii() else text

    def terms(self, text: str) -> list[str]:
        """The terms Tantivy makes of `text` in the text fields, in order."""
        return _stem_analyzer(self.fold).analyze(self.prepare(text))

    def cjk_values(self, text: str) -> list[str]:
        """The values of the cjk field: each CJK run of `text`, NFKC-normalised (half-width
        kana become full-width), one value per run so that no n-gram spans two runs."""
        if not self.fold or text.isascii():  # a quick test: most chunks have no CJK run
            return []
        return [unicodedata.normalize("NFKC", run) for run in _CJK_RUN.findall(text)]

    def cjk_terms(self, text: str) -> list[str]:
        """The terms Tantivy indexes for `text` in the cjk field: every character and every
        pair of adjacent characters of each run."""
        analyzer = _cjk_analyzer()
        return [term for run in self.cjk_values(text) for term in analyzer.analyze(run)]

    def cjk_query_terms(self, text: str) -> list[str]:
        """The cjk terms a query is looked up by, each once: the pairs of adjacent characters
        of each run (the character itself for a run of one)."""
        terms: dict[str, None] = {}
        for run in self.cjk_values(text):
            pairs = [run[i : i + 2] for i in range(len(run) - 1)] or [run]
            terms.update(dict.fromkeys(pairs))
        return list(terms)


ANALYSES = {
    1: TextAnalysis(version=1, stem_tokenizer="en_stem", fold=False),
    2: TextAnalysis(version=2, stem_tokenizer=_STEM_TOKENIZER, fold=True),
}


def text_analysis(version: int | None = None) -> TextAnalysis:
    """The analysis of an index built with `version` (None: the one this code writes);
    refused when this code is older."""
    try:
        return ANALYSES[TEXT_ANALYSIS if version is None else version]
    except KeyError:
        raise IndexFormatError(
            f"the text index was built with text analysis {version}, which this docdex does "
            f"not know (it knows 1 to {TEXT_ANALYSIS}): upgrade docdex"
        ) from None


def text_schema() -> tantivy.Schema:
    """The schema of the analysis this code writes."""
    return text_analysis().schema()


def analyze(text: str) -> list[str]:
    """The terms the text fields of a new index hold for `text`, in order: a query is
    analysed exactly as the documents were (tests/index_format/test_text_analysis.py checks it
    against Tantivy's own index of the same text)."""
    return text_analysis().terms(text)


@lru_cache(maxsize=4)
def _schema(analysis: TextAnalysis) -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    for name in RAW_FIELDS:
        builder.add_text_field(name, stored=name == "chunk_id", tokenizer_name="raw")
    for name in TEXT_FIELDS:
        builder.add_text_field(name, tokenizer_name=analysis.stem_tokenizer)
    builder.add_text_field(IDENT_FIELD, tokenizer_name="raw", index_option="freq")
    if analysis.fold:  # last: the fields before it keep the numbers they had in analysis 1
        builder.add_text_field(CJK_FIELD, tokenizer_name=_CJK_TOKENIZER, index_option="freq")
    return builder.build()


@lru_cache(maxsize=2)
def _stem_analyzer(fold: bool) -> tantivy.TextAnalyzer:
    """Tantivy's en_stem (simple tokenizer, remove_long, lowercase, English stemmer), with
    ASCII folding before the stemmer when `fold` (`résumé` and `resume` meet)."""
    builder = (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(_MAX_TERM_BYTES))
        .filter(tantivy.Filter.lowercase())
    )
    if fold:
        builder = builder.filter(tantivy.Filter.ascii_fold())
    return builder.filter(tantivy.Filter.stemmer("english")).build()


@lru_cache(maxsize=1)
def _cjk_analyzer() -> tantivy.TextAnalyzer:
    return tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.ngram(1, 2, False)).build()


def identifier_terms(text: str) -> list[str]:
    """Lower-cased identifier terms of `text`, each once.

    For every whitespace token: the whole token, its parts split on path-like separators
    (`./\\:@=`), those split again on `-` and `_`, every contiguous run of the hyphenated
    parts (`get-child-item` gives `get-child` and `child-item` too), and each term without
    its leading digits (so `0x801C03F3` also matches `x801c03f3`).
    """
    terms: dict[str, None] = {}
    for raw in text.split():
        for term in _raw_terms(raw):
            terms[term] = None
    return list(terms)


@lru_cache(maxsize=1 << 16)
def _raw_terms(raw: str) -> tuple[str, ...]:
    """One whitespace token's terms, in order. Cached: prose repeats its words, and the
    indexer asks for every word of every chunk (a quarter of a first index's CPU before)."""
    token = raw.strip(_EDGE_PUNCTUATION).rstrip(".:").lower()
    if len(token) < 2:
        return ()
    out: list[str] = []
    for term in _token_terms(token):
        out.append(term)
        stripped = term.lstrip("0123456789")
        if len(stripped) >= 2 and stripped != term:
            out.append(stripped)
    return tuple(out)


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
