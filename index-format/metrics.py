"""Run metrics the worker leaves under state/ for the server's /health to show.

Two small JSON files, each replaced atomically by its writer (the indexing worker) and read
by anyone: `state/last_ingestion.json` after a run that published or checked a version, and
`state/last_failure.json` after a run that failed. They are run state, never part of a
version; a missing or unreadable file reads as None.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

import msgspec

from .layout import DataDir, write_atomic

LAST_INGESTION_FILE = "last_ingestion.json"
LAST_FAILURE_FILE = "last_failure.json"

T = TypeVar("T")


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
    _write(last_failure_path(data), failure)


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
