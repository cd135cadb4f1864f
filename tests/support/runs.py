"""Indexing a workspace's repository and checking what the runs published: the served
version's pages, dense segments and text index agree with each other and with the tree, its
size tiers stay bounded, and which of its segments carry token vectors."""

from __future__ import annotations

from collections import Counter

import tantivy

from docdex.index_format.config import Config, Settings, SourceConfig
from docdex.index_format.layout import DataDir
from docdex.index_format.store import load_current, load_pages, load_segment
from docdex.index_format.token_vectors import TOKEN_FILES
from docdex.indexer.run.pipeline import index_sources
from docdex.indexer.run.report import RunReport
from docdex.indexer.run.storage.compaction import size_tier

from gitrepo import Workspace


def make_config(ws: Workspace, **settings) -> Config:
    return Config(
        settings=Settings(**settings),
        sources=[SourceConfig(name="docs", location=str(ws.bare))],
    )


def run(data: DataDir, config: Config, embedder, **kwargs) -> RunReport:
    return index_sources(data, config, embedder=embedder, **kwargs)


def live_state(data: DataDir):
    """Pages, live chunk ids from the dense segments, and the text index's chunk ids."""
    manifest = load_current(data)
    pages = {}
    for state in manifest.sources.values():
        pages.update({p.doc_id: p for p in load_pages(data, state.pages_file)})
    dense = set()
    for ref in manifest.segments:
        segment = load_segment(data, ref.id, manifest.embedder.dim)
        dead = set(ref.tombstones)
        dense.update(c.chunk_id for i, c in enumerate(segment.chunks) if i not in dead)
    index = tantivy.Index.open(str(data.text_index(manifest.text_index)))
    searcher = index.searcher()
    hits = searcher.search(tantivy.Query.all_query(), limit=100_000).hits
    text = {searcher.doc(addr)["chunk_id"][0] for _score, addr in hits}
    return manifest, pages, dense, text


def push_new_pages(
    data: DataDir, config: Config, ws: Workspace, embedder, pushes: int = 4
) -> list[RunReport]:
    """`pushes` pushes that each add one page, each indexed; their reports in order."""
    reports = []
    for i in range(pushes):
        ws.write(f"page{i}.md", f"# Page {i}\n\nSection number {i} about topic {i * 7}.\n")
        ws.commit_and_push()
        reports.append(run(data, config, embedder))
    return reports


def assert_tiers_within(data: DataDir, max_segments: int, full_chunks: int = 8192) -> None:
    """No size tier of the served version's small segments holds more than `max_segments`."""
    small = [s for s in load_current(data).segments if s.chunks < full_chunks]
    tiers = Counter(size_tier(s.chunks - len(s.tombstones)) for s in small)
    assert max(tiers.values(), default=0) <= max_segments, tiers


def assert_consistent(data: DataDir, ws: Workspace) -> dict:
    """The served version is exactly the tree at the branch head, on every side."""
    manifest, pages, dense, text = live_state(data)
    assert {p.path for p in pages.values()} == ws.tracked_markdown()
    from_pages = {f"{p.doc_id}#chunk{n}" for p in pages.values() for n in range(len(p.chunks))}
    assert from_pages == dense == text
    assert manifest.chunks == len(dense)
    return pages


def token_files(data: DataDir) -> list[bool]:
    """Per segment of the current version: does it have all token files?"""
    manifest = load_current(data)
    return [all((data.segment(s.id) / f).is_file() for f in TOKEN_FILES) for s in manifest.segments]
