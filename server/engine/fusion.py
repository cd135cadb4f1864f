"""Fusion: the BM25 and dense scores of every candidate become one score
(docs/retrieval.md, "Fusion"; adr/0026).

- adaptive (the default): reciprocal ranks over the union, the dense list weighing more
  when its best cosine is high;
- weighted: BM25 over the best BM25, plus the cosine, leaning lexical for lexical queries;
- rrf: reciprocal rank fusion with equal weights, the baseline every change is measured
  against; bm25, dense: one retriever alone.

Measured and left off (settings.py): the BM25 ranks weighed by BM25's own evidence on the
query (`lexical_trust`), and prose fused by the weighted sum of both lists' scores, BM25's
over its best or both rescaled min to max (`prose_fusion`, `prose_min_max`).

The adaptive and weighted fusions add the query/section-heading overlap (prose and short
queries), a bonus when the chunk's raw text holds the query's literals, and one more when
the chunk is where a literal is defined: its own heading names it, or a line of it opens
with it as a definition-list term, a table row's first cell or a list item's key.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

from .confidence import ChunkCounts, lexical_coverage
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
        fuse_adaptive(ctx, candidates, prose)
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


def fuse_adaptive(ctx: QueryContext, candidates: list[Candidate], prose: bool) -> None:
    """The adaptive fusion's ranks, or on a request in prose `prose_fusion`'s: RRF over the
    two lists' ranks, or the weighted sum of their normalised scores (CombSUM); the BM25
    ranks weighed by BM25's own evidence (`lexical_trust`)."""
    settings = ctx.settings
    lexical = lexical_weigher(ctx, candidates)
    prose_fusion = Fusion(settings.prose_fusion) if prose else Fusion.ADAPTIVE
    if prose_fusion is Fusion.RRF:
        rrf(candidates, settings.prose_rrf_k, lexical)
    elif prose_fusion is Fusion.WEIGHTED:
        combine = min_max_sum if settings.prose_min_max else weighted
        combine(candidates, settings.prose_weights)
    else:
        adaptive(candidates, settings.adaptive_k, settings.dense_trust, lexical)


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


LexicalWeigher = Callable[[Candidate], float]  # a candidate's BM25 rank, weighed


def _equal(c: Candidate) -> float:
    return 1.0


def rrf(candidates: list[Candidate], k: int, lexical: LexicalWeigher = _equal) -> None:
    """Reciprocal rank fusion, equal weights (the baseline every change is measured
    against), or each BM25 rank weighing `lexical(candidate)`."""
    for c in candidates:
        c.score = (lexical(c) / (k + c.bm25_rank) if c.bm25_rank else 0.0) + (
            1.0 / (k + c.dense_rank) if c.dense_rank else 0.0
        )


def adaptive(
    candidates: list[Candidate], k: int, trust: DenseTrust, lexical: LexicalWeigher = _equal
) -> None:
    """Reciprocal ranks over the union (the BM25 list's ranks, dense ranks by every
    candidate's exact cosine), the dense side weighted by how close its best match is and
    each BM25 rank by `lexical`; scaled so that first in both lists scores 1.0."""
    if not candidates:
        return
    dense_weight = trust.weight(max(c.dense for c in candidates))
    first = min((c for c in candidates if c.bm25_rank), key=lambda c: c.bm25_rank, default=None)
    scale = (k + 1) / ((lexical(first) if first else 1.0) + dense_weight)
    for rank, c in enumerate(sorted(candidates, key=lambda c: -c.dense), 1):
        bm25 = lexical(c) / (k + c.bm25_rank) if c.bm25_rank else 0.0
        c.score = scale * (bm25 + dense_weight / (k + rank))


def lexical_weigher(ctx: QueryContext, candidates: list[Candidate]) -> LexicalWeigher:
    """The BM25 ranks' weight from BM25's own evidence (`ctx.settings.lexical_trust`): the
    share of the query its first hit holds (or, `each_chunk`, each chunk), and how far its
    first score stands above its tenth (a flat list says little: many chunks match the
    query's words alike)."""
    trust = ctx.settings.lexical_trust
    if not trust.weighs:
        return _equal
    listed = sorted((c for c in candidates if c.bm25_rank), key=lambda c: c.bm25_rank)
    if not listed or listed[0].bm25 <= 0:
        return _equal
    first, weight = listed[0], 1.0
    if trust.spread > 0:
        tenth = listed[9].bm25 if len(listed) >= 10 else 0.0
        weight *= min(1.0, (1.0 - tenth / first.bm25) / trust.spread)
    if trust.coverage <= 0:
        return lambda c: weight
    counts = ChunkCounts(ctx.version, ctx.scope.visible)

    def covered(c: Candidate) -> float:
        return min(1.0, lexical_coverage(counts, ctx.profile, c) / trust.coverage)

    if trust.each_chunk:
        return lambda c: weight * covered(c)
    weight *= covered(first)
    return lambda c: weight


def weighted(candidates: list[Candidate], weights: FusionWeights) -> None:
    """Score-normalised fusion: BM25 divided by the best BM25, plus raw cosine."""
    top = max((c.bm25 for c in candidates), default=0.0)
    for c in candidates:
        lexical = c.bm25 / top if top > 0 else 0.0
        c.score = weights.lexical * lexical + weights.dense * c.dense


def min_max_sum(candidates: list[Candidate], weights: FusionWeights) -> None:
    """CombSUM of the two lists' scores, each rescaled to [0, 1] over the candidates: BM25
    from the last of its list to its first (0 outside it), the cosine from the lowest of the
    union to the best."""
    bm25 = _unit_scale([c.bm25 for c in candidates if c.bm25_rank])
    dense = _unit_scale([c.dense for c in candidates])
    for c in candidates:
        lexical = bm25(c.bm25) if c.bm25_rank else 0.0
        c.score = weights.lexical * lexical + weights.dense * dense(c.dense)


def _unit_scale(values: list[float]) -> Callable[[float], float]:
    """The map of `values` onto [0, 1], lowest to highest (all alike: all 1)."""
    low, high = min(values, default=0.0), max(values, default=0.0)
    if high <= low:
        return lambda value: 1.0
    return lambda value: (value - low) / (high - low)


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
