"""Run metrics every indexing run leaves under state/ for the server's /health to show.

Two small JSON files, each replaced atomically by its writer (an indexing run, or the worker
for a cycle that died) and read by anyone: `state/last_ingestion.json` after a run that
published or checked a version, and `state/last_failure.json` after a run (or one of its
sources) that failed. They are run state, never part of a
version; a missing or unreadable file reads as None. A failure's sentence is redacted as it
is written (runtime/redaction.py): it may quote an endpoint that echoed its key.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import msgspec

from docdex.runtime.redaction import redact
from docdex.runtime.times import iso_utc

from .layout import DataDir, write_atomic

LAST_INGESTION_FILE = "last_ingestion.json"
LAST_FAILURE_FILE = "last_failure.json"

T = TypeVar("T")
log = logging.getLogger("docdex.metrics")


class IngestionMetrics(msgspec.Struct, frozen=True):
    """The last indexing run that completed."""

    completed_at: str  # ISO 8601 UTC
    duration_s: float
    rss_at_end_mb: float  # resident set size of the worker when the run ended
    chunks_embedded: int
    version: int | None = None  # the version the run published (or left current)
    published: bool = True
    sources: list[str] = []  # the sources the run covered


class IngestionFailure(msgspec.Struct, frozen=True):
    """The last indexing run that failed."""

    failed_at: str  # ISO 8601 UTC
    error: str  # one sentence: what failed and what to do
    source: str = ""  # "" when the run as a whole failed
    duration_s: float | None = None


def last_ingestion_path(data: DataDir) -> Path:
    return data.state / LAST_INGESTION_FILE


def last_failure_path(data: DataDir) -> Path:
    return data.state / LAST_FAILURE_FILE


def write_last_ingestion(data: DataDir, metrics: IngestionMetrics) -> None:
    _write(last_ingestion_path(data), metrics)


def write_last_failure(data: DataDir, failure: IngestionFailure) -> None:
    _write(last_failure_path(data), msgspec.structs.replace(failure, error=redact(failure.error)))


def record(write: Callable[[DataDir, T], None], data: DataDir, outcome: T) -> None:
    """Write with `write`; a full disk loses the metrics (logged), never the run."""
    try:
        write(data, outcome)
    except OSError as exc:
        log.error("could not record the run's outcome in %s: %s", data.state, exc)


def record_failure(data: DataDir, error: str, duration_s: float | None, source: str = "") -> None:
    """A run that failed as a whole (or one source of it, when named)."""
    duration = None if duration_s is None else round(duration_s, 3)
    failure = IngestionFailure(failed_at=iso_utc(), error=error, source=source, duration_s=duration)
    record(write_last_failure, data, failure)


def read_last_ingestion(data: DataDir) -> IngestionMetrics | None:
    return _read(last_ingestion_path(data), IngestionMetrics)


def read_last_failure(data: DataDir) -> IngestionFailure | None:
    return _read(last_failure_path(data), IngestionFailure)


def _write(path: Path, value: msgspec.Struct) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, msgspec.json.encode(value))


def _read(path: Path, kind: type[T]) -> T | None:
    try:
        return msgspec.json.decode(path.read_bytes(), type=kind)
    except (OSError, msgspec.DecodeError):
        return None  # absent, or written by an incompatible worker: show nothing
