"""Keywords first: a run with many texts to embed publishes them for BM25 at once, then
embeds them a version at a time (docs/adr/0042-keywords-first.md). Real repositories, the
real model; the setting `keywords_first` set low so that a small corpus takes that path."""

from __future__ import annotations

import json

import numpy as np
import pytest
from embedders import Counting

from docdex.index_format.layout import DataDir
from docdex.index_format.records import Manifest
from docdex.index_format.store import load_current, load_pages, load_segment
from docdex.index_format.verify import verify_data
from docdex.indexer.run.pipeline import index_sources

from fixtures import pushed_workspace, search_index
from gitrepo import Workspace
from pagetext import corpus_at_head
from runs import assert_consistent, make_config, token_files

TOPICS = ["replication", "backups", "tokens", "logging", "upgrades", "caching", "quotas"]
KEYWORDS = {"keywords_first": 2}  # any batch of more than two new texts waits for vectors


def page(n: int, topic: str) -> str:
    return (
        f"# Guide to {topic}\n\nThe {topic} guide (marker{n}x0) says what {topic} does.\n\n"
        f"## Setting up {topic}\n\nTurn {topic} on in the config file (marker{n}x1) first.\n"
    )


def corpus() -> dict[str, str]:
    files = {f"guide/{n}-{topic}.md": page(n, topic) for n, topic in enumerate(TOPICS)}
    return {**files, "copy-a.md": page(0, "replication"), "copy-b.md": page(0, "replication")}


@pytest.fixture()
def ws(tmp_path) -> Workspace:
    return pushed_workspace(tmp_path, corpus())


def waiting(manifest: Manifest) -> int:
    return sum(s.chunks - len(s.tombstones) for s in manifest.segments if s.keywords_only)


def vectors_by_chunk(data: DataDir) -> dict[str, np.ndarray]:
    manifest = load_current(data)
    segments = {s.id: load_segment(data, s.id, manifest.embedder.dim) for s in manifest.segments}
    out = {}
    for state in manifest.sources.values():
        for record in load_pages(data, state.pages_file):
            for n, ref in enumerate(record.chunks):
                rows = segments[ref.segment].vectors[
                    ref.window_start : ref.window_start + ref.window_count
                ]
                out[f"{record.doc_id}#chunk{n}"] = np.asarray(rows)
    return out


def test_keywords_version_first_then_vectors_the_same_as_one_shot(tmp_path, ws, embedder):
    staged, once = DataDir(tmp_path / "staged"), DataDir(tmp_path / "once")
    seen: list[Manifest] = []

    def embed_while() -> bool:
        seen.append(load_current(staged))
        return True

    report = index_sources(
        staged, make_config(ws, **KEYWORDS), embedder=embedder, embed_while=embed_while
    )
    keywords = seen[0]
    assert keywords.segments and all(s.keywords_only and not s.windows for s in keywords.segments)
    assert waiting(keywords) == keywords.chunks
    assert report.embedded_versions and report.waiting_chunks == 0
    final = load_current(staged)
    assert final.version == report.embedded_versions[-1] > keywords.version
    assert waiting(final) == 0 and final.text_index == keywords.text_index
    assert_consistent(staged, ws)
    assert verify_data(staged.root).ok

    index_sources(once, make_config(ws, keywords_first=0), embedder=embedder)
    staged_vectors, once_vectors = vectors_by_chunk(staged), vectors_by_chunk(once)
    assert staged_vectors.keys() == once_vectors.keys()
    for chunk_id, rows in once_vectors.items():
        np.testing.assert_array_equal(staged_vectors[chunk_id], rows)
    assert final.windows == load_current(once).windows


def test_a_keywords_version_is_verified_and_searched_by_bm25(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    index_sources(data, make_config(ws, **KEYWORDS), embedder=embedder, embed_while=None)
    manifest = load_current(data)
    assert waiting(manifest) == manifest.chunks > 0
    assert verify_data(data.root).ok
    found = search_index(data, embedder, "marker3x1")
    assert found.results[0].path == "guide/3-logging.md"
    assert {hit.match for hit in found.results} == {"keywords"}
    assert not found.low_confidence  # the word is there: no vector is no reason to doubt it


def test_a_stopped_run_resumes_and_embeds_nothing_twice(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    config = make_config(ws, **KEYWORDS)
    failing = Counting(embedder, fail_at=1)
    with pytest.raises(RuntimeError, match="killed"):
        index_sources(data, config, embedder=failing)
    assert waiting(load_current(data)) == load_current(data).chunks  # the keywords version serves

    resumed = Counting(embedder)
    report = index_sources(data, config, embedder=resumed)
    assert report.waiting_chunks == 0 and waiting(load_current(data)) == 0
    assert len(resumed.texts) == len(set(resumed.texts))  # each text once
    once = Counting(embedder)
    index_sources(DataDir(tmp_path / "once"), make_config(ws, keywords_first=0), embedder=once)
    assert sorted(resumed.texts) == sorted(once.texts)
    assert_consistent(data, ws)


def test_a_small_push_is_embedded_before_it_is_published(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    config = make_config(ws, **KEYWORDS)
    index_sources(data, config, embedder=embedder)
    ws.write("guide/new.md", "# New\n\nOne short page (marker9x9).\n")
    ws.commit_and_push()
    report = index_sources(data, config, embedder=embedder, embed_while=None)
    assert report.published and not report.embedded_versions
    assert waiting(load_current(data)) == 0


def test_a_fully_embedded_staged_index_ranks_as_a_one_shot_one(tmp_path, shared, embedder):
    pages = corpus_at_head("apm-docs", tmp_path / "bundle").pages
    chosen = dict(sorted(pages.items())[:12])  # real pages, few enough for a test
    ws = pushed_workspace(tmp_path / "apm", chosen)
    staged, once = DataDir(tmp_path / "staged"), DataDir(tmp_path / "once")
    index_sources(staged, make_config(ws, keywords_first=16), embedder=embedder)
    index_sources(once, make_config(ws, keywords_first=0), embedder=embedder)
    assert load_current(staged).version > 3  # keywords, then several slices of vectors
    lines = (shared / "eval" / "apm.queries.jsonl").read_text().splitlines()
    asked = [json.loads(line) for line in lines]
    queries = [q["query"] for q in asked if any(r["path"] in chosen for r in q["relevant"])]
    assert len(queries) > 30
    for query in queries[::4]:
        a, b = search_index(staged, embedder, query), search_index(once, embedder, query)
        assert [(h.chunk_id, h.score, h.match) for h in a.results] == [
            (h.chunk_id, h.score, h.match) for h in b.results
        ], query
        assert a.low_confidence == b.low_confidence, query


def test_with_token_vectors_the_embedded_slices_carry_them(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    index_sources(data, make_config(ws, late_interaction=True, **KEYWORDS), embedder=embedder)
    manifest = load_current(data)
    assert waiting(manifest) == 0 and token_files(data) == [True] * len(manifest.segments)
    assert search_index(data, embedder, "marker4x1").results[0].path == "guide/4-upgrades.md"
