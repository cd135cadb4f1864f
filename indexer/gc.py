"""Garbage collection: keep the newest published versions and what they name."""

from __future__ import annotations

import shutil
from pathlib import Path

import msgspec

from docdex.index_format.layout import DataDir
from docdex.index_format.store import current_version, directory_bytes, list_versions, load_manifest


class GcReport(msgspec.Struct):
    kept_versions: list[int]
    deleted_versions: list[int]
    deleted_files: int
    freed_bytes: int


def collect_garbage(data: DataDir, keep: int) -> GcReport:
    """Delete versions older than the newest `keep` published ones, versions newer than
    CURRENT (a crashed run never published them), temporary debris, and every segment,
    text index and page table no kept version names. Run only under the writer lock."""
    current = current_version(data)
    versions = list_versions(data)
    published = [v for v in versions if current is not None and v <= current]
    kept = published[-max(1, keep) :] if published else []
    doomed = [v for v in versions if v not in kept]

    referenced: set[Path] = set()
    for version in kept:
        manifest = load_manifest(data, version)
        referenced.add(data.text_index(manifest.text_index))
        referenced.update(data.segment(s.id) for s in manifest.segments)
        referenced.update(
            data.pages_file(s.pages_file) for s in manifest.sources.values() if s.pages_file
        )

    freed = 0
    deleted = 0
    for version in doomed:
        path = data.manifest(version)
        freed += path.stat().st_size
        path.unlink()
        deleted += 1
    for entry in data.versions.glob(".tmp-*"):
        freed += _remove(entry)
        deleted += 1
    for folder in (data.segments, data.text, data.pages):
        for entry in folder.iterdir():
            if entry.name.startswith(".tmp-") or entry not in referenced:
                freed += _remove(entry)
                deleted += 1
    return GcReport(
        kept_versions=kept, deleted_versions=doomed, deleted_files=deleted, freed_bytes=freed
    )


def _remove(path: Path) -> int:
    if path.is_dir():
        size = directory_bytes(path)
        shutil.rmtree(path, ignore_errors=True)
        return size
    size = path.stat().st_size
    path.unlink(missing_ok=True)
    return size
