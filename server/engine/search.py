"""Hybrid search over one snapshot: BM25 (Tantivy) + dense (exact or HNSW), fused, reranked.

    BM25 top-100 ─┐
                  ├─ union ─ exact dense + lexical scores for every candidate ─ fusion
    dense top-100 ┘        ─ rerank of the head ─ optional one-chunk-per-page ─ top n

BM25 runs on a helper thread while the query is embedded, and the segments' graphs beside
each other (server/engine/parallel.py, adr/0029).
Filters (source, path prefix) are part of both retrievals, never applied to a finished list.
User text is never parsed as a query language: it is analysed into terms the way the index
analysed the documents, and queries are built from those terms with Tantivy's query classes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from functools import partial

import msgspec
import numpy as np
import tantivy

from docdex.errors import InvalidArgument
from docdex.index_format.text import CJK_FIELD, IDENT_FIELD, text_schema
from docdex.model.late_interaction import QueryEncoding, encode_query

from . import confidence, parallel
from .candidates import Candidate
from .hits import TITLE_CHARS, Hit, SearchResult, breadcrumb, clip, clip_headings, resource_uri
from .loaded import LoadedSegment, Snapshot
from .query import QueryProfile, analysis_of, profile_query
from .rerank import Reranker, resolve_reranker
from .scope import Entries, Scope, as_entries, check_source, tagged_pages

MAX_QUERY_CHARS = 2000
MAX_RESULTS = 100
RETRIEVE_K = 100  # chunks from each retriever (dense asks for 2x as many windows)
RRF_K = 60
EXACT_DENSE_MAX_ROWS = 4096  # at or below this many allowed rows, dense search is exact numpy

# BM25 field boosts (title = page title, headings = breadcrumb below it, body = clean text)
# and the identifier field's boost, the largest single gain on identifiers (adr/0004).
FIELD_BOOSTS = {"title": 1.5, "headings": 2.0, "body": 1.0}
IDENT_BOOST = 4.0
CJK_BOOST = 1.0  # the character pairs of Chinese, Japanese and Korean runs (adr/0022)
SUBSTRING_BOOST = 4.0  # an identifier term containing a literal of the query (adr/0022)
MAX_CONTAINING = 200  # such terms per literal


class DenseTrust(msgspec.Struct, frozen=True):
    """How much the adaptive fusion weighs the dense list: 1, plus `slope` times how far
    its best cosine stands above `start`."""

    start: float
    slope: float

    def weight(self, best_cosine: float) -> float:
        return 1.0 + self.slope * max(0.0, best_cosine - self.start)


class FusionWeights(msgspec.Struct, frozen=True):
    """Weighted score fusion: lexical * bm25/max(bm25) + dense * cosine."""

    lexical: float
    dense: float


# The measured choice (docs/retrieval.md): weights of the weighted fusion for prose and for
# lexical (identifier-like or short) queries, and what is added on top of it.
PROSE_WEIGHTS = FusionWeights(lexical=0.5, dense=1.0)
LEXICAL_WEIGHTS = FusionWeights(lexical=1.0, dense=0.5)
HEADING_WEIGHT = 0.3  # weight of the query/section-heading overlap
LITERAL_BONUS = 1.0  # when the chunk's raw text contains the query's literals (adr/0022)
RERANK_DEPTH = 30
# rrf: the baseline every change is measured against; bm25 and dense: one retriever alone
FUSIONS = ("adaptive", "weighted", "rrf", "bm25", "dense")
# The adaptive fusion (docs/retrieval.md, "Fusion"): reciprocal ranks with a small rank
# constant, the dense list weighing more when its best cosine is high (a model on its own
# ground: msmarco's best cosines are .78 on average, the technical corpora's .54-.63).
ADAPTIVE_K = 10
DENSE_TRUST = DenseTrust(start=0.70, slope=20.0)  # dense weight 3 at a best cosine of .80
ADAPTIVE_HEADING_WEIGHT = 0.5
SECTION_TERMS_KEPT = 65_536  # chunks (and heading texts) whose terms a snapshot keeps


# --- entry point ---------------------------------------------------------------------------


def search(
    snapshot: Snapshot,
    embedder,
    query: str,
    num_results: int = 10,
    source: str | Entries = "",
    path_prefix: str = "",
    reranker: Reranker | str | None = "default",
    one_per_page: bool = False,
    fusion: str = "adaptive",
    tags: Sequence[str] = (),
) -> SearchResult:
    started = time.perf_counter()
    source = as_entries(source)
    profile = validate(snapshot, query, num_results, source, path_prefix)
    reranker = resolve_reranker(reranker, snapshot)
    scope = Scope(source, path_prefix, tagged_pages(snapshot, tags))
    needs_tokens = bool(reranker and reranker.needs_tokens)
    candidates, encoding = gather(snapshot, embedder, profile, scope, needs_tokens)
    fuse(snapshot, candidates, profile, fusion)
    candidates.sort(key=lambda c: -c.score)
    if reranker is not None and candidates:
        head = candidates[:RERANK_DEPTH]
        reranker.rerank(snapshot, embedder, profile.text, head, encoding)
        candidates[: len(head)] = sorted(head, key=lambda c: -c.score)
    if one_per_page:
        candidates = one_chunk_per_page(snapshot, candidates)
    top = candidates[:num_results]
    return SearchResult(
        results=[to_hit(snapshot, c) for c in top],
        index_version=snapshot.version,
        took_ms=round((time.perf_counter() - started) * 1000, 3),
        low_confidence=confidence.is_low_confidence(
            snapshot, profile, candidates, lambda text: best_cosine(snapshot, embedder, text, scope)
        ),
    )


def validate(
    snapshot: Snapshot, query: str, num_results: int, source: Entries, path_prefix: str
) -> QueryProfile:
    if not isinstance(query, str) or not query.strip():
        raise InvalidArgument("query is empty: send the words or identifier to look for")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidArgument(
            f"query is {len(query)} characters long; the limit is {MAX_QUERY_CHARS}"
        )
    if not isinstance(num_results, int) or not 1 <= num_results <= MAX_RESULTS:
        raise InvalidArgument(
            f"num_results must be between 1 and {MAX_RESULTS}, got {num_results!r}"
        )
    for key in source:
        check_source(snapshot, key)
    if not isinstance(path_prefix, str) or "\n" in path_prefix or len(path_prefix) > 1000:
        raise InvalidArgument("path_prefix must be a single-line repository path prefix")
    return profile_query(query, analysis_of(snapshot))


# --- retrieval ------------------------------------------------------------------------------


def gather(
    snapshot: Snapshot, embedder, profile: QueryProfile, scope: Scope, with_tokens: bool = False
) -> tuple[list[Candidate], QueryEncoding]:
    """The query's candidates before fusion, and its encoding: BM25 runs on a helper thread
    while the query is embedded."""
    with parallel.start([partial(bm25_top, snapshot, profile, scope)]) as lexical:
        encoding = encode_query(embedder, profile.text, with_tokens)
        return retrieve(snapshot, encoding.vector, lexical, scope), encoding


def retrieve(
    snapshot: Snapshot, qvec: np.ndarray, lexical: parallel.Batch, scope: Scope
) -> list[Candidate]:
    """BM25 (`lexical`: its search, begun while the query was embedded) and dense top-k under
    the filters, merged; every candidate gets both scores. Each segment's graph search runs
    beside the others and beside BM25 (server/engine/parallel.py)."""
    dense = dense_top(snapshot, qvec, scope)
    [bm25] = lexical.join()
    found: dict[tuple[int, int], Candidate] = {}
    for rank, (key, score) in enumerate(bm25, 1):
        found[key] = Candidate(key[0], key[1], bm25=score, bm25_rank=rank)
    for rank, (key, score) in enumerate(dense, 1):
        cand = found.setdefault(key, Candidate(key[0], key[1]))
        cand.dense, cand.dense_rank = score, rank
    lexical_only: dict[int, list[Candidate]] = {}
    for cand in found.values():
        if not cand.dense_rank:
            lexical_only.setdefault(cand.segment, []).append(cand)
    for s, cands in lexical_only.items():
        cosines = chunk_cosines(snapshot.segments[s], [c.index for c in cands], qvec)
        for cand, cosine in zip(cands, cosines.tolist(), strict=True):
            cand.dense = cosine
    return list(found.values())


def bm25_query(
    profile: QueryProfile, scope: Scope, containing: Sequence[str] = ()
) -> tantivy.Query | None:
    """`containing`: identifier terms of the index that contain a literal of the query."""
    schema = profile.analysis.schema()

    def term(name: str, text: str) -> tantivy.Query:
        return tantivy.Query.term_query(schema, name, text, index_option="freq")

    should = [
        _should(term(name, t), boost) for t in profile.terms for name, boost in FIELD_BOOSTS.items()
    ]
    should += [_should(term(IDENT_FIELD, t), IDENT_BOOST) for t in profile.ident]
    if containing:
        q = tantivy.Query.term_set_query(schema, IDENT_FIELD, list(containing))
        should.append(_should(q, SUBSTRING_BOOST))
    should += [_should(term(CJK_FIELD, t), CJK_BOOST) for t in profile.cjk]
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
    source, path_prefix = scope.entries, scope.path_prefix
    if scope.pages is not None:
        out.append(tantivy.Query.term_set_query(schema, "doc_id", sorted(scope.pages)))
    if source:
        terms = [
            (
                tantivy.Occur.Should,
                tantivy.Query.term_query(schema, "source", key, index_option="basic"),
            )
            for key in sorted(source)
        ]
        out.append(tantivy.Query.boolean_query(terms))
    if path_prefix:
        out.append(tantivy.Query.regex_query(schema, "path", _regex_literal(path_prefix) + ".*"))
    return out


def terms_containing(snapshot: Snapshot, literals: Sequence[str]) -> list[str]:
    """The identifier terms of the index that contain a literal of the query (`_generic`
    inside `visit_generic_args`, `per-app-deep-dive` inside `dive](#per-app-deep-dive`), at
    most MAX_CONTAINING per literal: a scan of the term dictionary, kept as one string per
    snapshot, so nothing is added to the index (adr/0022)."""
    if not literals:
        return []
    vocabulary = identifier_vocabulary(snapshot)
    found: dict[str, None] = {}
    for literal in literals:
        at, count = vocabulary.find(literal), 0
        while at != -1 and count < MAX_CONTAINING:
            start, end = vocabulary.rfind("\n", 0, at) + 1, vocabulary.index("\n", at)
            found[vocabulary[start:end]] = None
            at, count = vocabulary.find(literal, end), count + 1
    return list(found)


def identifier_vocabulary(snapshot: Snapshot) -> str:
    """Every term of the `ident` field, one a line, made at the snapshot's first literal."""
    vocabulary = snapshot.cache.get("ident_vocabulary")
    if vocabulary is None:
        terms = snapshot.searcher.terms_with_prefix(IDENT_FIELD, "")
        vocabulary = "\n".join(["", *(term for term, _ in terms), ""])
        snapshot.cache["ident_vocabulary"] = vocabulary
    return vocabulary


_REGEX_META = set("\\.+*?()|[]{}^$#&-~")


def _regex_literal(text: str) -> str:
    return "".join("\\" + ch if ch in _REGEX_META else ch for ch in text)


def bm25_top(
    snapshot: Snapshot, profile: QueryProfile, scope: Scope
) -> list[tuple[tuple[int, int], float]]:
    query = bm25_query(profile, scope, terms_containing(snapshot, profile.literals))
    if query is None:
        return []
    searcher = snapshot.searcher
    out = []
    for score, address in searcher.search(query, RETRIEVE_K, count=False).hits:
        chunk_id = searcher.doc(address)["chunk_id"][0]
        key = snapshot.locate(chunk_id)
        if key is not None:
            out.append((key, float(score)))
    return out


def dense_top(
    snapshot: Snapshot, qvec: np.ndarray, scope: Scope
) -> list[tuple[tuple[int, int], float]]:
    """Top chunks by their best window's cosine, over every segment, under the filters."""
    return dense_ranking(snapshot, parallel.run_shared(segment_searches(snapshot, qvec, scope)))


def segment_searches(
    snapshot: Snapshot, qvec: np.ndarray, scope: Scope
) -> list[Callable[[], tuple[np.ndarray, np.ndarray]]]:
    """Per segment, its search for the nearest allowed windows: (rows, cosines)."""
    allowed = chunk_filters(snapshot, scope)
    return [
        partial(_segment_knn, seg, qvec, allowed[s] if allowed else None)
        for s, seg in enumerate(snapshot.segments)
    ]


def dense_ranking(
    snapshot: Snapshot, windows: Sequence[tuple[np.ndarray, np.ndarray]]
) -> list[tuple[tuple[int, int], float]]:
    """Chunks ranked by their best window's cosine, from each segment's nearest windows."""
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # segment, chunk, cosine
    for s, (seg, (rows, sims)) in enumerate(zip(snapshot.segments, windows, strict=True)):
        order = np.argsort(-sims, kind="stable")
        owners, sims = seg.segment.owners[rows[order]], sims[order]
        chunks, first = np.unique(owners, return_index=True)  # first = the chunk's best window
        parts.append((np.full(len(chunks), s), chunks, sims[first]))
    if not parts:
        return []
    segments, chunks, sims = (np.concatenate(column) for column in zip(*parts, strict=True))
    top = np.argsort(-sims, kind="stable")[:RETRIEVE_K]
    keys = zip(segments[top].tolist(), chunks[top].tolist(), strict=True)
    return list(zip(keys, sims[top].tolist(), strict=True))


def chunk_filters(snapshot: Snapshot, scope: Scope) -> list[np.ndarray] | None:
    """Per segment, (chunks,) bool of the chunks passing the filters; None: no filter. Built
    from the page tables, so no chunk record is decoded."""
    if scope.everything:
        return None
    picked: list[list[int]] = [[] for _ in snapshot.segments]
    for page in snapshot.pages.values():
        if scope.admits(page):
            for ref in page.chunks:
                picked[snapshot.segment_positions[ref.segment]].append(ref.index)
    masks = [np.zeros(len(seg.chunks), dtype=bool) for seg in snapshot.segments]
    for mask, indexes in zip(masks, picked, strict=True):
        mask[indexes] = True
    return masks


def _segment_knn(
    seg: LoadedSegment, qvec: np.ndarray, allowed_chunks: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cosines) of the nearest allowed live windows of one segment: exact for small
    segments, HNSW (dead rows marked deleted, filters as hnswlib's `filter`) otherwise."""
    allowed = seg.live_rows
    if allowed_chunks is not None:
        allowed = allowed & allowed_chunks[seg.segment.owners]
    count = seg.live_row_count if allowed_chunks is None else int(allowed.sum())
    if count == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    k = min(count, RETRIEVE_K * 2)
    if searched_exactly(seg):
        sims = seg.vectors32 @ qvec
        sims[~allowed] = -2.0
        top = np.argpartition(-sims, k - 1)[:k] if k < len(sims) else np.arange(len(sims))
        top = top[np.argsort(-sims[top])]
        return top, sims[top]
    # A graph shared with an older version also returns the rows that died since: ask for
    # as many more and drop them (a filter, built from the live rows, drops them itself).
    stale = 0 if allowed_chunks is not None else seg.stale_rows
    keep = None if allowed_chunks is None else allowed.__getitem__
    labels, distances = seg.graph.index.knn_query(qvec[None, :], k=k + stale, filter=keep)
    rows, cosines = labels[0].astype(np.int64), (1.0 - distances[0]).astype(np.float32)
    if stale:
        live = seg.live_rows[rows]
        rows, cosines = rows[live][:k], cosines[live][:k]
    return rows, cosines


def searched_exactly(seg: LoadedSegment) -> bool:
    """Small segments are searched with exact products over their float32 copy."""
    return len(seg.live_rows) <= EXACT_DENSE_MAX_ROWS


def chunk_cosines(seg: LoadedSegment, indexes: list[int], qvec: np.ndarray) -> np.ndarray:
    """Each chunk's best window cosine (0.0 for a chunk without windows), in one product."""
    chunks = np.asarray(indexes, dtype=np.int64)
    vectors, counts = seg.window_vectors_of(chunks, searched_exactly(seg))
    best = np.zeros(len(indexes), dtype=np.float32)
    has = counts > 0
    if has.any():
        sims = vectors @ qvec
        firsts = (np.cumsum(counts) - counts)[has]
        best[has] = np.maximum.reduceat(sims, firsts)
    return best


# --- fusion ---------------------------------------------------------------------------------


def fuse(
    snapshot: Snapshot,
    candidates: list[Candidate],
    profile: QueryProfile,
    fusion: str,
    trust: DenseTrust = DENSE_TRUST,
) -> None:
    if fusion not in FUSIONS:
        raise InvalidArgument(f"unknown fusion {fusion!r}; choose one of: {', '.join(FUSIONS)}")
    if fusion == "rrf":
        rrf(candidates)
        return
    if fusion in ("bm25", "dense"):
        for c in candidates:
            c.score = c.bm25 if fusion == "bm25" else c.dense
        return
    if fusion == "adaptive":
        adaptive(candidates, trust=trust)
        heading_weight = ADAPTIVE_HEADING_WEIGHT
    else:
        weighted(candidates, LEXICAL_WEIGHTS if profile.lexical else PROSE_WEIGHTS)
        heading_weight = HEADING_WEIGHT
    if profile.terms and not profile.identifier:
        for c in candidates:
            c.score += heading_weight * heading_overlap(snapshot, c, profile)
    if profile.literals:
        for c in candidates:
            if contains_literals(snapshot, c, profile.literals):
                c.score += LITERAL_BONUS


def rrf(candidates: list[Candidate], k: int = RRF_K) -> None:
    """Reciprocal rank fusion, equal weights; the baseline every change is measured against."""
    for c in candidates:
        c.score = (1.0 / (k + c.bm25_rank) if c.bm25_rank else 0.0) + (
            1.0 / (k + c.dense_rank) if c.dense_rank else 0.0
        )


def adaptive(
    candidates: list[Candidate], k: int = ADAPTIVE_K, trust: DenseTrust = DENSE_TRUST
) -> None:
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


def contains_literals(snapshot: Snapshot, c: Candidate, literals: list[str]) -> bool:
    """Whether the chunk's raw markdown contains every identifier of the query as typed
    (case-insensitive): the identifier field splits `self.typeck_results()` into parts, the
    raw text does not."""
    text = c.chunk(snapshot).text.lower()
    return all(lit in text for lit in literals)


def heading_overlap(snapshot: Snapshot, c: Candidate, profile: QueryProfile) -> float:
    """How well the chunk's own (deepest) heading and the query name each other: the share
    of query terms in the heading times the share of heading terms in the query (1.0 when
    the query is the section's title)."""
    heading = set(section_terms(snapshot, c))
    if not heading:
        return 0.0
    query = set(profile.terms)
    shared = len(query & heading)
    return shared * shared / (len(query) * len(heading))


def section_terms(snapshot: Snapshot, c: Candidate) -> list[str]:
    """The terms of the chunk's deepest heading, kept for the snapshot's later queries by
    chunk and by heading text (many sections share a heading: "Parameters", "-Path"): at
    most SECTION_TERMS_KEPT of each, so a long-lived version of a large corpus does not
    come to hold every chunk's."""
    by_chunk = snapshot.cache.setdefault("section_terms", {})
    key = (c.segment, c.index)
    terms = by_chunk.get(key)
    if terms is None:
        headings = c.chunk(snapshot).headings
        terms = _kept(by_chunk, key, heading_terms(snapshot, headings[-1]) if headings else [])
    return terms


def heading_terms(snapshot: Snapshot, heading: str) -> list[str]:
    by_text = snapshot.cache.setdefault("heading_terms", {})
    terms = by_text.get(heading)
    if terms is None:
        terms = _kept(by_text, heading, analysis_of(snapshot).terms(heading))
    return terms


def _kept(cache: dict, key: object, terms: list[str]) -> list[str]:
    if len(cache) >= SECTION_TERMS_KEPT:
        cache.clear()
    cache[key] = terms
    return terms


# --- after ranking --------------------------------------------------------------------------


def one_chunk_per_page(snapshot: Snapshot, candidates: list[Candidate]) -> list[Candidate]:
    seen: set[str] = set()
    out = []
    for c in candidates:
        doc_id = c.chunk(snapshot).doc_id
        if doc_id not in seen:
            seen.add(doc_id)
            out.append(c)
    return out


def best_cosine(snapshot: Snapshot, embedder, text: str, scope: Scope) -> float:
    """The best cosine of another text in the same scope (one more query embedding)."""
    top = dense_top(snapshot, embedder.embed_query(text), scope)
    return top[0][1] if top else 0.0


def to_hit(snapshot: Snapshot, c: Candidate) -> Hit:
    chunk = c.chunk(snapshot)
    page = snapshot.pages.get(chunk.doc_id)
    return Hit(
        doc_id=chunk.doc_id,
        chunk_id=chunk.chunk_id,
        source=chunk.source,
        path=chunk.path,
        uri=resource_uri(chunk.source, chunk.path),
        ref=snapshot.ref_of(chunk.source),
        title=clip(chunk.title, TITLE_CHARS),
        headings=clip_headings(chunk.headings),
        heading=breadcrumb(chunk.headings),
        text=chunk.text,
        score=round(float(c.score), 6),
        start_line=chunk.start_line,
        end_line=chunk.end_line,
        commit=page.commit if page else "",
        match=c.match,
        modified=page.modified if page else "",
    )
