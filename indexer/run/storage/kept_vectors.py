"""The vectors of the versions kept before the one a run starts from: their segments stay
on disk until garbage collection drops them (`keep_versions`), so a text they hold is
copied, not embedded again. A file excluded and included again, a page reverted to an
older text, an embedder switched away and back: each finds its chunks here.

Only the page tables are read, and only those the run's starting version does not share
(an unchanged source keeps one page table across versions): a few small files."""

from __future__ import annotations

from docdex.index_format.layout import DataDir, IndexFormatError
from docdex.index_format.records import ChunkRef, Manifest
from docdex.index_format.store import list_versions, load_manifest, load_pages


def kept_vectors(
    data: DataDir, previous: Manifest | None, damaged: frozenset[str]
) -> dict[str, ChunkRef]:
    """The chunks with vectors of the versions on disk older than `previous`, by content
    hash (the newest version's first), none of a `damaged` segment."""
    if previous is None:
        return {}
    read = {state.pages_file for state in previous.sources.values()}
    found: dict[str, ChunkRef] = {}
    for version in sorted((v for v in list_versions(data) if v < previous.version), reverse=True):
        try:
            manifest = load_manifest(data, version)
        except (IndexFormatError, OSError):
            continue  # a damaged or half-collected version lends nothing
        for state in manifest.sources.values():
            if not state.pages_file or state.pages_file in read:
                continue
            read.add(state.pages_file)
            try:
                pages = load_pages(data, state.pages_file)
            except (IndexFormatError, OSError):
                continue
            for ref in (ref for page in pages for ref in page.chunks):
                if ref.has_vectors and ref.segment not in damaged:
                    found.setdefault(ref.content_hash, ref)
    return found
