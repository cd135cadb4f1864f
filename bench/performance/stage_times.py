"""How long a search's stages take, each run alone: the query's embedding, its BM25 search
and its dense search (the breakdown of a query in docs/benchmarks.md), over the engine's
`SearchStages`. Wall and CPU seconds (this process, every thread: a dense search runs its
segments on every core)."""

from __future__ import annotations

import time

import msgspec

from docdex.server.engine import Engine, Scope, SearchStages

Took = tuple[float, float]  # wall and CPU seconds


class StageTimes(msgspec.Struct, frozen=True):
    """Wall and CPU seconds of a query's stages, each run alone."""

    embed: Took
    bm25: Took
    dense: Took


def time_stages(engine: Engine, query: str, scope: Scope | None = None) -> StageTimes:
    """The query's embedding, then its BM25 search, then its dense search, each timed."""
    stages = SearchStages(engine, query, scope)
    with Timer() as embed:
        vector = stages.embed()
    with Timer() as bm25:
        stages.bm25()
    with Timer() as dense:
        stages.dense(vector)
    return StageTimes(embed.took, bm25.took, dense.took)


def time_bm25(engine: Engine, query: str, scope: Scope | None = None) -> Took:
    """The query's BM25 search alone, with no embedding beside it (a bench timing BM25 over
    many queries, as the stages' breakdown cannot)."""
    stages = SearchStages(engine, query, scope)
    with Timer() as bm25:
        stages.bm25()
    return bm25.took


class Timer:
    """Wall and CPU seconds of what runs inside it (`took`, once it ends)."""

    def __enter__(self) -> Timer:
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.took = (time.perf_counter() - self._wall, time.process_time() - self._cpu)
