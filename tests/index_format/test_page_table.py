"""Page tables read lazily by incremental runs: StoredPage against PageRecord."""

from __future__ import annotations

import pytest

from docdex.index_format.layout import DataDir
from docdex.index_format.records import ChunkRef, PageRecord, StoredPage, with_refs
from docdex.index_format.store import load_pages, write_pages


def page(path: str, chunks: int) -> PageRecord:
    refs = [ChunkRef(f"seg{i % 3}", i, 2 * i, 2, f"hash{i}") for i in range(chunks)]
    return PageRecord(
        doc_id=f"docs:{path}",
        source="docs",
        path=path,
        blob="b" * 40,
        title=path,
        description="",
        tags=["t"],
        created="2026-01-01T00:00:00Z",
        modified="2026-01-02T00:00:00Z",
        commit="c" * 40,
        size=10,
        chunks=refs,
    )


# 15/16 and 65,535/65,536 chunks are where msgpack's array header changes width.
SIZES = [0, 1, 15, 16, 65_535, 65_536]


@pytest.fixture
def table(tmp_path) -> tuple[DataDir, list[PageRecord]]:
    data = DataDir(tmp_path)
    data.pages.mkdir(parents=True)
    pages = [page(f"p{n}.md", n) for n in SIZES]
    write_pages(data, "docs-1.msgpack", pages)
    return data, pages


def test_stored_pages_count_and_decode_their_refs_like_page_records(table) -> None:
    data, pages = table
    stored = load_pages(data, "docs-1.msgpack", StoredPage)
    assert [p.chunk_count for p in stored] == SIZES == [p.chunk_count for p in pages]
    for lazy, full in zip(stored, pages, strict=True):
        assert lazy.refs() == full.chunks
        assert (lazy.path, lazy.commit, lazy.tags) == (full.path, full.commit, full.tags)


def test_stored_pages_write_back_the_same_bytes_and_mix_with_new_ones(table) -> None:
    data, pages = table
    stored = load_pages(data, "docs-1.msgpack", StoredPage)
    moved = with_refs(stored[2], [ChunkRef("seg9", 0, 0, 1, "new")] * 3)
    write_pages(data, "docs-2.msgpack", [*stored[:2], moved, *stored[3:]])
    again = load_pages(data, "docs-2.msgpack")
    assert again[:2] == pages[:2] and again[3:] == pages[3:]
    assert again[2].path == "p15.md" and [r.segment for r in again[2].chunks] == ["seg9"] * 3
    write_pages(data, "docs-3.msgpack", stored)
    assert (
        data.pages_file("docs-3.msgpack").read_bytes()
        == data.pages_file("docs-1.msgpack").read_bytes()
    )
