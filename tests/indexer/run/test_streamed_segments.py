"""A run streams its pages into several segments of bounded size (setting segment_chunks):
real git repositories, the real model, a tiny bound so a small repository makes several."""

from __future__ import annotations

import msgspec
import numpy as np
import pytest

from docdex.index_format.config import SourceConfig
from docdex.index_format.layout import DataDir
from docdex.index_format.records import SegmentRef
from docdex.index_format.store import (
    current_version,
    load_current,
    load_manifest,
    load_pages,
    load_segment,
)
from docdex.indexer.run.storage.compaction import CompactionPolicy, choose_victims, size_tier
from docdex.server.engine import Engine, EngineSettings

from fixtures import pushed_workspace, search_index
from gitrepo import Workspace
from runs import assert_consistent, assert_tiers_within, live_state, make_config, run, token_files

BOUND = 4  # chunks per streamed segment in these tests
STREAMED = {"segment_chunks": BOUND, "merged_chunks": BOUND}  # streamed segments stay as written
TOPICS = ["replication", "backups", "tokens", "logging", "upgrades", "caching", "quotas"]
COPY = """# Shared appendix

## Glossary

A tombstone marks a chunk that is no longer live in a version of the index.
"""


def page(n: int, topic: str) -> str:
    """A page of three chunks, each with a marker word no other chunk has."""
    return (
        f"# Guide to {topic}\n\nThe {topic} guide (marker{n}x0) says what {topic} does.\n\n"
        f"## Setting up {topic}\n\nTurn {topic} on in the config file (marker{n}x1) first.\n\n"
        f"## Checking {topic}\n\nThe status page (marker{n}x2) shows whether {topic} works.\n"
    )


def corpus() -> dict[str, str]:
    """Seven distinct pages and two identical ones far apart in path order."""
    files = {f"guide/{n}-{topic}.md": page(n, topic) for n, topic in enumerate(TOPICS)}
    return {"aaa-copy.md": COPY, **files, "zzz-copy.md": COPY}


@pytest.fixture()
def ws(tmp_path) -> Workspace:
    return pushed_workspace(tmp_path, corpus())


def current_pages(data: DataDir) -> dict:
    manifest = load_current(data)
    return {p.doc_id: p for s in manifest.sources.values() for p in load_pages(data, s.pages_file)}


def chunk_vectors(data: DataDir) -> dict[str, np.ndarray]:
    """chunk id -> its window vectors, read through the page tables' refs."""
    manifest = load_current(data)
    segments = {s.id: load_segment(data, s.id, manifest.embedder.dim) for s in manifest.segments}
    out = {}
    for page_record in current_pages(data).values():
        for n, ref in enumerate(page_record.chunks):
            rows = segments[ref.segment].vectors[
                ref.window_start : ref.window_start + ref.window_count
            ]
            out[f"{page_record.doc_id}#chunk{n}"] = np.asarray(rows)
    return out


def assert_refs_point_home(data: DataDir) -> None:
    """Every ChunkRef names the segment, index and rows of exactly its chunk."""
    manifest = load_current(data)
    segments = {s.id: load_segment(data, s.id, manifest.embedder.dim) for s in manifest.segments}
    dead = {s.id: set(s.tombstones) for s in manifest.segments}
    for page_record in current_pages(data).values():
        for n, ref in enumerate(page_record.chunks):
            chunk = segments[ref.segment].chunks[ref.index]
            assert ref.index not in dead[ref.segment]
            assert chunk.chunk_id == f"{page_record.doc_id}#chunk{n}"
            assert (chunk.window_start, chunk.window_count) == (ref.window_start, ref.window_count)
            assert chunk.content_hash == ref.content_hash


def test_a_run_writes_several_segments_and_every_chunk_is_found(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    report = run(data, make_config(ws, **STREAMED), embedder)
    manifest = load_current(data)
    assert report.segments_written >= 4 and len(manifest.segments) == report.segments_written
    assert all(s.chunks >= BOUND for s in manifest.segments[:-1])  # pages are never split
    assert_consistent(data, ws)
    assert_refs_point_home(data)

    pages = current_pages(data)
    copies = {pages[f"docs:{p}"].chunks[0].segment for p in ("aaa-copy.md", "zzz-copy.md")}
    assert len(copies) == 2  # the identical pages landed in different segments...
    source = report.sources[0]
    assert source.chunks_reused == len(pages["docs:zzz-copy.md"].chunks)  # ...embedded once
    vectors = chunk_vectors(data)
    assert np.array_equal(vectors["docs:aaa-copy.md#chunk0"], vectors["docs:zzz-copy.md#chunk0"])

    engine = Engine.open(data, embedder, settings=EngineSettings(reranker="none"))
    try:
        for n in range(len(TOPICS)):
            for s in range(3):
                hits = engine.search(f"marker{n}x{s}").results
                assert hits[0].chunk_id == f"docs:guide/{n}-{TOPICS[n]}.md#chunk{s}"
    finally:
        engine.close()


@pytest.mark.parametrize("merged", [BOUND, 0])
def test_streamed_version_equals_a_single_segment_version(tmp_path, ws, embedder, merged):
    """Streamed segments as written (merged = BOUND: they are full), and merged at the end of
    the run into one graph, their tier overflowing (0: the default, eight streamed segments'
    worth; adr/0024): the same index either way."""
    streamed, single = DataDir(tmp_path / "streamed"), DataDir(tmp_path / "single")
    settings = {"segment_chunks": BOUND, "merged_chunks": merged, "max_segments": 2}
    report = run(streamed, make_config(ws, **settings), embedder)
    run(single, make_config(ws), embedder)
    assert len(load_current(single).segments) == 1
    assert report.segments_written >= 4
    assert len(load_current(streamed).segments) == (1 if merged == 0 else report.segments_written)
    assert report.compacted == (merged == 0)

    def content(data: DataDir):
        manifest, pages, dense, text = live_state(data)
        tables = {
            doc_id: (p.blob, p.title, p.created, [r.content_hash for r in p.chunks])
            for doc_id, p in pages.items()
        }
        vectors = {k: v.tobytes() for k, v in chunk_vectors(data).items()}
        return manifest.chunks, manifest.windows, tables, dense, text, vectors

    assert content(streamed) == content(single)
    queries = ["how do I turn on backups?", "marker3x2", "what is a tombstone", "quotas status"]
    engines = [Engine.open(d, embedder) for d in (streamed, single)]
    try:
        for query in queries:
            ids = [[h.chunk_id for h in e.search(query).results] for e in engines]
            assert ids[0] == ids[1], query
    finally:
        for engine in engines:
            engine.close()


def test_later_runs_reuse_vectors_and_a_push_writes_one_small_segment(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    config = make_config(ws, **STREAMED, max_segments=10)
    first = run(data, config, embedder)
    before = chunk_vectors(data)

    again = run(data, config, embedder, full=True)
    assert again.sources[0].chunks_embedded == 0 and again.windows_embedded == 0
    assert again.segments_written == first.segments_written
    after = chunk_vectors(data)
    assert after.keys() == before.keys()
    assert all(np.array_equal(after[k], before[k]) for k in before)
    assert_refs_point_home(data)

    ws.write("guide/2-tokens.md", page(2, "tokens") + "\n## Rotating tokens\n\nRotate weekly.\n")
    ws.commit_and_push()
    push = run(data, config, embedder)
    assert push.segments_written == 1
    assert (push.sources[0].chunks_embedded, push.sources[0].chunks_reused) == (1, 3)
    home = {r.segment for r in current_pages(data)["docs:guide/2-tokens.md"].chunks}
    assert [s.chunks for s in load_current(data).segments if s.id in home] == [4]  # that page
    assert_consistent(data, ws)
    assert_refs_point_home(data)


def test_compaction_merges_small_segments_and_leaves_full_ones(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    config = make_config(ws, **STREAMED, max_segments=2)
    run(data, config, embedder)
    full = {s.id for s in load_current(data).segments if s.chunks >= BOUND}
    assert len(full) >= 3
    compacted = 0
    for i in range(4):
        ws.write(f"notes/{i}.md", f"# Note {i}\n\nA short note (marker-note-{i}) about nothing.\n")
        ws.commit_and_push()
        report = run(data, config, embedder)
        compacted += report.compacted
        segments = load_current(data).segments
        assert full <= {s.id for s in segments}  # bulk segments are never merged for count
        assert_tiers_within(data, 2, BOUND)
        assert report.sources[0].chunks_embedded == 1
    assert compacted >= 1
    assert_consistent(data, ws)
    assert_refs_point_home(data)

    doomed = current_pages(data)["docs:guide/1-backups.md"].chunks[0].segment
    assert doomed in full
    ws.remove("guide/1-backups.md")  # half of its segment dies
    ws.commit_and_push()
    report = run(data, config, embedder)
    segments = load_current(data).segments
    assert report.compacted and doomed not in {s.id for s in segments}  # rewritten, dead gone
    assert all(s.chunks <= BOUND for s in segments if s.id not in full)
    assert report.sources[0].chunks_embedded == 0
    assert_consistent(data, ws)
    assert_refs_point_home(data)


def seg(name: str, chunks: int, dead: int = 0) -> SegmentRef:
    return SegmentRef(name, chunks, windows=chunks, bytes=0, tombstones=[*range(dead)])


def test_size_tiers_are_orders_of_magnitude_of_live_chunks():
    assert [size_tier(n) for n in (0, 1, 3, 4, 15, 16, 63, 64, 8191)] == [0, 0, 0, 1, 1, 2, 2, 3, 6]


def test_compaction_merges_a_size_tier_that_overflows_and_leaves_full_segments():
    policy = CompactionPolicy(max_segments=2, full_chunks=100)
    bulk = [seg(f"bulk{i}", 100) for i in range(6)]
    assert choose_victims([*bulk, seg("rest", 40)], policy) == []
    # three pushes of 1-3 chunks overflow tier 0; the 50-chunk segment (tier 2) stays
    pushes = [seg("a", 50), seg("b", 3), seg("c", 2), seg("d", 1)]
    assert [s.id for s in choose_victims(bulk + pushes, policy)] == ["b", "c", "d"]
    # two per tier is within the limit, however many tiers there are
    spread = [seg("t0", 2), seg("t0'", 3), seg("t1", 5), seg("t1'", 9), seg("t2", 20)]
    assert choose_victims(bulk + spread, policy) == []
    # a tier is counted by live chunks: 20 chunks with 17 dead are tier 0, and mostly dead
    shrunk = [seg("b", 3), seg("c", 2), seg("was-t2", 20, dead=17)]
    assert [s.id for s in choose_victims(shrunk, policy)] == ["b", "c", "was-t2"]


def test_compaction_rewrites_mostly_dead_segments_of_any_size():
    policy = CompactionPolicy(max_segments=2, full_chunks=100)
    bulk = [seg(f"bulk{i}", 100) for i in range(6)]
    assert [s.id for s in choose_victims([*bulk, seg("dead", 120, dead=40)], policy)] == ["dead"]
    assert [s.id for s in choose_victims([seg("small", 40, dead=13)], policy)] == ["small"]
    assert choose_victims([seg("sparse", 120, dead=30), seg("small", 40, dead=12)], policy) == []


def test_a_merge_whose_output_would_overflow_a_tier_takes_that_tier_along():
    policy = CompactionPolicy(max_segments=2, full_chunks=100)
    # tier 0 overflows; the mostly dead segment (62 live, 28 dead) joins the same merge;
    # their output (65 live) would make a third segment in tier 3 (64-255 live), so it joins
    segments = [seg("a", 1), seg("b", 1), seg("c", 1), seg("dead", 90, dead=28)]
    segments += [seg("g", 70), seg("h", 80)]
    assert [s.id for s in choose_victims(segments, policy)] == ["a", "b", "c", "dead", "g", "h"]
    # a merge of more than full_chunks is tiered by its last, partial output segment
    # (120 live: one full segment and 20 in tier 2, not 120 in tier 3 beside x and y)
    big = [seg(f"t2-{i}", 40) for i in range(3)] + [seg("x", 70), seg("y", 80)]
    assert [s.id for s in choose_victims(big, policy)] == ["t2-0", "t2-1", "t2-2"]


def test_streamed_segments_merge_into_one_graph_taking_the_smaller_tiers_along():
    """Above the streamed size the tiers go on up to full_chunks (adr/0024): a first run's
    seven streamed segments overflow their tier and merge, and its last, smaller segment and
    the pushes beside it come along (PowerShell-Docs: 8 segments become 1)."""
    from docdex.index_format.config import Settings

    policy = CompactionPolicy(max_segments=4, full_chunks=Settings().full_segment_chunks())
    streamed = [seg(f"s{i}", 8192) for i in range(7)]
    rest = [seg("last", 3600), seg("push", 3)]
    victims = choose_victims(streamed + rest, policy)
    assert [s.id for s in victims] == [s.id for s in streamed + rest]
    assert choose_victims(streamed[:4] + rest, policy) == []  # four per tier are allowed
    full = [seg(f"f{i}", policy.full_chunks) for i in range(6)]
    assert choose_victims(full + rest, policy) == []  # full segments only drop dead rows


def test_merged_segments_are_eight_streamed_ones_unless_token_vectors_are_on():
    from docdex.index_format.config import Settings

    assert Settings().full_segment_chunks() == 8 * 8192
    assert Settings(segment_chunks=100).full_segment_chunks() == 800
    assert Settings(segment_chunks=100, merged_chunks=250).full_segment_chunks() == 250
    assert Settings(segment_chunks=100, merged_chunks=50).full_segment_chunks() == 100
    assert Settings(segment_chunks=100, late_interaction=True).full_segment_chunks() == 100


def test_a_run_lets_go_of_the_model_it_loaded_before_it_compacts(
    tmp_path, ws, embedder, monkeypatch
):
    """The merge buffers of a compaction do not sit on top of the model's session: a run
    that loaded the model itself holds no reference to it by then (adr/0024)."""
    import gc
    import weakref

    from docdex.indexer.run import passage_model, publishing
    from docdex.indexer.run.pipeline import index_sources

    class Model:  # stands for a model the run loads: it holds the only reference
        def __getattr__(self, name):
            return getattr(embedder, name)

    loaded: list[weakref.ref] = []

    # load_passage_model's signature
    def load_model(settings, spec=None, info=None, model_environment=None):
        model = Model()
        loaded.append(weakref.ref(model))
        return model

    real_compact = publishing.compact
    held_at_compaction: list[bool] = []

    def compact(*args, **kwargs):
        gc.collect()
        held_at_compaction.append(any(ref() is not None for ref in loaded))
        return real_compact(*args, **kwargs)

    monkeypatch.setattr(passage_model, "load_passage_model", load_model)
    monkeypatch.setattr(publishing, "compact", compact)
    data = DataDir(tmp_path / "data")
    report = index_sources(data, make_config(ws, segment_chunks=BOUND, max_segments=2))
    assert report.sources[0].chunks_embedded > 0 and len(loaded) == 1
    assert report.compacted and held_at_compaction == [False]


def test_pushes_of_one_size_are_rewritten_once_per_tier_not_once_per_push():
    """200 pushes of 1-30 chunks beside a 2,968-chunk remainder of the first run (the shape
    of PowerShell-Docs' bench): size tiers rewrite each chunk a few times; merging all but
    the largest small segment (the policy before adr/0012) rewrote it 33 times."""
    policy = CompactionPolicy(max_segments=4, full_chunks=8192)
    sizes = [(7 * n) % 30 + 1 for n in range(200)]
    segments, rewritten = [seg("rest", 2968)], 0
    for n, size in enumerate(sizes):
        segments.append(seg(f"push{n}", size))
        victims = choose_victims(segments, policy)
        if victims:
            rewritten += sum(v.chunks for v in victims)
            ids = {v.id for v in victims}
            segments = [s for s in segments if s.id not in ids]
            segments.append(seg(f"merged{n}", sum(v.chunks for v in victims)))
        tiers = [size_tier(s.chunks) for s in segments]
        assert max(tiers.count(t) for t in tiers) <= policy.max_segments
    assert rewritten <= 4 * sum(sizes)
    assert "rest" in {s.id for s in segments}  # never merged with the pushes


def test_a_crash_between_segments_keeps_the_last_good_version(tmp_path, ws, embedder, monkeypatch):
    from docdex.indexer.run.storage import stream as segmentstream

    data = DataDir(tmp_path / "data")
    config = make_config(ws, segment_chunks=BOUND)
    run(data, config, embedder)
    before = live_state(data)
    for n, topic in enumerate(["tracing", "sharding", "alerts"], start=len(TOPICS)):
        ws.write(f"guide/{n}-{topic}.md", page(n, topic))
    ws.commit_and_push()

    real_write = segmentstream.write_segment
    written = []

    def crash_on_second(*args, **kwargs):
        if written:
            raise OSError("injected crash while writing the second segment")
        written.append(real_write(*args, **kwargs))
        return written[-1]

    monkeypatch.setattr(segmentstream, "write_segment", crash_on_second)
    with pytest.raises(OSError, match="injected"):
        run(data, config, embedder)
    monkeypatch.undo()
    assert current_version(data) == 1
    assert live_state(data)[1:] == before[1:]
    hits = search_index(data, embedder, "marker1x2", reranker="none").results
    assert hits[0].chunk_id == "docs:guide/1-backups.md#chunk2"

    report = run(data, config, embedder)
    assert report.published and report.segments_written >= 2
    assert_consistent(data, ws)
    assert_refs_point_home(data)
    kept = {s.id for v in report.gc.kept_versions for s in load_manifest(data, v).segments}
    on_disk = {p.name for p in data.segments.iterdir()}
    assert on_disk == kept and written[0].id not in on_disk  # the orphan is collected


def docs_pages(data: DataDir) -> dict[str, tuple[str, str]]:
    pages = current_pages(data).items()
    return {doc_id: (p.blob, p.modified) for doc_id, p in pages if doc_id.startswith("docs:")}


def test_a_source_failing_half_way_keeps_its_pages_and_the_others_publish(
    tmp_path, ws, embedder, monkeypatch
):
    """A source that fails after its old pages were tombstoned and new ones streamed: the
    run starts again without it, so it keeps its last pages and the other source publishes."""
    from docdex.indexer.git import blobs

    other = pushed_workspace(tmp_path / "other", {"manual.md": "# Manual\n\nThe other docs.\n"})
    data = DataDir(tmp_path / "data")
    config = make_config(ws, segment_chunks=BOUND)
    config = msgspec.structs.replace(
        config, sources=[*config.sources, SourceConfig(name="other", location=str(other.bare))]
    )
    run(data, config, embedder, full=False)
    before = docs_pages(data)
    for n in range(3):
        ws.write(f"guide/{n}-{TOPICS[n]}.md", page(n, TOPICS[n]) + f"\nEdited {n}.\n")
    ws.commit_and_push()
    other.write("manual.md", "# Manual\n\nThe other docs, about the okapi now.\n")
    other.commit_and_push()
    real_read = blobs.read_markdown
    reads = []

    def fail_on_third(repo, commit, entry, max_bytes):
        if entry.path.startswith("guide/"):
            reads.append(entry.path)
            if len(reads) == 3:
                raise OSError("injected: the object store went away")
        return real_read(repo, commit, entry, max_bytes)

    monkeypatch.setattr(blobs, "read_markdown", fail_on_third)
    report = run(data, config, embedder)
    monkeypatch.undo()
    outcome = {s.name: (s.status, s.error) for s in report.sources}
    assert outcome["other"][0] == "indexed"
    assert outcome["docs"][0] == "failed" and "injected" in outcome["docs"][1]
    manifest = load_current(data)
    assert manifest.version == 2 and manifest.sources["docs"].failed_since
    assert docs_pages(data) == before  # (their chunks may have moved: compaction)
    assert "okapi" in search_index(data, embedder, "okapi", 1).results[0].text
    assert_refs_point_home(data)

    run(data, config, embedder)
    assert not load_current(data).sources["docs"].last_error
    assert_refs_point_home(data)


def test_token_vectors_follow_chunks_into_every_streamed_segment(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    report = run(data, make_config(ws, segment_chunks=BOUND, late_interaction=True), embedder)
    assert report.segments_written >= 4 and all(token_files(data))
    assert report.sources[0].chunks_reused == 1  # the copy, tokens carried from its twin
    assert load_current(data).format_minor == 4  # 1.4; token files are optional in it
    assert_consistent(data, ws)


def test_a_merge_rewrites_only_the_page_tables_whose_chunks_moved(tmp_path, ws, embedder):
    """Two sources; pushes to one of them merge its push segments. The other source's page
    table is left as it was (same file), and every ref still points home."""
    other = pushed_workspace(tmp_path / "other", {"manual.md": "# Manual\n\nThe other docs.\n"})
    data = DataDir(tmp_path / "data")
    config = make_config(ws, max_segments=2)
    config = msgspec.structs.replace(
        config, sources=[*config.sources, SourceConfig(name="other", location=str(other.bare))]
    )
    run(data, config, embedder)
    before = load_current(data).sources["other"].pages_file
    compacted = 0
    for i in range(4):
        ws.write(f"notes/{i}.md", f"# Note {i}\n\nA short note (marker-note-{i}).\n")
        ws.commit_and_push()
        compacted += run(data, config, embedder).compacted
    assert compacted >= 1
    assert load_current(data).sources["other"].pages_file == before
    assert_tiers_within(data, 2)
    assert_refs_point_home(data)  # both sources' pages
