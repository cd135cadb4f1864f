"""Whether a search's evidence is weak: `low_confidence` (docs/retrieval.md, "Saying no
answer"; adr/0027). Decided after ranking, from the query's terms, the index's statistics
and the first hits; it never changes the ranking.

The statistics are the whole index's, or, for a caller limited to some sources, those of
the chunks it may read (`Scope.visible`): the chunks of other sources never make a word of
the question present, rare or common for it (adr/0038)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from functools import lru_cache

import tantivy

from docdex.index_format.text import CJK_FIELD, TEXT_FIELDS, TextAnalysis, identifier_terms
from docdex.model.protocol import EmbedderUnavailable

from .dense import best_cosine
from .loaded import LoadedVersion
from .query import QueryContext, QueryProfile
from .retrieval import Candidate
from .scope import Entries

# Function words (and one-letter terms) are never counted absent, whatever the index holds.
_FUNCTION_WORDS_TEXT = """
    a about above after again all also am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers him his how i if in into is it its just me more most my
    no nor not now of off on once only or other our ours out over own same she should so some
    such than that the their theirs them then there these they this those through to too under
    until up very was we were what when where which while who whom why will with would you your
    yours"""
_FUNCTION_WORDS = frozenset(_FUNCTION_WORDS_TEXT.split())


class ChunkCounts:
    """How many chunks there are, and how many hold a term in a field, among the chunks
    low_confidence counts. `visible` None: the whole index, from its own statistics (a
    term's count, as BM25's, still includes deleted chunks until a merge drops them); else
    the live chunks of those entries, one count query each, which the version remembers
    (derived.py)."""

    def __init__(self, version: LoadedVersion, visible: Entries | None = None) -> None:
        self.searcher = version.searcher
        self._within = version.derived.entry_counts(visible) if visible is not None else None

    @property
    def total(self) -> int:
        return self.searcher.num_docs if self._within is None else self._within.total

    def holding(self, field: str, term: str) -> int:
        """How many of the chunks hold `term` in `field`."""
        if self._within is None:
            return self.searcher.doc_freq(field, term)
        return self._within.holding(field, term)


Corpus = LoadedVersion | ChunkCounts  # the chunks a rule below counts; a version: all of its


def counted(corpus: Corpus) -> ChunkCounts:
    return corpus if isinstance(corpus, ChunkCounts) else ChunkCounts(corpus)


def is_low_confidence(ctx: QueryContext, ranked: list[Candidate]) -> bool:
    """Weak evidence: the query names something the corpus never mentions, or names a thing
    the corpus knows but none of the first hits is about, or the best hit is neither
    semantically close nor a good lexical match (thresholds: `ctx.settings.confidence`).
    The corpus is what the caller may read (`ctx.scope.visible`)."""
    if not ranked:
        return True
    version, profile, limits = ctx.version, ctx.profile, ctx.settings.confidence
    counts = ChunkCounts(version, ctx.scope.visible)
    min_chunks = limits.absence_min_chunks
    if absent_share(counts, profile, min_chunks) >= limits.absent_share and (
        absence_is_the_subject(ctx, ranked, counts)
    ):
        return True
    if unmatched_names_share(counts, profile, ranked[:10], min_chunks) >= limits.absent_share:
        return True
    if not any(c.embedded for c in ranked[:10]):  # no vectors yet: dense says nothing
        return False
    best_dense = max(c.dense for c in ranked[:10])
    if best_dense >= limits.weak_dense:
        return False
    return lexical_coverage(counts, profile, ranked[0]) < limits.weak_lexical


def absence_is_the_subject(
    ctx: QueryContext, ranked: list[Candidate], counts: ChunkCounts | None = None
) -> bool:
    """Whether the words no chunk contains are what the question is about: one of them
    names a thing (a product, a place, a version), or the rest of the question, without
    them, comes clearly closer to the corpus. An everyday word of a paraphrase ("continue
    a download interrupted halfway") changes the best cosine by a few hundredths.
    `counts`: the chunks the caller may read, when already counting."""
    profile = ctx.profile
    absent = absent_words(counts or ChunkCounts(ctx.version, ctx.scope.visible), profile)
    if not absent or any(names_a_thing(word, at) for at, word in absent):
        return True
    dropped = {word for _, word in absent}
    rest = " ".join(word for word in profile.text.split() if word not in dropped)
    if not rest:
        return False
    best = max(c.dense for c in ranked)
    try:
        vector = ctx.embedder.embed_query(rest)
    except EmbedderUnavailable:  # an endpoint that is down: the absent words decide
        return True
    closer = best_cosine(ctx.version, vector, ctx.scope, ctx.settings)
    return closer - best >= ctx.settings.confidence.subject_gain


def names_a_thing(word: str, position: int) -> bool:
    """A word with a digit or an inner capital (`iOS`, `2022`, `HoloLens`), or capitalised
    anywhere but at the start of the question."""
    return bool(_NAMED.search(word)) or (position > 0 and word[:1].isupper())


_NAMED = re.compile(r"[0-9]|.[A-Z]")


def absent_words(corpus: Corpus, profile: QueryProfile) -> list[tuple[int, str]]:
    """(position, word) of the query's words whose every content term no chunk contains."""
    counts = counted(corpus)
    out = []
    for at, word in enumerate(profile.text.split()):
        terms = content_terms(profile, word)
        if terms and all(text_frequency(counts, t) == 0 for t in terms):
            out.append((at, word))
    return out


def unmatched_names_share(
    corpus: Corpus, profile: QueryProfile, head: list[Candidate], min_chunks: int
) -> float:
    """The IDF-weighted share of the query in terms of words that name a thing, which the
    corpus contains but none of `head` does ("a Slack channel" where two pages say Slack
    and no hit is one of them)."""
    counts = counted(corpus)
    named = {  # term: how many chunks hold it
        term: df
        for at, word in enumerate(profile.text.split())
        if names_a_thing(word, at)
        for term in content_terms(profile, word)
        if (df := text_frequency(counts, term)) > 0
    }
    total = counts.total
    if not named or not head or total < min_chunks:
        return 0.0
    ids = [c.chunk.chunk_id for c in head]
    weight = sum(term_idf(total, text_frequency(counts, t)) for t in profile.terms)
    missed = sum(
        term_idf(total, df)
        for t, df in named.items()
        if not any_contains(counts.searcher, profile, ids, t)
    )
    return missed / weight if weight else 0.0


def content_terms(profile: QueryProfile, word: str) -> list[str]:
    ignored = function_words(profile.analysis)
    return [t for t in profile.analysis.terms(word) if len(t) > 1 and t not in ignored]


def text_frequency(counts: ChunkCounts, term: str, fields: Sequence[str] = TEXT_FIELDS) -> int:
    """How many chunks hold the term in these fields (by default title, headings or text)."""
    return sum(counts.holding(name, term) for name in fields)


def any_contains(
    searcher: tantivy.Searcher, profile: QueryProfile, chunk_ids: list[str], term: str
) -> bool:
    """Whether one of the chunks holds the term in its title, headings or text."""
    schema = profile.analysis.schema()
    fields = [
        (tantivy.Occur.Should, tantivy.Query.term_query(schema, name, term)) for name in TEXT_FIELDS
    ]
    query = tantivy.Query.boolean_query(
        [
            (tantivy.Occur.Must, tantivy.Query.boolean_query(fields)),
            (tantivy.Occur.Must, tantivy.Query.term_set_query(schema, "chunk_id", chunk_ids)),
        ]
    )
    return bool(searcher.search(query, 1, count=False).hits)


def absent_share(corpus: Corpus, profile: QueryProfile, min_chunks: int) -> float:
    """The IDF-weighted share of the query's terms that no chunk of the index contains (in
    its title, headings or text): a question about a product, an option or a person that
    the documents never name has no answer in them, however close its other words come.
    Function words count in the weight but are never absent (a tiny index may lack them);
    in an index of fewer than `min_chunks` chunks a word's absence says little."""
    counts = counted(corpus)
    total = counts.total
    if total < min_chunks:
        return 0.0
    weight = absent = 0.0
    ignored = function_words(profile.analysis)
    for fields, term in [(TEXT_FIELDS, t) for t in profile.terms] + [
        ((CJK_FIELD,), t) for t in profile.cjk
    ]:
        df = text_frequency(counts, term, fields)
        idf = term_idf(total, df)
        weight += idf
        if df == 0 and len(term) > 1 and term not in ignored:
            absent += idf
    return absent / weight if weight else 0.0


def term_idf(total: int, df: int) -> float:
    """The weight of a query term in the IDF-weighted shares of low_confidence."""
    return math.log(1 + total / (1 + df))


@lru_cache(maxsize=4)
def function_words(analysis: TextAnalysis) -> frozenset[str]:
    """The function words as the analysis turns them into terms."""
    return frozenset(term for word in _FUNCTION_WORDS for term in analysis.terms(word))


def lexical_coverage(counts: ChunkCounts, profile: QueryProfile, cand: Candidate) -> float:
    """1.0 when an identifier of the query occurs in the candidate chunk; otherwise the
    IDF-weighted share of the query's terms that occur in it."""
    chunk = cand.chunk
    if profile.identifier:
        code = identifier_terms(" ".join(profile.code))
        if code and code[0] in set(identifier_terms(chunk.text)):
            return 1.0
    wanted = [("body", t) for t in profile.terms] + [(CJK_FIELD, t) for t in profile.cjk]
    if not wanted:
        return 0.0
    text = " ".join([*chunk.headings, chunk.text])
    analysis = profile.analysis
    present = {("body", t) for t in analysis.terms(text)}
    present |= {(CJK_FIELD, t) for t in analysis.cjk_terms(text)} if profile.cjk else set()
    total = counts.total or 1
    weight = hit = 0.0
    for field_term in wanted:
        idf = term_idf(total, counts.holding(*field_term))
        weight += idf
        hit += idf if field_term in present else 0.0
    return hit / weight if weight else 0.0
