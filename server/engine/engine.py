"""The search engine: one published index version, opened for searching.

    engine = Engine.open(data, embedder)          # the version CURRENT names
    result = engine.search("rotate the signing key", 5, engine.scope(source="docs"))
    engine.close()

A search runs, on the version it was opened on:

    query ─ validate ─ analyse ─┬─ BM25 top-k (lexical.py) ────┐
                                └─ dense top-k (dense.py) ─────┴─ union (retrieval.py)
          ─ fusion (fusion.py) ─ rerank of the head (rerank.py) ─ one chunk per page?
          ─ top n as hits (hits.py) ─ low_confidence (confidence.py)

Its tunables are one frozen `EngineSettings`; `with_settings` gives an engine over the same
loaded version with others (what `docdex eval --baselines` and the sweeps compare). The
server swaps engines as versions are published (server/versions.py); the CLI, `docdex eval`
and the benches open one each.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING

import msgspec

from docdex.errors import InvalidArgument
from docdex.index_format.layout import DataDir
from docdex.index_format.records import ChunkRecord, Manifest, ServedPage
from docdex.model.outage import Failure, failure_of

from .candidates import Candidate, by_score
from .confidence import is_low_confidence
from .dense import dense_top
from .fusion import fuse
from .hits import Hit, SearchResult, to_hit
from .lexical import bm25_top
from .loaded import LoadedVersion, check_model
from .query import QueryContext, profile_query
from .rerank import Reranker, RerankerError, resolve_reranker
from .retrieval import Retrieval, retrieve
from .scope import Scope, check_source, entry_doc_id, searched_entries, tagged_pages
from .settings import DEFAULT_SETTINGS, EngineSettings

if TYPE_CHECKING:
    from docdex.index_format.records import EmbedderInfo
    from docdex.model.protocol import TextEmbedder

ModelFor = Callable[["EmbedderInfo"], "TextEmbedder"]  # the model a version was built with

MAX_QUERY_CHARS = 2000
MAX_RESULTS = 100
MAX_PATH_PREFIX_CHARS = 1000
WARMUP_QUERY = "docdex warm-up query"


class SegmentStatus(msgspec.Struct, frozen=True):
    """One dense segment as the engine holds it (`Engine.segments`)."""

    id: str
    chunks: int
    live_chunks: int
    windows: int
    live_windows: int
    exact: bool  # searched with exact products over a float32 copy, never with its graph
    graph_loaded: bool
    graph_version: int | None  # the version that loaded its graph (an older one: shared)
    stale_rows: int  # rows dead here that a graph shared with an older version returns
    opened_by: int  # the version that read the segment's files (an older one: shared)


class DerivedState(msgspec.Struct, frozen=True):
    """What the version has derived from its data so far (`Engine.derived`): the identifier
    vocabulary literal queries scan, the token IDF of MaxSim, the heading terms kept."""

    identifier_vocabulary: bool
    token_idf: bool
    section_terms: int
    heading_terms: int


class StageTimes(msgspec.Struct, frozen=True):
    """Wall and CPU seconds of a query's stages, each run alone (`Engine.time_stages`)."""

    embed: tuple[float, float]
    bm25: tuple[float, float]
    dense: tuple[float, float]


class Engine:
    """Search over one published index version (see the module's docstring)."""

    def __init__(self, version: LoadedVersion, embedder: TextEmbedder, settings: EngineSettings):
        """Use `Engine.open`; this wraps a version already loaded."""
        self._version = version
        self._embedder = embedder
        self._settings = settings

    @classmethod
    def open(
        cls,
        data: DataDir,
        embedder: TextEmbedder | Future[TextEmbedder] | ModelFor,
        version: int | None = None,
        settings: EngineSettings = DEFAULT_SETTINGS,
        before: Engine | None = None,
    ) -> Engine:
        """Open `version` (None: the one CURRENT names), refusing one whose vectors another
        model made. `embedder` may still be loading: the version is read meanwhile.
        `before`: an engine still open, whose unchanged segments and pages this one shares
        (adr/0028)."""
        shared = before._version if before is not None else None
        loaded = LoadedVersion.load(data, version, settings, shared)
        try:
            if isinstance(embedder, Future):
                model = embedder.result()
            elif callable(embedder):  # chooses by the model the version was built with
                model = embedder(loaded.manifest.embedder)
            else:
                model = embedder
            check_model(loaded.manifest, model.info)
        except BaseException:
            loaded.close()
            raise
        return cls(loaded, model, settings)

    def with_settings(self, settings: EngineSettings) -> Engine:
        """An engine over the same loaded version with other tunables (those read when a
        version opens, such as `hnsw_ef`, stay as they were)."""
        return Engine(self._version, self._embedder, settings)

    # --- what it serves ------------------------------------------------------------------

    @property
    def settings(self) -> EngineSettings:
        return self._settings

    def _reranker(self) -> Reranker | None:
        """The reranker the settings name, on this version (None: no rerank)."""
        return resolve_reranker(
            self._settings.reranker, self._version, self._settings.rerank_endpoint
        )

    @property
    def version(self) -> int:
        return self._version.version

    @property
    def manifest(self) -> Manifest:
        return self._version.manifest

    @property
    def data(self) -> DataDir:
        return self._version.data

    @property
    def embedder_name(self) -> str:
        """The identity of the model the version's vectors were made with."""
        return self._version.manifest.embedder.id

    @property
    def sources(self) -> list[str]:
        """The manifest entries (a source, or "source@ref"), sorted."""
        return self._version.sources

    @property
    def pages(self) -> Mapping[str, ServedPage]:
        """doc_id -> page."""
        return self._version.pages

    @property
    def has_token_vectors(self) -> bool:
        return self._version.has_token_vectors

    def reranker_name(self) -> str:
        """The reranker searches use on this version: "none", "maxsim", "cross-encoder" or
        "endpoint" (RerankerError when the configured one cannot be loaded)."""
        reranker = self._reranker()
        return "none" if reranker is None else reranker.name

    def failing_models(self) -> dict[str, Failure]:
        """The endpoints this engine's searches use that are failing now, and why:
        "embedder" (queries are answered by BM25 alone), "reranker" (hits keep the fused
        order)."""
        try:
            reranker = self._reranker()
        except RerankerError:
            reranker = None  # `reranker_name` says why none is used
        found = {"embedder": failure_of(self._embedder), "reranker": failure_of(reranker)}
        return {role: failure for role, failure in found.items() if failure is not None}

    def ref_of(self, entry: str) -> str:
        """The branch or tag a manifest entry indexes."""
        return self._version.ref_of(entry)

    def chunk(self, chunk_id: str) -> ChunkRecord | None:
        """The live chunk `doc_id#chunkN`, or None."""
        return self._version.chunk(chunk_id)

    def page_chunks(self, page: ServedPage) -> list[ChunkRecord]:
        return self._version.page_chunks(page)

    def segments(self) -> list[SegmentStatus]:
        out = []
        for seg in self._version.segments:
            graph = seg.graph_loaded
            out.append(
                SegmentStatus(
                    id=seg.id,
                    chunks=len(seg.live),
                    live_chunks=int(seg.live.sum()),
                    windows=len(seg.live_rows),
                    live_windows=seg.live_row_count,
                    exact=seg.exact,
                    graph_loaded=graph is not None,
                    graph_version=graph.version if graph is not None else None,
                    stale_rows=seg.stale_rows,
                    opened_by=seg.opened_by,
                )
            )
        return out

    def derived(self) -> DerivedState:
        derived = self._version.derived
        return DerivedState(
            identifier_vocabulary=derived.vocabulary_ready,
            token_idf=derived.token_idf_ready,
            section_terms=len(derived.section_terms),
            heading_terms=len(derived.heading_terms),
        )

    # --- scopes --------------------------------------------------------------------------

    def scope(
        self, source: str = "", ref: str = "", path_prefix: str = "", tags: Sequence[str] = ()
    ) -> Scope:
        """What a request may search: the source's (or every source's) entry for `ref`, else
        each source's default ref (a page indexed at several refs comes back once), under
        `path_prefix`, of pages carrying any of `tags`."""
        entries = searched_entries(self._version, source, ref)
        return Scope(entries, path_prefix, tagged_pages(self._version, tags))

    def check_source(self, source: str) -> None:
        """InvalidArgument unless `source` is "" or an entry of this version."""
        check_source(self._version, source)

    def doc_id_at(self, doc_id: str, ref: str) -> str:
        """`doc_id` as the id of the same path at `ref` (SOURCE:PATH -> SOURCE@REF:PATH)."""
        return entry_doc_id(self._version, doc_id, ref)

    # --- searching -----------------------------------------------------------------------

    def search(
        self,
        query: str,
        num_results: int = 10,
        scope: Scope | None = None,
        one_per_page: bool = False,
    ) -> SearchResult:
        """The `num_results` best chunks for `query` under `scope` (None: everything)."""
        started = time.perf_counter()
        ctx = self._context(query, scope or Scope(), num_results)
        retrieval = retrieve(ctx, with_tokens=self._needs_tokens())
        ranked = self._ranked(retrieval, one_per_page)
        hits = [to_hit(self._version, c) for c in ranked[:num_results]]
        took_ms = round((time.perf_counter() - started) * 1000, 3)
        return SearchResult(
            results=hits,
            index_version=self.version,
            took_ms=took_ms,
            low_confidence=is_low_confidence(retrieval.ctx, ranked),
        )

    def retrieve(self, query: str, scope: Scope | None = None) -> Retrieval:
        """The query's candidates before fusion (`rank` fuses them)."""
        return retrieve(self._context(query, scope or Scope()), self._needs_tokens())

    def _needs_tokens(self) -> bool:
        reranker = self._reranker()
        return bool(reranker and reranker.needs_tokens)

    def rank(self, retrieval: Retrieval, num_results: int = 10) -> list[Hit]:
        """A retrieval's candidates fused and reranked under this engine's settings."""
        check_num_results(num_results)
        ranked = self._ranked(retrieval, one_per_page=False)
        return [to_hit(self._version, c) for c in ranked[:num_results]]

    def _ranked(self, retrieval: Retrieval, one_per_page: bool) -> list[Candidate]:
        if retrieval.ctx.version is not self._version:
            raise InvalidArgument("that retrieval was made on another index version")
        ctx = retrieval.ctx
        if ctx.settings is not self._settings:
            ctx = QueryContext(ctx.version, self._settings, ctx.embedder, ctx.profile, ctx.scope)
        candidates = retrieval.candidates
        fuse(ctx, candidates)
        candidates = by_score(candidates)
        reranker = self._reranker()
        if reranker is not None and candidates:
            head = candidates[: self._settings.rerank_depth]
            reranker.rerank(ctx, head, retrieval.encoding)
            candidates[: len(head)] = by_score(head)
        return one_chunk_per_page(candidates) if one_per_page else candidates

    def time_stages(self, query: str, scope: Scope | None = None) -> StageTimes:
        """How long the query's embedding, its BM25 search and its dense search take, each
        run alone (the benches' breakdown of a search)."""
        ctx = self._context(query, scope or Scope())
        with _Timer() as embed:
            qvec = self._embedder.embed_query(query)
        with _Timer() as bm25:
            bm25_top(ctx)
        with _Timer() as dense:
            dense_top(self._version, qvec, ctx.scope, self._settings)
        return StageTimes(embed.took, bm25.took, dense.took)

    def time_bm25(self, query: str, scope: Scope | None = None) -> tuple[float, float]:
        """Wall and CPU seconds of the query's BM25 search alone, with no embedding beside
        it (a bench timing BM25 over many queries, as the stages' breakdown cannot)."""
        ctx = self._context(query, scope or Scope())
        with _Timer() as bm25:
            bm25_top(ctx)
        return bm25.took

    def _context(self, query: str, scope: Scope, num_results: int = 1) -> QueryContext:
        """The query, checked and analysed as the version analysed its documents."""
        if not isinstance(query, str) or not query.strip():
            raise InvalidArgument("query is empty: send the words or identifier to look for")
        if len(query) > MAX_QUERY_CHARS:
            raise InvalidArgument(
                f"query is {len(query)} characters long; the limit is {MAX_QUERY_CHARS}"
            )
        check_num_results(num_results)
        for key in scope.entries:
            check_source(self._version, key)
        prefix = scope.path_prefix
        if not isinstance(prefix, str) or "\n" in prefix or len(prefix) > MAX_PATH_PREFIX_CHARS:
            raise InvalidArgument("path_prefix must be a single-line repository path prefix")
        profile = profile_query(query, self._version.analysis)
        return QueryContext(self._version, self._settings, self._embedder, profile, scope)

    # --- life ----------------------------------------------------------------------------

    def warm(self, vocabulary: bool = True) -> None:
        """Read or open now every segment file a search uses (a later GC may delete them;
        what is read or open survives) and run one search, so the first real query pays no
        one-off costs. `vocabulary`: also list the identifier terms literal queries scan
        (76 ms on PowerShell-Docs), which a cold start leaves to the first literal query so
        as to answer sooner."""
        for seg in self._version.segments:
            seg.open_files()
        if self.manifest.chunks:
            self.search(WARMUP_QUERY, 1)
        if vocabulary:
            self._version.derived.identifier_vocabulary()

    def close(self) -> None:
        """Let go of the version: what no newer engine shares is freed."""
        self._version.close()


def one_chunk_per_page(candidates: list[Candidate]) -> list[Candidate]:
    seen: set[str] = set()
    out = []
    for c in candidates:
        doc_id = c.chunk.doc_id
        if doc_id not in seen:
            seen.add(doc_id)
            out.append(c)
    return out


def check_num_results(num_results: int) -> None:
    if not isinstance(num_results, int) or not 1 <= num_results <= MAX_RESULTS:
        raise InvalidArgument(
            f"num_results must be between 1 and {MAX_RESULTS}, got {num_results!r}"
        )


class _Timer:
    def __enter__(self) -> _Timer:
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.took = (time.perf_counter() - self._wall, time.process_time() - self._cpu)
