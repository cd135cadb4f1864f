"""Garbage collection: keep the newest published versions and what they name."""

from __future__ import annotations

import shutil
from pathlib import Path

import msgspec

from docdex.index_format.layout import DamagedIndex, DataDir
from docdex.index_format.records import Manifest
from docdex.index_format.store import current_version, directory_bytes, list_versions, load_manifest


class GcReport(msgspec.Struct):
    kept_versions: list[int]
    deleted_versions: list[int]
    deleted_files: int
    freed_bytes: int


def collect_garbage(data: DataDir, keep: int) -> GcReport:
    """Delete versions older than the newest `keep` published ones, versions newer than
    CURRENT (a crashed run never published them), temporary debris, and every segment,
    text index and page table no kept version names. Run only under the writer lock.

    A damaged CURRENT (unreadable, or naming a version without a manifest) leaves every
    version in place, and a kept manifest that does not decode names nothing: its version
    cannot be served."""
    versions = list_versions(data)
    kept = _kept_versions(data, versions, keep)
    doomed = [v for v in versions if v not in kept]

    referenced: set[Path] = set()
    for version in kept:
        manifest = _kept_manifest(data, version)
        if manifest is None:
            continue
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
    for entry in [*data.versions.glob(".tmp-*"), *data.root.glob(".tmp-*")]:  # manifest, CURRENT
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


def drop_superseded(data: DataDir, versions: list[int]) -> int:
    """Delete `versions` (published by the running run while it read an entry, and since
    superseded by newer ones of it beyond `keep_versions`), with the text indexes and page
    tables that no other version on disk names; bytes freed. Segments stay: the run's newer
    versions name them, and what they no longer name goes at the run's collection."""
    doomed = set(versions)
    named: set[Path] = set()
    for version in list_versions(data):
        manifest = None if version in doomed else _kept_manifest(data, version)
        if manifest is not None:
            named |= _text_and_pages(data, manifest)
    freed = 0
    for version in versions:
        manifest = _kept_manifest(data, version)
        data.manifest(version).unlink(missing_ok=True)
        for path in _text_and_pages(data, manifest) - named if manifest else ():
            freed += _remove(path)
    return freed


def _text_and_pages(data: DataDir, manifest: Manifest) -> set[Path]:
    pages = {data.pages_file(s.pages_file) for s in manifest.sources.values() if s.pages_file}
    return {data.text_index(manifest.text_index), *pages}


def _kept_versions(data: DataDir, versions: list[int], keep: int) -> list[int]:
    try:
        current = current_version(data)
    except DamagedIndex:
        return versions  # CURRENT is damaged: which versions were published is unknown
    if current is None:
        return []
    if current not in versions:
        return versions  # as damaged: no run deletes the manifest CURRENT names
    published = [v for v in versions if v <= current]
    return published[-max(1, keep) :]


def _kept_manifest(data: DataDir, version: int) -> Manifest | None:
    try:
        return load_manifest(data, version)
    except DamagedIndex:
        return None


def _remove(path: Path) -> int:
    if path.is_dir():
        size = directory_bytes(path)
        shutil.rmtree(path, ignore_errors=True)
        return size
    size = path.stat().st_size
    path.unlink(missing_ok=True)
    return size
