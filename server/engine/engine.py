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
loaded version with others (what `docdex eval --baselines` and the sweeps compare). What the
answers read besides searches is the version's `index` (version_reader.py); the models its
searches use are its `models` (`SearchModels`); `SearchStages` runs a search's stages one
at a time, for the benches to time. The server swaps engines as versions are published
(server/versions.py); the CLI, `docdex eval` and the benches open one each.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from docdex.errors import InvalidArgument
from docdex.index_format.layout import DataDir
from docdex.model.outage import Failure, failure_of

from .confidence import is_low_confidence
from .dense import dense_top
from .fusion import fuse
from .hits import Hit, SearchResult, to_hit
from .lexical import bm25_top
from .loaded import LoadedVersion, check_model
from .query import QueryContext, profile_query
from .rerank import Reranker, RerankerError, resolve_reranker
from .retrieval import Candidate, Retrieval, by_score, retrieve
from .scope import Scope, check_source, searched_entries, tagged_pages
from .settings import DEFAULT_SETTINGS, EngineSettings
from .version_reader import VersionReader

if TYPE_CHECKING:
    from docdex.index_format.records import EmbedderInfo
    from docdex.model.protocol import TextEmbedder

ModelFor = Callable[["EmbedderInfo"], "TextEmbedder"]  # the model a version was built with

MAX_QUERY_CHARS = 2000
MAX_RESULTS = 100
MAX_PATH_PREFIX_CHARS = 1000
WARMUP_QUERY = "docdex warm-up query"


class Engine:
    """Search over one published index version (see the module's docstring)."""

    def __init__(self, version: LoadedVersion, embedder: TextEmbedder, settings: EngineSettings):
        """Use `Engine.open`; this wraps a version already loaded."""
        self._version = version
        self._embedder = embedder
        self._settings = settings
        # the reranker the settings name, on this version (None: no rerank)
        self._reranker = partial(
            resolve_reranker,
            settings.reranker,
            version,
            settings.rerank_endpoint,
            settings.model_environment.variables,
        )
        self._index = VersionReader(version)
        self._models = SearchModels(embedder, self._reranker)

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

    @property
    def version(self) -> int:
        return self._version.version

    @property
    def index(self) -> VersionReader:
        """The version's pages, chunks, entries and refs, as the answers read them."""
        return self._index

    @property
    def models(self) -> SearchModels:
        """The embedder and the reranker this engine's searches use, and which are failing."""
        return self._models

    # --- scopes --------------------------------------------------------------------------

    def scope(
        self, source: str = "", ref: str = "", path_prefix: str = "", tags: Sequence[str] = ()
    ) -> Scope:
        """What a request may search: the source's (or every source's) entry for `ref`, else
        each source's default ref (a page indexed at several refs comes back once), under
        `path_prefix`, of pages carrying any of `tags`."""
        entries = searched_entries(self._version, source, ref)
        return Scope(entries, path_prefix, tagged_pages(self._version, tags))

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
        if self._version.manifest.chunks:
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


class SearchModels:
    """The models an engine's searches use (`Engine.models`): the query embedder, and the
    reranker its settings name, resolved on its version ("default" is MaxSim when the
    version has token vectors, else none). Either may be an endpoint (adr/0039) that fails
    while the engine serves: a search then goes on without it (BM25 alone; hits in their
    fused order), and `failing` says which one and why, for /health and list_sources."""

    def __init__(self, embedder: TextEmbedder, reranker: Callable[[], Reranker | None]) -> None:
        """`reranker`: resolves the reranker the settings name on the version (None: none;
        RerankerError when it cannot be loaded)."""
        self._embedder = embedder
        self._reranker = reranker

    def reranker_name(self) -> str:
        """The reranker searches use on this version: "none", "maxsim", "cross-encoder" or
        "endpoint" (RerankerError when the configured one cannot be loaded)."""
        reranker = self._reranker()
        return "none" if reranker is None else reranker.name

    def failing(self) -> dict[str, Failure]:
        """The endpoints searches use that are failing now, and why: "embedder" (queries
        are answered by BM25 alone), "reranker" (hits keep the fused order)."""
        try:
            reranker = self._reranker()
        except RerankerError:
            reranker = None  # `reranker_name` says why none is used
        found = {"embedder": failure_of(self._embedder), "reranker": failure_of(reranker)}
        return {role: failure for role, failure in found.items() if failure is not None}


class SearchStages:
    """A search's stages for one query, each run alone when asked: the query's embedding,
    its BM25 search, its dense search (a search runs them together, retrieval.py). What the
    benches time (bench/performance/stage_times.py); nothing else needs them."""

    def __init__(self, engine: Engine, query: str, scope: Scope | None = None) -> None:
        """The query checked and analysed on `engine`'s version, as a search does it."""
        self._ctx = engine._context(query, scope or Scope())

    def embed(self) -> np.ndarray:
        """The query's vector."""
        return self._ctx.embedder.embed_query(self._ctx.profile.text)

    def bm25(self) -> int:
        """BM25's search under the scope; how many chunks it found."""
        return len(bm25_top(self._ctx))

    def dense(self, vector: np.ndarray) -> int:
        """The dense search for `vector` under the scope; how many chunks it found."""
        ctx = self._ctx
        return len(dense_top(ctx.version, vector, ctx.scope, ctx.settings))
