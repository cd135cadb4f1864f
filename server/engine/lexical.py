"""BM25 over the version's Tantivy index, under the query's scope.

User text is never parsed as a query language: it is analysed into terms the way the index
analysed the documents (query.py), and the query is built from those terms with Tantivy's
query classes, so `foo:bar`, `"unclosed`, `(x` or `a AND` cannot raise. Filters (entries,
path prefix, tagged pages) are Must clauses of the same query, never applied afterwards.
"""

from __future__ import annotations

from collections.abc import Sequence

import tantivy

from docdex.index_format.text import CJK_FIELD, IDENT_FIELD, text_schema

from .loaded import LoadedVersion
from .query import QueryContext, QueryProfile
from .scope import Scope
from .settings import FieldBoosts

Scored = tuple[tuple[int, int], float]  # ((segment position, chunk index), score)


def bm25_top(ctx: QueryContext) -> list[Scored]:
    """The query's best `retrieve_k` chunks by BM25, under its scope."""
    settings = ctx.settings
    containing = terms_containing(ctx.version, ctx.profile.literals, settings.max_containing)
    query = bm25_query(ctx.profile, ctx.scope, settings.boosts, containing)
    if query is None:
        return []
    searcher = ctx.version.searcher
    out = []
    for score, address in searcher.search(query, settings.retrieve_k, count=False).hits:
        chunk_id = searcher.doc(address)["chunk_id"][0]
        key = ctx.version.locate(chunk_id)
        if key is not None:
            out.append((key, float(score)))
    return out


def bm25_query(
    profile: QueryProfile, scope: Scope, boosts: FieldBoosts, containing: Sequence[str] = ()
) -> tantivy.Query | None:
    """`containing`: identifier terms of the index that contain a literal of the query."""
    schema = profile.analysis.schema()

    def term(name: str, text: str) -> tantivy.Query:
        return tantivy.Query.term_query(schema, name, text, index_option="freq")

    fields = boosts.text_fields()
    should = [
        _should(term(name, t), boost) for t in profile.terms for name, boost in fields.items()
    ]
    should += [_should(term(IDENT_FIELD, t), boosts.ident) for t in profile.ident]
    if containing:
        q = tantivy.Query.term_set_query(schema, IDENT_FIELD, list(containing))
        should.append(_should(q, boosts.containing))
    should += [_should(term(CJK_FIELD, t), boosts.cjk) for t in profile.cjk]
    if not should:
        return None
    filters = filter_queries(scope)
    if not filters:  # the same hits and scores as a Must around it, found faster (benchmarks.md)
        return tantivy.Query.boolean_query(should)
    must = [(tantivy.Occur.Must, tantivy.Query.boolean_query(should))]
    must += [(tantivy.Occur.Must, f) for f in filters]
    return tantivy.Query.boolean_query(must)


def _should(query: tantivy.Query, boost: float) -> tuple[tantivy.Occur, tantivy.Query]:
    return tantivy.Occur.Should, tantivy.Query.boost_query(query, boost)


def filter_queries(scope: Scope) -> list[tantivy.Query]:
    schema = text_schema()
    out = []
    if scope.pages is not None:
        out.append(tantivy.Query.term_set_query(schema, "doc_id", sorted(scope.pages)))
    if scope.entries:
        terms = [
            (
                tantivy.Occur.Should,
                tantivy.Query.term_query(schema, "source", key, index_option="basic"),
            )
            for key in sorted(scope.entries)
        ]
        out.append(tantivy.Query.boolean_query(terms))
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
