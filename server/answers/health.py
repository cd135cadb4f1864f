"""GET /health: status, the served version and its sources, models, swaps, the last run.
Its status:

    200 "ok"        a version is served and it is the one CURRENT names
    200 "stale"     a source's ref has been ahead of its index for longer than
                    `stale_after_s` (the hook, the worker or the poller is not working)
    200 "degraded"  an older version is served: the one CURRENT names was refused
                    (another model, damaged files: `refused_version` says which and
                    why), or CURRENT itself is damaged (`refused_version.version` null)
    503 "error"     no version can be served yet (the body says why)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from docdex.index_format import metrics
from docdex.index_format.layout import DataDir
from docdex.index_format.records import SourceState
from docdex.server.engine import Engine, RerankerError
from docdex.server.versions import NoVersion, VersionHolder, VersionStats

from .freshness import Freshness

if TYPE_CHECKING:
    from docdex.model.embedder import Embedder


FreshnessOf = Callable[[dict[str, SourceState]], dict[str, Freshness]]


def health_report(
    data: DataDir,
    embedder: Embedder,
    holder: VersionHolder[Engine],
    reranker: str,
    started: float,
    freshness_of: FreshnessOf,
) -> tuple[int, dict[str, Any]]:
    """(HTTP status, body); `started` is the time.monotonic() of the server's start."""
    stats = holder.stats()
    body = _status_body(data, embedder, reranker, stats, started)
    try:
        with holder.acquire() as engine:
            body.update(_index_summary(engine, freshness_of(dict(engine.manifest.sources))))
            body["models"]["reranker"] = _reranker_name(reranker, engine)
    except NoVersion as exc:
        body.update(status="error", error=str(exc))
        return 503, body
    if stats.refused_version is not None:
        body["status"] = "degraded"  # serving an older version than CURRENT names
    elif any(source["stale"] for source in body["sources"].values()):
        body["status"] = "stale"
    return 200, body


def _status_body(
    data: DataDir, embedder: Embedder, reranker: str, stats: VersionStats, started: float
) -> dict[str, Any]:
    """Everything but the served version's own figures (those need a lease)."""
    return {
        "status": "ok",
        "index_version": None,
        "total_sources": 0,
        "total_chunks": 0,
        "sources": {},
        "refused_version": msgspec.to_builtins(stats.refused_version),
        "last_ingestion": msgspec.to_builtins(metrics.read_last_ingestion(data)),
        "last_ingestion_failure": msgspec.to_builtins(metrics.read_last_failure(data)),
        "models": {
            "embedder": embedder.info.id,
            "dim": embedder.info.dim,
            "query_graph": embedder.graph,
            "reranker": reranker,
        },
        "versions": {
            "serving_since": stats.serving_since,
            "load_ms": _round(stats.load_ms),
            "swaps": stats.swaps,
            "closed": stats.closed,
            "held_old": stats.held_old,
        },
        "uptime_s": round(time.monotonic() - started, 1),
    }


def _index_summary(engine: Engine, freshness: dict[str, Freshness]) -> dict[str, Any]:
    sources = engine.manifest.sources
    return {
        "index_version": engine.version,
        "index_created_at": engine.manifest.created_at,
        "total_sources": len(sources),
        "total_chunks": engine.manifest.chunks,
        "sources": {
            name: {
                "commit": s.commit,
                "files": s.files,
                "chunks": s.chunks,
                "indexed_at": s.indexed_at,
                "last_error": s.last_error,
                "ref": s.ref or s.branch,
                **msgspec.to_builtins(freshness[name]),
            }
            for name, s in sorted(sources.items())
        },
    }


def _reranker_name(configured: str, engine: Engine) -> str:
    try:
        return engine.reranker_name()
    except RerankerError as exc:
        return f"{configured} (unavailable: {exc})"


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)
