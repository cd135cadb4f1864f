"""Read-only views of a data directory for `docdex inspect`: the published versions, one
source's state and pages, one document's chunks, each read from disk when asked for."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from docdex.errors import NotFound
from docdex.index_format.layout import DataDir, IndexFormatError
from docdex.index_format.records import (
    ChunkRecord,
    FileProblem,
    Manifest,
    PageRecord,
    SourceState,
)
from docdex.index_format.store import (
    current_version,
    directory_bytes,
    list_versions,
    load_manifest,
    load_pages,
    load_segment,
)


class VersionInfo(msgspec.Struct):
    version: int
    current: bool
    created_at: str
    commits: dict[str, str]
    segments: int
    chunks: int
    vectors: int
    bytes: int


class VersionDetails(msgspec.Struct):
    """A version and the entries (a source's default ref, each of its other refs) it
    indexes, by name."""

    info: VersionInfo
    entries: list[SourceState]


class ChunkInfo(msgspec.Struct):
    chunk_id: str
    headings: list[str]
    breadcrumb: str
    start_line: int
    end_line: int
    windows: int
    chars: int


class DocInfo(msgspec.Struct):
    page: PageRecord
    chunks: list[ChunkInfo]


class SourceDetails(msgspec.Struct):
    state: SourceState
    pages: list[str]
    problems: list[FileProblem]


def version_details(data: DataDir) -> list[VersionDetails]:
    """Every published version (up to the one CURRENT names) with the state of each entry
    it indexes, oldest first."""
    data.check()
    current = current_version(data)
    out = []
    for version in list_versions(data):
        if current is None or version > current:
            continue  # never published
        manifest = load_manifest(data, version)
        entries = [manifest.sources[name] for name in sorted(manifest.sources)]
        out.append(VersionDetails(_version_info(data, manifest, version == current), entries))
    return out


def _version_info(data: DataDir, manifest: Manifest, is_current: bool) -> VersionInfo:
    text_bytes = directory_bytes(data.text_index(manifest.text_index))
    return VersionInfo(
        version=manifest.version,
        current=is_current,
        created_at=manifest.created_at,
        commits={name: s.commit for name, s in manifest.sources.items()},
        segments=len(manifest.segments),
        chunks=manifest.chunks,
        vectors=manifest.windows,
        bytes=text_bytes + sum(s.bytes for s in manifest.segments),
    )


def current_manifest(data: DataDir) -> Manifest:
    data.check()
    version = current_version(data)
    if version is None:
        raise IndexFormatError(f"{data.root} has no published version yet; run `docdex index`")
    return load_manifest(data, version)


def source(data: DataDir, name: str) -> SourceDetails:
    """A source's state, page paths and file problems in the current version."""
    manifest = current_manifest(data)
    state = manifest.sources.get(name)
    if state is None:
        known = ", ".join(sorted(manifest.sources)) or "none"
        raise NotFound(f"source {name!r} is not in the index (indexed sources: {known})")
    pages = load_pages(data, state.pages_file)
    return SourceDetails(state=state, pages=[p.path for p in pages], problems=state.problems)


def document(data: DataDir, doc_id: str) -> DocInfo:
    """A page (`SOURCE:PATH`) of the current version and a summary of each of its chunks."""
    manifest = current_manifest(data)
    name, _, path = doc_id.partition(":")
    state = manifest.sources.get(name)
    page = None
    if state is not None:
        page = next((p for p in load_pages(data, state.pages_file) if p.path == path), None)
    if page is None:
        raise NotFound(
            f"no document {doc_id!r} in version {manifest.version} "
            "(ids look like SOURCE:PATH, e.g. docs:guide/install.md)"
        )
    segments: dict[str, Sequence[ChunkRecord]] = {}
    chunks = []
    for ref in page.chunks:
        if ref.segment not in segments:
            segments[ref.segment] = load_segment(data, ref.segment, manifest.embedder.dim).chunks
        chunk = segments[ref.segment][ref.index]
        chunks.append(
            ChunkInfo(
                chunk_id=chunk.chunk_id,
                headings=chunk.headings,
                breadcrumb=" › ".join(chunk.headings),
                start_line=chunk.start_line,
                end_line=chunk.end_line,
                windows=chunk.window_count,
                chars=len(chunk.text),
            )
        )
    return DocInfo(page=page, chunks=chunks)
