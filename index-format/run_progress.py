"""What an indexing run is doing now: `state/progress.json` (FORMAT.md, "Run state").

The run writes it atomically every few seconds while it reads pages and while it embeds
the chunks a keywords-first version published without vectors; readers (the server, `docdex
inspect`) take it as the truth only while the process that wrote it lives, so a run killed
mid-way leaves a file nobody believes.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from .layout import DataDir, process_alive, write_atomic
from .records import Manifest, SourceState
from .ref_names import base_of

PROGRESS_FILE = "progress.json"
READING, EMBEDDING = "reading", "embedding"


class RunProgress(msgspec.Struct, frozen=True):
    pid: int  # the run's process: the file says nothing once it is gone
    started_at: str  # ISO 8601 UTC, when the run began
    updated_at: str
    phase: str  # READING (pages parsed, for keywords) | EMBEDDING (vectors of published chunks)
    sources: list[str] = []  # the sources the run indexes
    source: str = ""  # the entry being read now (READING)
    pages_done: int = 0  # of `source`'s changed files, read so far
    pages_total: int = 0
    published: int | None = None  # the last version this run published (None: none yet)
    # EMBEDDING: chunks and windows given vectors of those the run found waiting for them;
    # windows_total is estimated from the windows per chunk so far until the last is done
    chunks_done: int = 0
    chunks_total: int = 0
    windows_done: int = 0
    windows_total: int = 0
    windows_per_s: float = 0.0
    eta_s: float | None = None  # seconds left at that rate (None: not known yet)


_decoder = msgspec.json.Decoder(RunProgress)


def progress_path(data: DataDir) -> Path:
    return data.state / PROGRESS_FILE


def write_progress(data: DataDir, progress: RunProgress) -> None:
    data.state.mkdir(parents=True, exist_ok=True)
    write_atomic(progress_path(data), msgspec.json.encode(progress))


def clear_progress(data: DataDir, pid: int) -> None:
    """Remove the file if `pid` wrote it (a later run may have replaced it)."""
    progress = _read(data)
    if progress is not None and progress.pid == pid:
        progress_path(data).unlink(missing_ok=True)


def read_progress(data: DataDir) -> RunProgress | None:
    """The running run's progress; None when no run is writing one (no file, a file that
    does not decode, or its process is gone)."""
    progress = _read(data)
    if progress is None or not process_alive(progress.pid):
        return None
    return progress


def _read(data: DataDir) -> RunProgress | None:
    try:
        return _decoder.decode(progress_path(data).read_bytes())
    except (OSError, msgspec.DecodeError):
        return None


def waiting_chunks(manifest: Manifest | None) -> int:
    """Chunks a version holds without vectors yet (its keywords-only segments' live ones)."""
    if manifest is None:
        return 0
    return sum(s.chunks - len(s.tombstones) for s in manifest.segments if s.keywords_only)


def reading_sentence(progress: RunProgress) -> str:
    """What a run reading pages is doing, e.g. "source docs is being indexed: 120 of 3,112
    pages read, since 2026-12-03T12:40:01Z"."""
    which = f"source {progress.source}" if progress.source else _sources(progress.sources)
    pages = (
        f": {progress.pages_done:,} of {progress.pages_total:,} pages read"
        if progress.pages_total
        else ""
    )
    return f"{which} is being indexed{pages}, since {progress.started_at}"


def embedding_sentence(waiting: int, total: int, progress: RunProgress | None) -> str:
    """How far the vectors of a version published keywords first are, e.g. "1,200 of 4,000
    chunks wait for vectors (hits among them are found by keywords): 900 of about 3,000
    windows embedded, 41.0 windows/s, about 51 s left"."""
    said = (
        f"{waiting:,} of {total:,} chunks wait for vectors (hits among them are found by "
        'keywords, match "keywords")'
    )
    if progress is None or progress.phase != EMBEDDING:
        return said + "; the worker embeds them next"
    said += (
        f": {progress.windows_done:,} of about {progress.windows_total:,} windows embedded"
        f" since {progress.started_at}"
    )
    if progress.windows_per_s:
        said += f", {progress.windows_per_s:,.1f} windows/s"
    if progress.eta_s is not None:
        said += f", about {progress.eta_s:,.0f} s left"
    return said


def partial_entries(manifest: Manifest | None) -> dict[str, SourceState]:
    """The entries a version holds only part of, being read when it was published."""
    if manifest is None:
        return {}
    return {key: state for key, state in manifest.sources.items() if state.reading is not None}


def partial_sentence(key: str, state: SourceState, progress: RunProgress | None) -> str:
    """What a version holds of an entry published while it was read, e.g. "source docs is
    being indexed: 120 of 3,112 pages read; results cover those"; once no live run reads
    its source, that its run stopped and the next one reads it whole."""
    reading = state.reading
    if reading is None:
        return ""
    pages = f"{reading.done:,} of {reading.total:,} pages read"
    if progress is not None and base_of(key, state) in progress.sources:
        return f"source {key} is being indexed: {pages}; results cover those"
    return (
        f"source {key} is partly indexed: {pages} when its run stopped; results cover "
        "those, and the next run of the source reads it whole"
    )


def _sources(names: list[str]) -> str:
    if not names:
        return "every source"
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return f"source{'s' if len(names) > 1 else ''} {shown}"
