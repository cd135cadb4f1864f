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
from docdex.index_format.ref_names import base_of, entries_of, resolve_ref
from docdex.index_format.run_progress import (
    READING,
    embedding_sentence,
    partial_entries,
    partial_sentence,
    read_progress,
    reading_sentence,
    waiting_chunks,
)
from docdex.index_format.store import (
    current_version,
    directory_bytes,
    list_versions,
    load_current,
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
    waiting: int = 0  # chunks without vectors yet (published keywords first)


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


def indexing(data: DataDir) -> str:
    """What a run is doing now, in a sentence ("" when no run is): the pages it reads, or
    how far the current version's waiting chunks are embedded; and what the current
    version holds of each entry published while it was read."""
    progress = read_progress(data)
    manifest = load_current(data)
    partial = [partial_sentence(k, s, progress) for k, s in partial_entries(manifest).items()]
    if progress is not None and progress.phase == READING:
        return "; ".join([reading_sentence(progress), *partial])
    waiting = waiting_chunks(manifest)
    if manifest is None or not waiting:
        return "; ".join(partial)
    return "; ".join([*partial, embedding_sentence(waiting, manifest.chunks, progress)])


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
        waiting=waiting_chunks(manifest),
        bytes=text_bytes + sum(s.bytes for s in manifest.segments),
    )


def _entry_at(manifest: Manifest, key: str, ref: str) -> str:
    """The entry of the indexed source `key` belongs to, at `ref` ("": `key` itself)."""
    if not ref:
        return key
    base = base_of(key, manifest.sources[key])
    found = resolve_ref(manifest.sources, base, ref)
    if found is None:
        known = ", ".join(name or "(default)" for name in entries_of(manifest.sources, base))
        raise NotFound(f"source {base!r} does not index ref {ref!r}; its refs: {known}")
    return found


def current_manifest(data: DataDir) -> Manifest:
    data.check()
    version = current_version(data)
    if version is None:
        raise IndexFormatError(f"{data.root} has no published version yet; run `docdex index`")
    return load_manifest(data, version)


def source(data: DataDir, name: str, ref: str = "") -> SourceDetails:
    """A source's state, page paths and file problems in the current version (at `ref`:
    the entry of that branch or tag)."""
    manifest = current_manifest(data)
    state = manifest.sources.get(name)
    if state is None:
        known = ", ".join(sorted(manifest.sources)) or "none"
        raise NotFound(f"source {name!r} is not in the index (indexed sources: {known})")
    state = manifest.sources[_entry_at(manifest, name, ref)]
    pages = load_pages(data, state.pages_file)
    return SourceDetails(state=state, pages=[p.path for p in pages], problems=state.problems)


def document(data: DataDir, doc_id: str, ref: str = "") -> DocInfo:
    """A page (`SOURCE:PATH`, at `ref` when given) of the current version and a summary of
    each of its chunks."""
    manifest = current_manifest(data)
    name, _, path = doc_id.partition(":")
    if ref and name in manifest.sources:
        name = _entry_at(manifest, name, ref)
        doc_id = f"{name}:{path}"
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
    for located in page.chunks:
        if located.segment not in segments:
            segment = load_segment(data, located.segment, manifest.embedder.dim)
            segments[located.segment] = segment.chunks
        chunk = segments[located.segment][located.index]
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
