"""GET /health: status, the served version and its sources, models, swaps, the last run.
Its status, the first that applies:

    503 "error"     no version can be served yet (the body says why)
    200 "degraded"  an older version is served: the one CURRENT names was refused
                    (another model, damaged files: `refused_version` says which and
                    why), or CURRENT itself is damaged (`refused_version.version` null)
    200 "failing"   a source's last run failed (`failed_sources` names each, with why and
                    since when; its last good pages keep serving), or the worker's last
                    cycle failed after its last good one (`last_ingestion_failure`), or
                    an endpoint searches use is failing (`failing_models`: the query
                    embedder, queries answered by BM25 alone; the reranker, hits in
                    their fused order)
    200 "stale"     a source's ref has been ahead of its index for longer than
                    `stale_after_s` (the hook, the worker or the poller is not working)
    200 "indexing"  a run is reading pages (`indexing`: state/progress.json), the
                    served version holds part of an entry, published while it was read
                    (its `sources` entry's `reading`: files read of the total), or its
                    chunks wait for vectors (`embedding`: how many, how far, how fast,
                    how long still; their hits are found by keywords)
    200 "ok"        a version is served and it is the one CURRENT names

With nothing to serve (503) the status is "indexing" while a first run reads pages,
"starting" while a request waits that no run has begun, else "error".

`status_detail` says in a sentence why the status is not "ok" ("" when it is).

A caller limited to some sources (source_limits.py) gets the report of its sources only: the others'
entries, failures and names are left out, its status comes from its own sources (a refused
version is everyone's), and errors that may name another source say only that they are
withheld.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from docdex.index_format import metrics
from docdex.index_format.layout import DataDir
from docdex.index_format.queue import pending_requests
from docdex.index_format.records import SourceState
from docdex.index_format.run_progress import (
    EMBEDDING,
    READING,
    RunProgress,
    embedding_sentence,
    read_progress,
    reading_sentence,
    waiting_chunks,
)
from docdex.server.engine import Engine, RerankerError, SearchModels, VersionReader
from docdex.server.versions import NoVersion, VersionHolder, VersionStats

from .freshness import Freshness, partial_notes
from .shapes import FailingModel
from .source_limits import EVERY_SOURCE, SourceLimit

if TYPE_CHECKING:
    from docdex.model.protocol import TextEmbedder as Embedder


FreshnessOf = Callable[[dict[str, SourceState]], dict[str, Freshness]]


def health_report(
    data: DataDir,
    embedder: Embedder,
    holder: VersionHolder[Engine],
    reranker: str,
    started: float,
    freshness_of: FreshnessOf,
    limit: SourceLimit = EVERY_SOURCE,
) -> tuple[int, dict[str, Any]]:
    """(HTTP status, body); `started` is the time.monotonic() of the server's start."""
    stats = holder.stats()
    body = _status_body(data, embedder, reranker, stats, started)
    progress = _visible(read_progress(data), limit)
    body["indexing"] = msgspec.to_builtins(progress)
    if not limit.unlimited:
        _withhold(body, limit)
    try:
        with holder.acquire() as engine:
            index, models = engine.index, engine.models
            states = limit.states(index.manifest.sources)
            body.update(_index_summary(index, states, freshness_of(states)))
            body["models"]["reranker"] = _reranker_name(reranker, models)
            body["failing_models"] = {
                m.role: {"error": m.error, "since": m.since} for m in failing_models(models, limit)
            }
            served = index.manifest.embedder  # the model its queries are embedded with
            body["models"].update(embedder=served.id, dim=served.dim)
            body["embedding"] = _embedding(index, progress)
            partial = list(partial_notes(data, index.manifest, states.__contains__).values())
    except NoVersion as exc:
        status, detail = _nothing_served(data, progress, exc)
        body.update(status=status, error=str(exc), status_detail=detail)
        return 503, body
    body["status"], body["status_detail"] = _status(body, progress, partial)
    return 200, body


def _visible(progress: RunProgress | None, limit: SourceLimit) -> RunProgress | None:
    """A run's progress without the sources a limited caller may not see."""
    if progress is None or limit.unlimited:
        return progress
    source = progress.source if progress.source and limit.allows(progress.source) else ""
    return msgspec.structs.replace(progress, sources=limit.names(progress.sources), source=source)


def _nothing_served(data: DataDir, progress: RunProgress | None, exc: NoVersion) -> tuple[str, str]:
    """Why nothing is served: a first index under way ("indexing"), one asked for that no
    run has begun yet ("starting"), or an error."""
    if progress is not None:
        return "indexing", f"nothing is served yet: {reading_sentence(progress)}"
    queued = pending_requests(data)
    if queued:
        return "starting", (
            f"nothing is served yet: indexing was asked for at {queued[0].requested_at} and "
            "the worker is starting"
        )
    return "error", f"nothing is served: {exc}"


WITHHELD = "withheld from a token limited to some sources"
FAILING_ROLES = {
    "embedder": "the query embedder is failing, so queries are answered by BM25 alone",
    "reranker": "the reranker is failing, so hits keep their fused order",
}


def failing_models(models: SearchModels, limit: SourceLimit = EVERY_SOURCE) -> list[FailingModel]:
    """The endpoints the served version's searches use that are failing. Why is withheld
    from a limited caller: an endpoint's error may quote what another caller searched."""
    return [
        FailingModel(role, failure.error if limit.unlimited else WITHHELD, failure.since)
        for role, failure in sorted(models.failing().items())
    ]


def _withhold(body: dict[str, Any], limit: SourceLimit) -> None:
    """What may name other sources, as a limited caller sees it."""
    if body["refused_version"]:
        body["refused_version"]["error"] = WITHHELD
    ingestion = body["last_ingestion"]
    if ingestion:
        ingestion["sources"] = limit.names(ingestion.get("sources", []))
    failure = body["last_ingestion_failure"]
    if failure and not (failure["source"] and limit.allows(failure["source"])):
        # another source's failure is left out; a whole run's may name any source
        withheld = {**failure, "error": WITHHELD}
        body["last_ingestion_failure"] = None if failure["source"] else withheld


def _status(
    body: dict[str, Any], progress: RunProgress | None, partial: list[str]
) -> tuple[str, str]:
    """The status of a server that serves a version, and why, in a sentence."""
    refused = body["refused_version"]
    if refused:  # serving an older version than CURRENT names
        which = "CURRENT" if refused["version"] is None else f"version {refused['version']}"
        return "degraded", f"{which} was refused ({refused['error']}); an older version serves"
    failing = _failing(body)
    if failing:
        return "failing", failing
    stale = sorted(name for name, source in body["sources"].items() if source["stale"])
    if stale:
        return "stale", (
            f"behind the repository for longer than stale_after_s: {_names(stale)} (are the "
            "hook, the worker and the poller running?)"
        )
    return _indexing_status(body, progress, partial)


def _indexing_status(
    body: dict[str, Any], progress: RunProgress | None, partial: list[str]
) -> tuple[str, str]:
    """ "indexing" while a run reads pages, the served version holds part of an entry
    (`partial`: what it holds of each) or its chunks wait for vectors."""
    said = []
    if progress is not None and progress.phase == READING:
        said.append(reading_sentence(progress))
    said += partial
    embedding = body["embedding"]
    if embedding is not None:
        said.append(embedding["detail"])
    return ("indexing", "; ".join(said)) if said else ("ok", "")


def _failing(body: dict[str, Any]) -> str:
    """What is failing ("" when nothing is): indexing, then the endpoints searches use."""
    models = [f"{FAILING_ROLES[role]}: {f['error']}" for role, f in body["failing_models"].items()]
    return "; ".join(said for said in (_indexing_failing(body), *models) if said)


def _indexing_failing(body: dict[str, Any]) -> str:
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
        "failing_models": {},
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
        # what a run is doing now (state/progress.json), and how far the served version's
        # vectors are (None when no chunk waits for them)
        "indexing": None,
        "embedding": None,
    }


def _embedding(index: VersionReader, progress: RunProgress | None) -> dict[str, Any] | None:
    manifest = index.manifest
    waiting = waiting_chunks(manifest)
    if not waiting:
        return None
    embedding = progress if progress is not None and progress.phase == EMBEDDING else None
    return {
        "chunks_waiting": waiting,
        "chunks": manifest.chunks,
        "windows_done": embedding.windows_done if embedding else 0,
        "windows_total": embedding.windows_total if embedding else 0,
        "windows_per_s": embedding.windows_per_s if embedding else 0.0,
        "eta_s": embedding.eta_s if embedding else None,
        "detail": embedding_sentence(waiting, manifest.chunks, embedding),
    }


def _index_summary(
    index: VersionReader, sources: dict[str, SourceState], freshness: dict[str, Freshness]
) -> dict[str, Any]:
    """The served version's figures for `sources` (its entries a caller sees)."""
    every = len(sources) == len(index.manifest.sources)
    chunks = index.manifest.chunks if every else sum(s.chunks for s in sources.values())
    return {
        "index_version": index.version,
        "index_created_at": index.manifest.created_at,
        "total_sources": len(sources),
        "total_chunks": chunks,
        "sources": {
            name: {
                "commit": s.commit,
                "files": s.files,
                "chunks": s.chunks,
                "indexed_at": s.indexed_at,
                "last_error": s.last_error,
                "failed_since": s.failed_since,
                "ref": s.ref or s.branch,
                "reading": msgspec.to_builtins(s.reading),  # published while being read
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


def _reranker_name(configured: str, models: SearchModels) -> str:
    try:
        return models.reranker_name()
    except RerankerError as exc:
        return f"{configured} (unavailable: {exc})"


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)
