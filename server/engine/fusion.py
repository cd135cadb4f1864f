"""Fusion: the BM25 and dense scores of every candidate become one score
(docs/retrieval.md, "Fusion"; adr/0026).

- adaptive (the default): reciprocal ranks over the union, the dense list weighing more
  when its best cosine is high;
- weighted: BM25 over the best BM25, plus the cosine, leaning lexical for lexical queries;
- rrf: reciprocal rank fusion with equal weights, the baseline every change is measured
  against; bm25, dense: one retriever alone.

The adaptive and weighted fusions add the query/section-heading overlap (prose and short
queries), a bonus when the chunk's raw text holds the query's literals, and one more when
the chunk is where a literal is defined: its own heading names it, or a line of it opens
with it as a definition-list term, a table row's first cell or a list item's key.
"""

from __future__ import annotations

import re
from functools import lru_cache

from .query import QueryContext, QueryProfile
from .retrieval import Candidate
from .settings import DenseTrust, EngineSettings, Fusion, FusionWeights


def fuse(ctx: QueryContext, candidates: list[Candidate]) -> None:
    """Set every candidate's `score` as `ctx.settings.fusion` says (the caller sorts)."""
    settings, profile = ctx.settings, ctx.profile
    fusion = Fusion(settings.fusion)  # a plain string of a Fusion value works too
    if fusion is Fusion.RRF:
        rrf(candidates, settings.rrf_k)
        return
    if fusion is Fusion.BM25 or fusion is Fusion.DENSE:
        for c in candidates:
            c.score = c.bm25 if fusion is Fusion.BM25 else c.dense
        return
    prose = False
    if fusion is Fusion.ADAPTIVE:
        prose = is_prose(profile, settings)
        if prose and Fusion(settings.prose_fusion) is Fusion.RRF:
            rrf(candidates, settings.prose_rrf_k)
        else:
            adaptive(candidates, settings.adaptive_k, settings.dense_trust)
        heading_weight = settings.adaptive_heading_weight
    else:
        lexical = profile.lexical
        weighted(candidates, settings.lexical_weights if lexical else settings.prose_weights)
        heading_weight = settings.heading_weight
    if prose:
        heading_weight = settings.prose_heading_weight
    if profile.terms and not profile.identifier and heading_weight:
        for c in candidates:
            c.score += heading_weight * heading_overlap(ctx, c)
    if profile.literals:
        add_literal_bonuses(candidates, profile.literals, settings, prose)


def add_literal_bonuses(
    candidates: list[Candidate], literals: list[str], settings: EngineSettings, prose: bool
) -> None:
    """The literal bonus to the chunks whose raw text holds the query's literals (on prose
    only with `prose_literals`), and the definition bonus (on prose its own, smaller: the
    prose fusion's scores are reciprocal ranks) to those of them that define one."""
    literal = settings.literal_bonus if settings.prose_literals or not prose else 0.0
    definition = settings.prose_definition_bonus if prose else settings.definition_bonus
    if not literal and not definition:
        return
    for c in candidates:
        if contains_literals(c, literals):
            c.score += literal
            if definition and defines_literal(c, literals):
                c.score += definition


def is_prose(profile: QueryProfile, settings: EngineSettings) -> bool:
    """Whether the adaptive fusion takes the query as a request in prose: it has at least
    `prose_words` words, or (`prose_questions`) it asks a question in words alone."""
    if 0 < settings.prose_words <= len(profile.text.split()):
        return True
    return settings.prose_questions and profile.question and not profile.identifier


def rrf(candidates: list[Candidate], k: int) -> None:
    """Reciprocal rank fusion, equal weights; the baseline every change is measured against."""
    for c in candidates:
        c.score = (1.0 / (k + c.bm25_rank) if c.bm25_rank else 0.0) + (
            1.0 / (k + c.dense_rank) if c.dense_rank else 0.0
        )


def adaptive(candidates: list[Candidate], k: int, trust: DenseTrust) -> None:
    """Reciprocal ranks over the union (the BM25 list's ranks, dense ranks by every
    candidate's exact cosine), the dense side weighted by how close its best match is;
    scaled so that first in both lists scores 1.0."""
    if not candidates:
        return
    dense_weight = trust.weight(max(c.dense for c in candidates))
    scale = (k + 1) / (1.0 + dense_weight)
    for rank, c in enumerate(sorted(candidates, key=lambda c: -c.dense), 1):
        lexical = 1.0 / (k + c.bm25_rank) if c.bm25_rank else 0.0
        c.score = scale * (lexical + dense_weight / (k + rank))


def weighted(candidates: list[Candidate], weights: FusionWeights) -> None:
    """Score-normalised fusion: BM25 divided by the best BM25, plus raw cosine."""
    top = max((c.bm25 for c in candidates), default=0.0)
    for c in candidates:
        lexical = c.bm25 / top if top > 0 else 0.0
        c.score = weights.lexical * lexical + weights.dense * c.dense


def contains_literals(c: Candidate, literals: list[str]) -> bool:
    """Whether the chunk's raw markdown contains every identifier of the query as typed
    (case-insensitive): the identifier field splits `self.typeck_results()` into parts, the
    raw text does not."""
    text = c.chunk.text.lower()
    return all(lit in text for lit in literals)


# A line that defines a term: the term first, after a list marker, a table's first `|`, a
# `<dt>` or a heading's `#`s, in code or bold, then nothing, or a separator (`:`, `|`,
# `</dt>`, an opening parenthesis, `=`, a dash between spaces).
_DEFINITION_OPENING = (
    r"^[ \t]*(?:[-*+][ \t]+|\|[ \t]*|<dt[^>]*>[ \t]*|#{1,6}[ \t]+)?(?:\*\*|__|`|<code>)*"
)
_DEFINITION_CLOSING = r"(?:\*\*|__|`|</code>|\(\))*[ \t]*(?:$|:|\||</dt>|\(|=|[ \t][-–—][ \t])"


def defines_literal(c: Candidate, literals: list[str]) -> bool:
    """Whether the chunk is where a literal of the query is defined: its own (deepest)
    heading names it as a word, or a line of its text opens with it as a term."""
    heading = c.chunk.headings[-1] if c.chunk.headings else ""
    return any(
        _named(literal).search(heading) or _definition(literal).search(c.chunk.text)
        for literal in literals
    )


@lru_cache(maxsize=1024)
def _named(literal: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w.\-/]){re.escape(literal)}(?![\w\-/])", re.IGNORECASE)


@lru_cache(maxsize=1024)
def _definition(literal: str) -> re.Pattern[str]:
    pattern = _DEFINITION_OPENING + re.escape(literal) + _DEFINITION_CLOSING
    return re.compile(pattern, re.IGNORECASE | re.MULTILINE)


def heading_overlap(ctx: QueryContext, c: Candidate) -> float:
    """How well the chunk's own (deepest) heading and the query name each other: the share
    of query terms in the heading times the share of heading terms in the query (1.0 when
    the query is the section's title)."""
    heading = set(section_terms(ctx, c))
    if not heading:
        return 0.0
    query = set(ctx.profile.terms)
    shared = len(query & heading)
    return shared * shared / (len(query) * len(heading))


def section_terms(ctx: QueryContext, c: Candidate) -> list[str]:
    """The terms of the chunk's deepest heading, kept for the version's later queries."""
    derived = ctx.version.derived

    def analysed() -> list[str]:
        headings = c.chunk.headings
        return derived.heading_terms_of(headings[-1]) if headings else []

    return derived.section_terms.get(c.key, analysed)
