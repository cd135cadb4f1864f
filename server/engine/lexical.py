"""BM25 over the version's Tantivy index, under the query's scope.

User text is never parsed as a query language: it is analysed into terms the way the index
analysed the documents (query.py), and the query is built from those terms with Tantivy's
query classes, so `foo:bar`, `"unclosed`, `(x` or `a AND` cannot raise. Filters (entries,
path prefix, tagged pages) are Must clauses of the same query, never applied afterwards.
Each entry's chunks are scored by the entry's own statistics (`entry_clauses`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import tantivy

from docdex.index_format.text import CJK_FIELD, IDENT_FIELD, text_schema

from .derived import entries_query
from .loaded import LoadedVersion
from .query import QueryContext, QueryProfile
from .scope import Scope
from .settings import FieldBoosts

Scored = tuple[tuple[int, int], float]  # ((segment position, chunk index), score)


def bm25_top(ctx: QueryContext) -> list[Scored]:
    """The query's best `retrieve_k` chunks by BM25, under its scope."""
    settings = ctx.settings
    containing = terms_containing(ctx.version, ctx.profile.literals, settings.max_containing)
    query = bm25_query(ctx.version, ctx.profile, ctx.scope, settings.boosts, containing)
    if query is None:
        return []
    searcher = ctx.version.searcher
    found = []
    for score, address in searcher.search(query, settings.retrieve_k, count=False).hits:
        chunk_id = searcher.doc(address)["chunk_id"][0]
        key = ctx.version.locate(chunk_id)
        if key is not None:
            found.append((float(score), chunk_id, key))
    # Tantivy orders equal scores by where the chunks sit in its segments, which another
    # source's pages or a run that commits as it reads move: equal scores go by chunk id
    found.sort(key=lambda item: (-item[0], item[1]))
    return [(key, score) for score, _, key in found]


def bm25_query(
    version: LoadedVersion,
    profile: QueryProfile,
    scope: Scope,
    boosts: FieldBoosts,
    containing: Sequence[str] = (),
) -> tantivy.Query | None:
    """Each searched entry's chunks scored by that entry's own statistics (adr/0044), so
    that what else is indexed never moves an entry's ranking. `containing`: identifier
    terms of the index that contain a literal of the query."""
    weighted = weighted_terms(profile, boosts)
    schema = profile.analysis.schema()
    per_entry = []
    for entry in searched_keys(version, scope):
        should = entry_clauses(version, entry, weighted, schema)
        if containing:
            q = tantivy.Query.term_set_query(schema, IDENT_FIELD, list(containing))
            should.append(_should(q, boosts.containing))  # a constant score: no statistics
        if should:
            per_entry.append(_within_entry(version, entry, tantivy.Query.boolean_query(should)))
    if not per_entry:
        return None
    query = per_entry[0][1] if len(per_entry) == 1 else tantivy.Query.boolean_query(per_entry)
    filters = filter_queries(Scope(path_prefix=scope.path_prefix, pages=scope.pages))
    if not filters:
        return query
    must = [(tantivy.Occur.Must, q) for q in (query, *filters)]
    return tantivy.Query.boolean_query(must)


WeightedTerm = tuple[str, str, float]  # (field, term, boost)


def weighted_terms(profile: QueryProfile, boosts: FieldBoosts) -> list[WeightedTerm]:
    """Every term of the query in every field it is looked up in, with the field's boost."""
    fields = boosts.text_fields()
    out = [(name, t, boost) for t in profile.terms for name, boost in fields.items()]
    out += [(IDENT_FIELD, t, boosts.ident) for t in profile.ident]
    out += [(CJK_FIELD, t, boosts.cjk) for t in profile.cjk]
    return out


def entry_clauses(
    version: LoadedVersion, entry: str, weighted: list[WeightedTerm], schema: tantivy.Schema
) -> list[tuple[tantivy.Occur, tantivy.Query]]:
    """The entry's term clauses, each boosted by the entry's IDF of the term over the one
    Tantivy computes from the whole index: Tantivy's BM25 of a term is its IDF times a
    term-frequency factor, so the boost makes it the entry's IDF. A term no chunk of the
    entry holds is left out. (The length normalisation stays the index's: an average
    field length per entry is not to be had from Tantivy.)"""
    derived, searcher = version.derived, version.searcher
    counts = derived.entry_counts(frozenset([entry]))
    indexed = derived.indexed_total()
    out = []
    for field, term, boost in weighted:
        holding = counts.holding(field, term)
        if holding == 0:
            continue
        ratio = bm25_idf(counts.total, holding) / bm25_idf(indexed, searcher.doc_freq(field, term))
        q = tantivy.Query.term_query(schema, field, term, index_option="freq")
        out.append(_should(q, boost * ratio))
    return out


def bm25_idf(chunks: int, holding: int) -> float:
    """BM25's IDF, as Tantivy computes it."""
    return math.log1p((chunks - holding + 0.5) / (holding + 0.5))


def searched_keys(version: LoadedVersion, scope: Scope) -> list[str]:
    """The entries a scope searches (every entry of the version when it names none)."""
    return sorted(scope.entries or version.manifest.sources)


def _within_entry(
    version: LoadedVersion, entry: str, query: tantivy.Query
) -> tuple[tantivy.Occur, tantivy.Query]:
    """`query` on the entry's chunks alone; the entry's filter adds nothing to a score. An
    entry that holds every chunk of the index needs no filter."""
    if version.derived.entry_counts(frozenset([entry])).total == version.searcher.num_docs:
        return tantivy.Occur.Should, query
    only = tantivy.Query.const_score_query(entries_query(frozenset([entry])), 0.0)
    both = [(tantivy.Occur.Must, only), (tantivy.Occur.Must, query)]
    return tantivy.Occur.Should, tantivy.Query.boolean_query(both)


def _should(query: tantivy.Query, boost: float) -> tuple[tantivy.Occur, tantivy.Query]:
    return tantivy.Occur.Should, tantivy.Query.boost_query(query, boost)


def filter_queries(scope: Scope) -> list[tantivy.Query]:
    schema = text_schema()
    out = []
    if scope.pages is not None:
        out.append(tantivy.Query.term_set_query(schema, "doc_id", sorted(scope.pages)))
    if scope.entries:
        out.append(entries_query(scope.entries))
    if scope.path_prefix:
        pattern = _regex_literal(scope.path_prefix) + ".*"
        out.append(tantivy.Query.regex_query(schema, "path", pattern))
    return out


def terms_containing(version: LoadedVersion, literals: Sequence[str], limit: int) -> list[str]:
    """The identifier terms of the index that contain a literal of the query (`_generic`
    inside `visit_generic_args`, `per-app-deep-dive` inside `dive](#per-app-deep-dive`), at
    most `limit` per literal: a scan of the term dictionary, kept as one string per version,
    so nothing is added to the index (adr/0022)."""
    if not literals:
        return []
    vocabulary = version.derived.identifier_vocabulary()
    found: dict[str, None] = {}
    for literal in literals:
        at, count = vocabulary.find(literal), 0
        while at != -1 and count < limit:
            start, end = vocabulary.rfind("\n", 0, at) + 1, vocabulary.index("\n", at)
            found[vocabulary[start:end]] = None
            at, count = vocabulary.find(literal, end), count + 1
    return list(found)


_REGEX_META = set("\\.+*?()|[]{}^$#&-~")


def _regex_literal(text: str) -> str:
    return "".join("\\" + ch if ch in _REGEX_META else ch for ch in text)
