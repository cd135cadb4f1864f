"""What a query is, once analysed: its terms as the index analysed the documents, its
code-like tokens and literals, and whether it leans lexical (docs/retrieval.md, "Analysis");
and the query being answered, as every stage of a search receives it (`QueryContext`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from docdex.index_format.text import TextAnalysis, identifier_terms, text_analysis

from .loaded import LoadedVersion
from .scope import Scope
from .settings import EngineSettings

if TYPE_CHECKING:
    from docdex.model.protocol import TextEmbedder


@dataclass(frozen=True)
class QueryProfile:
    text: str
    terms: list[str]  # analysed (en_stem) terms, each once
    ident: list[str]  # identifier_terms(text)
    identifier: bool  # some token looks like code, a path, a flag, a number with letters
    literals: list[str]  # those identifier-like tokens, lower-cased, edge punctuation removed
    lexical: bool  # identifier-like or short: lean on BM25
    question: bool  # asked as a question: ends with "?" or opens with a question word
    code: list[str] = field(default_factory=list)  # the code-like tokens as typed
    cjk: list[str] = field(default_factory=list)  # character pairs of CJK runs, each once
    analysis: TextAnalysis = field(default_factory=text_analysis)  # the index's (text.py)


@dataclass(frozen=True)
class QueryContext:
    """One query being answered: what every stage of a search reads, passed down as one
    value."""

    version: LoadedVersion
    settings: EngineSettings
    embedder: TextEmbedder
    profile: QueryProfile
    scope: Scope


# Code-like tokens: letters and digits mixed, camelCase, snake_case, dotted/path-like, flags
# and sigils, and fragments of identifiers (`_generic`, `binders_`). A hyphen between letters
# (click-to-run) or an acronym (MSP, URLs) alone is prose: such questions keep the prose
# weights.
_IDENTIFIER_SHAPE = re.compile(
    r"[A-Za-z][0-9]|[0-9][A-Za-z]|[a-z][A-Z]|\w[_./\\:@=]+\w|^[-/$@#]{1,2}\w|^_+[^\W_]|[^\W_]_+$"
)
SHORT_QUERY_TERMS = 2
_EDGE = "\"'`()[]{}<>,;!?*|“”‘’«»."
MIN_LITERAL_CHARS = 3
QUESTION_WORDS = frozenset(
    ("how", "what", "why", "when", "where", "which", "who", "whom", "whose")
    + ("can", "could", "do", "does", "did", "is", "are", "was", "were")
    + ("should", "would", "will", "shall", "may")
)


def profile_query(text: str, analysis: TextAnalysis | None = None) -> QueryProfile:
    analysis = analysis or text_analysis()
    terms = list(dict.fromkeys(analysis.terms(text)))
    ident = identifier_terms(text)
    tokens = text.split()
    code = [t for t in tokens if _IDENTIFIER_SHAPE.search(t)]
    literals = literal_tokens(tokens, code)
    return QueryProfile(
        text=text,
        terms=terms,
        ident=ident,
        identifier=bool(code),
        literals=literals,
        code=code,
        lexical=bool(code) or len(tokens) <= SHORT_QUERY_TERMS,
        question=is_question(tokens),
        cjk=analysis.cjk_query_terms(text),
        analysis=analysis,
    )


def is_question(tokens: list[str]) -> bool:
    """Whether the query asks a question, in English: it ends with "?" or opens with a
    question word ("how", "why", "can", ...)."""
    if not tokens:
        return False
    return tokens[-1].endswith("?") or tokens[0].lower().strip(_EDGE) in QUESTION_WORDS


def literal_tokens(tokens: list[str], code: list[str]) -> list[str]:
    """What a chunk's raw text must contain as typed (lower-cased, edge punctuation
    removed): the code-like tokens, or the one token of a one-token query (`per-app-deep-dive`,
    `figcaption`: a literal that lives inside link targets and tags)."""
    picked = code or (tokens if len(tokens) == 1 else [])
    return [x for x in (t.strip(_EDGE).lower() for t in picked) if len(x) >= MIN_LITERAL_CHARS]
