"""What a full run (`docdex index --full`) starts from: nothing damaged.

A run reuses what the version it starts from holds: vectors by content hash (read from the
old segments' vectors.npy), the text index (built copy-on-write from the old one), page
tables (old pages, dates, lent vectors). A full run checks every version on disk first
(index-format/verify.py). When the current version is intact it starts from it as always.
When it is not, the run starts from a salvage of it: no old segment stays live and the text
index starts empty (every source is read again anyway), damaged page tables are left out,
and the vectors to reuse come from the chunk records of the segments with no damaged file
(a damaged segment's texts are embedded again, a damaged page table costs nothing). Once
the run has published, the damaged versions' manifests are deleted, so that garbage
collection takes their files and `docdex verify` passes again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import msgspec

from docdex.index_format.layout import DataDir, IndexFormatError
from docdex.index_format.records import ChunkRef, Manifest
from docdex.index_format.store import load_manifest, load_segment
from docdex.index_format.verify import VersionReport, damaged_segments, describe, verify_data

log = logging.getLogger("docdex.pipeline")


@dataclass(frozen=True)
class FullRunBase:
    previous: Manifest | None  # what the run starts from
    salvaged: bool = False  # the current version was damaged: every source is read again
    damaged_segments: frozenset[str] = frozenset()  # lend no vectors
    damaged_versions: list[int] = field(default_factory=list)  # dropped once the run published
    vectors: dict[str, ChunkRef] = field(default_factory=dict)  # reusable, by content hash


def full_run_base(data: DataDir) -> FullRunBase:
    report = verify_data(data.root)
    damaged = [v for v in report.versions if not v.ok]
    for version in damaged:
        log.warning("version %d is damaged: %s", version.version, describe(version.problems))
    for problem in report.problems:
        log.warning("%s: %s", problem.file, problem.detail)
    dropped = [v.version for v in damaged]
    reports = {v.version: v for v in report.versions}
    current = reports.get(report.current) if report.current is not None else None
    if current is not None and current.ok:
        return FullRunBase(load_manifest(data, current.version), damaged_versions=dropped)
    start = _newest_decodable(data, report.current, reports)
    if start is None:
        return FullRunBase(None, salvaged=True, damaged_versions=dropped)
    manifest, problems = start
    damaged_ids = frozenset(damaged_segments(problems.problems))
    return FullRunBase(
        _salvage(manifest, problems),
        salvaged=True,
        damaged_segments=damaged_ids,
        damaged_versions=dropped,
        vectors=intact_vectors(data, manifest, damaged_ids),
    )


def _newest_decodable(
    data: DataDir, current: int | None, reports: dict[int, VersionReport]
) -> tuple[Manifest, VersionReport] | None:
    """The newest version whose manifest decodes, CURRENT's or older (any, when CURRENT is
    unreadable)."""
    for version in sorted(reports, reverse=True):
        if current is not None and version > current:
            continue
        try:
            return load_manifest(data, version), reports[version]
        except IndexFormatError:
            continue
    return None


def _salvage(manifest: Manifest, report: VersionReport) -> Manifest:
    """`manifest` with nothing that could carry damage into the next version: no segment
    stays live, no text index to copy, no damaged page table."""
    bad = {p.file for p in report.problems}
    sources = {
        key: msgspec.structs.replace(state, pages_file="", pages_sum=None)
        if f"pages/{state.pages_file}" in bad
        else state
        for key, state in manifest.sources.items()
    }
    return msgspec.structs.replace(manifest, segments=[], text_index="", sources=sources)


def intact_vectors(
    data: DataDir, manifest: Manifest, damaged: frozenset[str]
) -> dict[str, ChunkRef]:
    """Where the chunks of the intact segments are, by content hash: what the run may copy."""
    out: dict[str, ChunkRef] = {}
    for ref in manifest.segments:
        if ref.id in damaged:
            continue
        if ref.keywords_only:  # no vectors to copy yet
            continue
        for index, chunk in enumerate(load_segment(data, ref.id, manifest.embedder.dim).chunks):
            location = (ref.id, index, chunk.window_start, chunk.window_count)
            out.setdefault(chunk.content_hash, ChunkRef(*location, chunk.content_hash))
    return out


def drop_versions(data: DataDir, versions: list[int]) -> None:
    """Delete the manifests of damaged versions (their files go at the next collection)."""
    for version in versions:
        data.manifest(version).unlink(missing_ok=True)
        log.warning("dropped damaged version %d", version)
