"""What a run reports: per source what changed, and for the run what it published, in how
long, at what peak memory; one log event per source, and the run metrics /health shows
(state/last_ingestion.json, and state/last_failure.json for a source that failed), left by
every run whoever started it: `docdex index`, the watcher, the hook's worker."""

from __future__ import annotations

import logging

import msgspec

from docdex.index_format import metrics
from docdex.index_format.layout import DataDir
from docdex.index_format.records import (
    FileProblem,
)
from docdex.runtime.logs import log_event
from docdex.runtime.times import iso_utc

from .storage.garbage_collection import GcReport

log = logging.getLogger("docdex.pipeline")


class SourceReport(msgspec.Struct):
    name: str
    status: str = "unchanged"  # unchanged | indexed | failed | branch-deleted | removed
    commit: str = ""
    previous_commit: str = ""
    added: int = 0
    modified: int = 0
    deleted: int = 0
    renamed: int = 0
    reread: int = 0  # files read again that did not change (a full run, changed settings)
    chunks_embedded: int = 0
    chunks_reused: int = 0
    problems: list[FileProblem] = []
    error: str = ""
    ignored_refs: list[str] = []  # refs the patterns select that are not indexed, and why


class RunReport(msgspec.Struct):
    version: int | None
    previous_version: int | None
    published: bool
    sources: list[SourceReport]
    chunks: int
    windows_embedded: int
    segments: int
    compacted: bool
    took_s: float
    embed_s: float  # embedding and writing the new segments
    peak_rss_mb: float
    gc: GcReport | None = None
    segments_written: int = 0  # new segments of this run, before compaction
    # keywords first (adr/0042): the versions published as waiting chunks got their vectors,
    # and how many chunks still wait when the run ended
    embedded_versions: list[int] = []
    waiting_chunks: int = 0
    # versions published while an entry the index did not hold was still being read
    partial_versions: list[int] = []


def log_run(report: RunReport) -> None:
    """One "indexed" event per source; sources with nothing new log at debug level."""
    for source in report.sources:
        level = _LOG_LEVELS.get(source.status, logging.INFO)
        log_event(
            log,
            "indexed",
            level,
            source=source.name,
            status=source.status,
            version=report.version,
            published=report.published,
            commit=source.commit,
            added=source.added,
            modified=source.modified,
            deleted=source.deleted,
            renamed=source.renamed,
            reread=source.reread,
            chunks_embedded=source.chunks_embedded,
            chunks_reused=source.chunks_reused,
            problems=len(source.problems),
            took_s=report.took_s,
            **({"error": source.error} if source.error else {}),
        )


_LOG_LEVELS = {"unchanged": logging.DEBUG, "failed": logging.WARNING}


def record_run(data: DataDir, report: RunReport) -> None:
    """The run's metrics for /health; a full disk loses them (logged), never the run."""
    ingestion = metrics.IngestionMetrics(
        completed_at=iso_utc(),
        duration_s=report.took_s,
        rss_at_end_mb=report.peak_rss_mb,
        chunks_embedded=sum(s.chunks_embedded for s in report.sources),
        version=report.version,
        published=report.published,
        sources=[s.name for s in report.sources],
    )
    metrics.record(metrics.write_last_ingestion, data, ingestion)
    for source in report.sources:
        if source.status == "failed":
            error = f"source {source.name}: {source.error}"
            metrics.record_failure(data, error, report.took_s, source.name)
