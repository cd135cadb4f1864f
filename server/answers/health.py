"""GET /health: status, the served version and its sources, models, swaps, the last run.
Its status, the first that applies:

    503 "error"     no version can be served yet (the body says why)
    200 "degraded"  an older version is served: the one CURRENT names was refused
                    (another model, damaged files: `refused_version` says which and
                    why), or CURRENT itself is damaged (`refused_version.version` null)
    200 "failing"   a source's last run failed (`failed_sources` names each, with why and
                    since when; its last good pages keep serving), or the worker's last
                    cycle failed after its last good one (`last_ingestion_failure`)
    200 "stale"     a source's ref has been ahead of its index for longer than
                    `stale_after_s` (the hook, the worker or the poller is not working)
    200 "ok"        a version is served and it is the one CURRENT names

`status_detail` says in a sentence why the status is not "ok" ("" when it is).
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
        body.update(status="error", error=str(exc), status_detail=f"nothing is served: {exc}")
        return 503, body
    body["status"], body["status_detail"] = _status(body, stats)
    return 200, body


def _status(body: dict[str, Any], stats: VersionStats) -> tuple[str, str]:
    """The status of a server that serves a version, and why, in a sentence."""
    refused = stats.refused_version
    if refused is not None:  # serving an older version than CURRENT names
        which = "CURRENT" if refused.version is None else f"version {refused.version}"
        return "degraded", f"{which} was refused ({refused.error}); an older version serves"
    failing = _failing(body)
    if failing:
        return "failing", failing
    stale = sorted(name for name, source in body["sources"].items() if source["stale"])
    if stale:
        return "stale", (
            f"behind the repository for longer than stale_after_s: {_names(stale)} (are the "
            "hook, the worker and the poller running?)"
        )
    return "ok", ""


def _failing(body: dict[str, Any]) -> str:
    """Why indexing is failing ("" when it is not): the sources whose last run failed, or
    a cycle that failed after the last one that completed."""
    failed = sorted(body["failed_sources"].items())
    if failed:
        said = "; ".join(f"source {name} failed: {f['error']}" for name, f in failed[:3])
        return said + (f"; and {len(failed) - 3} more sources" if len(failed) > 3 else "")
    failure, ingestion = body["last_ingestion_failure"], body["last_ingestion"]
    if failure and (ingestion is None or failure["failed_at"] > ingestion["completed_at"]):
        where = f" for {failure['source']}" if failure["source"] else ""
        return f"the last indexing cycle{where} failed: {failure['error']}"
    return ""


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:5])
    return shown + (f" and {len(names) - 5} more" if len(names) > 5 else "")


def _status_body(
    data: DataDir, embedder: Embedder, reranker: str, stats: VersionStats, started: float
) -> dict[str, Any]:
    """Everything but the served version's own figures (those need a lease)."""
    return {
        "status": "ok",
        "status_detail": "",
        "index_version": None,
        "total_sources": 0,
        "total_chunks": 0,
        "sources": {},
        "failed_sources": {},
        "refused_version": msgspec.to_builtins(stats.refused_version),
        "last_ingestion": msgspec.to_builtins(metrics.read_last_ingestion(data)),
        "last_ingestion_failure": msgspec.to_builtins(metrics.read_last_failure(data)),
        "models": {
            "embedder": embedder.info.id,
            "dim": embedder.info.dim,
            "query_graph": embedder.graph,
            "reranker": reranker,
            # `reranker` becomes the one searches use; this is what the setting asks for
            # ("default": MaxSim when the index has token vectors, else none)
            "reranker_setting": reranker,
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
                "failed_since": s.failed_since,
                "ref": s.ref or s.branch,
                **msgspec.to_builtins(freshness[name]),
            }
            for name, s in sorted(sources.items())
        },
        "failed_sources": {
            name: {"error": s.last_error, "since": s.failed_since, "serving_commit": s.commit}
            for name, s in sorted(sources.items())
            if s.last_error
        },
    }


def _reranker_name(configured: str, engine: Engine) -> str:
    try:
        return engine.reranker_name()
    except RerankerError as exc:
        return f"{configured} (unavailable: {exc})"


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)
