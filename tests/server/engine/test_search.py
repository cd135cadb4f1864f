"""Hybrid search on a real index: the real pipeline over small git repositories, the real
model, Tantivy and hnswlib. One index per module (versions 1 and 2) keeps this fast."""

from __future__ import annotations

import struct
from pathlib import Path
from types import SimpleNamespace

import msgspec
import numpy as np
import pytest

from docdex.errors import InvalidArgument
from docdex.index_format import token_vectors as li
from docdex.index_format.config import Config, Settings, SourceConfig
from docdex.index_format.layout import DamagedIndex, DataDir, IndexFormatError
from docdex.index_format.records import ChunkRecord, EmbedderInfo
from docdex.indexer.run.pipeline import index_sources
from docdex.model.late_interaction import embed_with_tokens
from docdex.server.engine import (
    DEFAULT_SETTINGS,
    DenseTrust,
    Engine,
    EngineSettings,
    Fusion,
    Scope,
    SearchResult,
    SearchStages,
    confidence,
)
from docdex.server.engine.dense import best_cosine, chunk_cosines
from docdex.server.engine.fusion import adaptive, fuse, is_prose
from docdex.server.engine.loaded import LoadedVersion
from docdex.server.engine.query import QueryContext, QueryProfile, profile_query
from docdex.server.engine.rerank import (
    CrossEncoderReranker,
    MaxSimReranker,
    RerankerError,
    resolve_reranker,
)
from docdex.server.engine.retrieval import Candidate
from docdex.server.engine.settings import ConfidenceSettings

from fixtures import pushed_workspace

DOCS = {
    "guide/install.md": """# Installing Widget

Widget runs on Windows 10 and later. The installer writes its settings below the
registry key `HKLM\\SOFTWARE\\WOW6432Node\\Widget` on 64-bit systems.

## Replaying a capture

Replay a captured session faster with `widget replay --replay-speed-factor 4`; the
default speed factor is 1.
""",
    "guide/upgrade.md": """# Upgrading Widget

To upgrade, install the new version over the old one. The installer keeps your settings
and restarts the Widget service when the installation is complete.
""",
    "reference/config.md": """# Configuration

## Database

Set `max_connections = 50` in `widget.toml` to limit how many database connections the
service opens at once. Larger pools use more memory.

## Legacy switches

The zanzibarquux switch enables the old storage engine; it is kept for compatibility.

## Release notes

Release v1.2.3 fixed the crash on start-up when the configuration file was empty.
""",
    "troubleshooting/errors.md": """# Errors

## Enrollment fails with 0x801C03F3

The error 0x801C03F3 means the device object was deleted from the directory before the
enrollment finished. Re-register the device and start again.

## Listing files

Use `Get-ChildItem -Recurse` in PowerShell to list the log files the agent wrote.
""",
    "troubleshooting/network.md": """# Network problems

When the agent cannot reach the service, check the proxy and the firewall. Allow
outbound HTTPS to the service endpoints and make sure TLS inspection is turned off.
""",
}

OTHER = {
    "setup.md": """# Setting up Gadget

To install Gadget, download the installer and run it. The installation takes a minute.
""",
    "garden.md": """# Garden care

Water tomato plants in the morning and keep the soil moist but not wet.
""",
}

HOSTILE = [
    "foo:bar",
    '"unclosed quote',
    "(x",
    "a AND",
    "it's",
    "!!!",
    "???",
    "*",
    "\\",
    "title:install OR body:(",
    "NOT",
    "a OR OR b",
    "[1 TO",
    "~~~ ^^^ ###",
    "-",
    "ñandú ☃ 数据库",
    "x" * 1999,
    "\x00\x01 control",
    "path:/etc/passwd",
    "select * from users; --",
]


def token_arrays_of(embedder, texts: list[str], token_dim: int = li.TOKEN_DIM) -> li.TokenArrays:
    """Packed token arrays of a segment whose chunks embed `texts`, in order."""
    _, _, per_text = embed_with_tokens(embedder, texts)
    return packed(per_text, embedder.info.dim, token_dim)


def packed(per_text, dim: int, token_dim: int) -> li.TokenArrays:
    packer = li.TokenPacker(dim, token_dim)
    for vectors, ids in per_text:
        packer.add(vectors, ids)
    return packer.finish()


def add_token_vectors(data: DataDir, embedder) -> None:
    """The reranker's token arrays for every segment (the indexer will write these; here the
    chunk's breadcrumb and raw text stand in for its embedded input)."""
    for seg_dir in data.segments.iterdir():
        if (seg_dir / li.TOKOFFSETS_FILE).exists() or seg_dir.name.startswith(".tmp"):
            continue
        from docdex.index_format.store import load_segment

        segment = load_segment(data, seg_dir.name, embedder.info.dim)
        inputs = [" › ".join(c.headings) + "\n" + c.text for c in segment.chunks]
        arrays = token_arrays_of(embedder, inputs)
        li.write_token_arrays(seg_dir, arrays)


@pytest.fixture(scope="module")
def index(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("search")
    docs = pushed_workspace(root / "docs", DOCS)
    other = pushed_workspace(root / "other", OTHER)
    data = DataDir(root / "data")
    config = Config(
        settings=Settings(keep_versions=5),
        sources=[
            SourceConfig(name="docs", location=str(docs.bare)),
            SourceConfig(name="other", location=str(other.bare)),
        ],
    )
    index_sources(data, config, embedder=embedder)
    add_token_vectors(data, embedder)
    # version 2: the legacy section is rewritten, so its old chunk is tombstoned
    docs.write(
        "reference/config.md",
        DOCS["reference/config.md"].replace(
            "The zanzibarquux switch enables the old storage engine",
            "The legacy switch was removed in version 2",
        ),
    )
    docs.commit_and_push("retire the switch")
    index_sources(data, config, embedder=embedder)
    add_token_vectors(data, embedder)
    return data


@pytest.fixture(scope="module")
def opened(index, embedder):
    """Engines over the current version, one per set of settings read when a version opens
    (e.g. `exact_dense_max_rows=0`: every segment searched with its HNSW graph)."""
    engines: dict[tuple, Engine] = {}

    def open_with(**settings) -> Engine:
        key = tuple(sorted(settings.items()))
        if key not in engines:
            engines[key] = Engine.open(index, embedder, settings=EngineSettings(**settings))
        return engines[key]

    yield open_with
    for engine in engines.values():
        engine.close()


@pytest.fixture(scope="module")
def engine(opened) -> Engine:
    return opened()


@pytest.fixture(scope="module")
def version(index) -> LoadedVersion:
    """The current version as the engine loads it, for the tests of its parts."""
    loaded = LoadedVersion.load(index, None, DEFAULT_SETTINGS)
    yield loaded
    loaded.close()


def search(
    engine: Engine,
    query: str,
    num_results: int = 10,
    source: str = "",
    path_prefix: str = "",
    one_per_page: bool = False,
    **settings,
) -> SearchResult:
    """One search of `source` (every entry when empty) under `path_prefix`, with `settings`
    (e.g. `fusion="rrf"`, `reranker="none"`) in place of the engine's."""
    if settings:
        engine = engine.with_settings(msgspec.structs.replace(engine.settings, **settings))
    scope = Scope(frozenset([source] if source else []), path_prefix)
    return engine.search(query, num_results, scope, one_per_page)


def texts(result) -> list[str]:
    return [h.text for h in result.results]


# --- literal identifiers ------------------------------------------------------------------


@pytest.mark.parametrize(
    "identifier",
    [
        "WOW6432Node",
        "max_connections",
        "Get-ChildItem",
        "v1.2.3",
        "--replay-speed-factor",
        "0x801C03F3",
        "x801c03f3",
        "wow6432node",
    ],
)
@pytest.mark.parametrize("reranker", ["none", "default"])
def test_literal_identifiers_are_found_as_typed(engine, identifier, reranker):
    result = search(engine, identifier, num_results=3, reranker=reranker)
    assert identifier.lower().lstrip("x") in result.results[0].text.lower()
    assert result.results[0].match in ("bm25", "both")
    assert not result.low_confidence


def test_identifier_inside_a_question(engine):
    result = search(engine, "what does error 0x801C03F3 mean during enrollment?")
    assert "0x801C03F3" in result.results[0].text


# --- hostile input --------------------------------------------------------------------------


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_never_raise(engine, query):
    result = search(engine, query, num_results=5)
    assert result.index_version == engine.version
    assert len(result.results) <= 5


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"query": ""}, "empty"),
        ({"query": "   \n\t"}, "empty"),
        ({"query": "x" * 2001}, "limit is 2000"),
        ({"query": "install", "num_results": 0}, "between 1 and 100"),
        ({"query": "install", "num_results": 101}, "between 1 and 100"),
        ({"query": "install", "source": "nope"}, "valid sources: docs, other"),
    ],
)
def test_bad_requests_raise_search_error(engine, kwargs, message):
    with pytest.raises(InvalidArgument, match=message):
        search(engine, **kwargs)


def test_search_error_is_a_value_error():
    assert issubclass(InvalidArgument, ValueError)


# --- filters ---------------------------------------------------------------------------------


@pytest.mark.parametrize("exact_rows", [DEFAULT_SETTINGS.exact_dense_max_rows, 0])
def test_source_filter_applies_before_ranking(opened, exact_rows):
    engine = opened(exact_dense_max_rows=exact_rows)  # 0: HNSW + filter
    unfiltered = search(engine, "Widget installer settings", num_results=2)
    assert {h.source for h in unfiltered.results} == {"docs"}  # docs wins overall
    result = search(engine, "Widget installer settings", num_results=2, source="other")
    assert [h.source for h in result.results] == ["other", "other"]
    assert result.results[0].path == "setup.md"


@pytest.mark.parametrize("exact_rows", [DEFAULT_SETTINGS.exact_dense_max_rows, 0])
def test_path_prefix_applies_before_ranking(opened, exact_rows):
    engine = opened(exact_dense_max_rows=exact_rows)
    result = search(engine, "install widget", path_prefix="troubleshooting/")
    assert result.results
    assert all(h.path.startswith("troubleshooting/") for h in result.results)
    none = search(engine, "install widget", path_prefix="no/such/dir (x)[")
    assert none.results == []


def test_hnsw_and_exact_search_agree(engine, opened):
    exact = search(engine, "proxy and firewall", reranker="none")
    assert all(s.exact for s in engine.index.segments())
    graphs = opened(exact_dense_max_rows=0)
    approx = search(graphs, "proxy and firewall", reranker="none")
    assert all(s.graph_loaded and not s.exact for s in graphs.index.segments())
    assert [h.chunk_id for h in approx.results] == [h.chunk_id for h in exact.results]


# --- versions and tombstones ------------------------------------------------------------------


def test_tombstoned_chunks_never_appear(index, engine, embedder):
    assert any(s.live_chunks < s.chunks for s in engine.index.segments())  # there are tombstones
    for reranker in ("none", "default"):
        result = search(engine, "zanzibarquux", num_results=20, reranker=reranker)
        assert all("zanzibarquux" not in t for t in texts(result))
        assert all(engine.index.chunk(h.chunk_id) is not None for h in result.results)
    old = Engine.open(index, embedder, version=1)
    try:
        assert "zanzibarquux" in search(old, "zanzibarquux").results[0].text
    finally:
        old.close()


def test_chunk_ids_resolve_through_the_page_tables(engine):
    page = next(p for p in engine.index.pages.values() if len(p.chunks) > 1)
    for n in range(len(page.chunks)):
        assert engine.index.chunk(f"{page.doc_id}#chunk{n}").chunk_id == f"{page.doc_id}#chunk{n}"
    bad = ["#chunk01", "#chunk-1", "#chunk\u00b2", f"#chunk{len(page.chunks)}", "#chunk", ""]
    assert all(engine.index.chunk(page.doc_id + suffix) is None for suffix in bad)
    assert engine.index.chunk("nosuchsource:nosuch.md#chunk0") is None


def test_a_searchs_stages_run_alone_search_as_its_retrieval_does(engine):
    """The benches time a search's stages one at a time (`SearchStages`): each stage runs
    the search a retrieval runs, on the query checked and analysed the same way."""
    query = "proxy and firewall"
    candidates = engine.retrieve(query).candidates
    stages = SearchStages(engine, query)
    assert stages.bm25() == sum(1 for c in candidates if c.bm25_rank) > 0
    assert stages.dense(stages.embed()) == sum(1 for c in candidates if c.dense_rank) > 0
    with pytest.raises(InvalidArgument, match="query is empty"):
        SearchStages(engine, " ")


def test_served_pages_are_page_records_without_the_reuse_fields(index):
    from docdex.index_format.records import ServedPage
    from docdex.index_format.store import load_current, load_pages

    for state in load_current(index).sources.values():
        records = load_pages(index, state.pages_file)
        served = load_pages(index, state.pages_file, ServedPage)
        assert [p.doc_id for p in served] == [p.doc_id for p in records]
        for record, page in zip(records, served, strict=True):
            assert [(c.segment, c.index) for c in page.chunks] == [
                (c.segment, c.index) for c in record.chunks
            ]
            assert all(not hasattr(c, "content_hash") for c in page.chunks)


@pytest.mark.parametrize("exact_rows", [DEFAULT_SETTINGS.exact_dense_max_rows, 0])
def test_chunk_cosines_are_each_chunks_best_window(index, embedder, exact_rows):
    """The cosines of lexical-only candidates, in one product per segment, from the float32
    copy or read with pread: each chunk's best window, 0.0 for a chunk without one."""
    settings = EngineSettings(exact_dense_max_rows=exact_rows)  # 0: pread
    loaded = LoadedVersion.load(index, None, settings)
    qvec = embedder.embed_query("how is the release marker documented?")
    for seg in loaded.segments:
        indexes = list(range(len(seg.chunks)))[::-1]  # any order, not only the rows' own
        vectors = np.asarray(seg.segment.vectors, dtype=np.float32)
        owners = seg.segment.owners
        expected = [
            float((vectors[owners == i] @ qvec).max()) if np.any(owners == i) else 0.0
            for i in indexes
        ]
        cosines = chunk_cosines(seg, indexes, qvec)
        assert cosines.tolist() == pytest.approx(expected, abs=1e-6)
        assert chunk_cosines(seg, [], qvec).shape == (0,)
    loaded.close()


@pytest.mark.parametrize("reranker", ["none", "maxsim"])
def test_a_search_reads_each_chunk_record_once(index, embedder, monkeypatch, reranker):
    """The fusion (heading overlap, literals), the rerank, the confidence and the hits all
    read a candidate's record: one `pread` and decode each, not one per reader."""
    from docdex.index_format.store import ChunkTable

    reads: list[tuple[int, int]] = []
    read = ChunkTable.__getitem__
    monkeypatch.setattr(
        ChunkTable, "__getitem__", lambda t, i: reads.append((id(t), i)) or read(t, i)
    )
    engine = Engine.open(index, embedder)  # no heading terms kept from earlier queries
    result = search(engine, "max_connections pool limit", 10, reranker=reranker)
    engine.close()
    assert result.results
    assert reads and len(reads) == len(set(reads))


def test_heading_terms_kept_between_queries_are_bounded(index, embedder):
    settings = EngineSettings(section_terms_kept=3)
    loaded = LoadedVersion.load(index, None, settings)
    engine = Engine(loaded, embedder, settings)
    for query in ("how is the release marker documented?", "configure the storage engine"):
        search(engine, query, 10)
        assert 0 < len(loaded.derived.section_terms) <= 3
        assert 0 < len(loaded.derived.heading_terms) <= 3
    engine.close()


def test_chunk_records_decode_lazily_and_a_corrupt_file_is_refused(index, tmp_path):
    from docdex.index_format.store import CHUNKS_FILE, ChunkTable, load_manifest, load_segment

    ref = load_manifest(index, 1).segments[0]
    table = load_segment(index, ref.id, 384).chunks
    path = index.segment(ref.id) / CHUNKS_FILE
    records = msgspec.msgpack.decode(path.read_bytes(), type=list[ChunkRecord])
    assert isinstance(table, ChunkTable) and list(table) == records
    assert table[-1] == records[-1] and table[1:3] == records[1:3]
    with pytest.raises(IndexError):
        table[len(records)]
    segment = load_segment(index, ref.id, 384)
    rows = segment.vector_rows.read(1, 3)
    assert rows.dtype == np.float32
    assert np.array_equal(rows, segment.vectors[1:4].astype(np.float32))
    with pytest.raises(DamagedIndex, match="shorter than its rows"):
        segment.vector_rows.read_ranges([0, len(segment.owners) - 1], [1, 2])  # past the end
    nested = b"\x91" * 200_001 + b"\xc0"  # msgspec raises RecursionError on it
    for damage in (path.read_bytes()[:-7], b"", b"\x93\x01\x02\x03", nested):
        broken = tmp_path / "chunks.msgpack"
        broken.write_bytes(damage)
        with pytest.raises(msgspec.DecodeError):
            ChunkTable(broken)
    # a version with checksums skips decoding every record at open (its bytes are hashed);
    # the framing is still checked
    odd = tmp_path / "odd.msgpack"
    odd.write_bytes(msgspec.msgpack.encode([records[0], {"not": "a chunk record"}]))
    with pytest.raises(msgspec.DecodeError):
        ChunkTable(odd)
    assert len(ChunkTable(odd, decode_all=False)) == 2
    (tmp_path / "short.msgpack").write_bytes(path.read_bytes()[:-7])
    with pytest.raises(msgspec.DecodeError):
        ChunkTable(tmp_path / "short.msgpack", decode_all=False)


def test_an_engine_refuses_another_embedder(index, embedder):
    class Other:
        info = EmbedderInfo(id="some-other-model", dim=768, sha256="0")

    with pytest.raises(IndexFormatError, match="some-other-model"):
        Engine.open(index, Other())


def test_an_engine_without_a_version_is_refused(tmp_path, embedder):
    data = DataDir(tmp_path / "empty")
    data.ensure()
    with pytest.raises(IndexFormatError, match="no published version"):
        Engine.open(data, embedder)


# --- results -----------------------------------------------------------------------------


def test_hits_carry_raw_markdown_and_provenance(engine):
    result = search(engine, "Get-ChildItem", num_results=1)
    hit = result.results[0]
    assert "`Get-ChildItem -Recurse`" in hit.text  # raw markdown, backticks kept
    assert hit.headings == ["Errors", "Listing files"]
    assert hit.heading == "Errors › Listing files"
    assert hit.doc_id == "docs:troubleshooting/errors.md"
    assert hit.chunk_id.startswith(hit.doc_id + "#chunk")
    assert len(hit.commit) == 40
    assert 1 <= hit.start_line <= hit.end_line
    assert result.took_ms > 0


def test_low_confidence_flags_off_topic_queries_only(engine):
    off = search(engine, "best recipe for banana bread with walnuts")
    assert off.low_confidence
    good = search(engine, "how do I upgrade widget to a new version")
    assert not good.low_confidence
    assert good.results[0].path == "guide/upgrade.md"


COUNTING = ConfidenceSettings(absence_min_chunks=1)  # this index is small; the rule under
# test is the one for an index of 100+ chunks


@pytest.fixture
def counting(engine) -> Engine:
    return engine.with_settings(EngineSettings(confidence=COUNTING))


def test_low_confidence_flags_a_near_miss_naming_what_the_docs_never_mention(counting):
    # The corpus's own words, but it never names Kubernetes or its clusters.
    near = search(counting, "upgrade the widget service on Kubernetes clusters")
    assert near.low_confidence
    assert near.results[0].path == "guide/upgrade.md"  # still ranked, only flagged
    # The same question in words the documents use is not flagged.
    assert not search(counting, "upgrade the widget service").low_confidence


def _profile(version: LoadedVersion, text: str) -> QueryProfile:
    return profile_query(text, version.analysis)


def _candidate(version: LoadedVersion, chunk_id: str, dense: float = 0.5) -> Candidate:
    position, index = version.locate(chunk_id)
    return Candidate(version.segments[position], position, index, dense=dense)


def test_an_everyday_word_the_docs_never_use_is_not_a_missing_subject(version, counting):
    text = "upgrade widget to a new version halfway"
    assert confidence.absent_share(version, _profile(version, text), 1) >= COUNTING.absent_share
    assert [w for _, w in confidence.absent_words(version, _profile(version, text))] == ["halfway"]
    result = search(counting, text)
    assert not result.low_confidence
    assert result.results[0].path == "guide/upgrade.md"


class Recording:
    """The embedder, noting every query it embeds."""

    def __init__(self, embedder) -> None:
        self.embedder, self.asked = embedder, []

    def embed_query(self, text: str) -> np.ndarray:
        self.asked.append(text)
        return self.embedder.embed_query(text)


def test_an_absent_word_is_the_subject_when_dropping_it_brings_the_question_closer(
    version, embedder
):
    """ "halfway" is absent: it is the subject only if the question without it comes at least
    `subject_gain` closer to the corpus than the best hit of the question with it."""
    recording = Recording(embedder)
    settings = EngineSettings(confidence=COUNTING)

    def context(text: str) -> QueryContext:
        return QueryContext(version, settings, recording, _profile(version, text), Scope())

    without = best_cosine(version, embedder.embed_query("upgrade widget"), Scope(), settings)
    gain = COUNTING.subject_gain
    farther = [_candidate(version, "docs:guide/upgrade.md#chunk0", without - gain - 0.01)]
    as_close = [_candidate(version, "docs:guide/upgrade.md#chunk0", without - gain + 0.01)]
    closer = confidence.absence_is_the_subject
    assert closer(context("upgrade widget halfway"), farther)
    assert not closer(context("upgrade widget halfway"), as_close)
    assert recording.asked == ["upgrade widget", "upgrade widget"]  # the question without it
    assert closer(context("upgrade widget on Kubernetes"), as_close)  # a name: no embedding
    assert recording.asked == ["upgrade widget", "upgrade widget"]


def test_names_a_thing():
    assert confidence.names_a_thing("iOS", 0) and confidence.names_a_thing("HoloLens", 3)
    assert confidence.names_a_thing("2022", 5) and confidence.names_a_thing("Slack", 4)
    assert not confidence.names_a_thing("Continue", 0)  # the first word's capital says nothing
    assert not confidence.names_a_thing("halfway", 4)


def test_a_name_the_corpus_knows_but_no_hit_mentions(version):
    profile = _profile(version, "list the log files with PowerShell")
    elsewhere = [_candidate(version, "docs:guide/upgrade.md#chunk0")]
    listing = next(
        f"docs:troubleshooting/errors.md#chunk{n}"
        for n in range(len(version.pages["docs:troubleshooting/errors.md"].chunks))
        if "PowerShell" in version.chunk(f"docs:troubleshooting/errors.md#chunk{n}").text
    )
    here = [_candidate(version, listing)]
    share = confidence.unmatched_names_share
    assert share(version, profile, elsewhere, 1) >= COUNTING.absent_share
    assert share(version, profile, here + elsewhere, 1) == 0.0
    assert share(version, _profile(version, "list the log files"), elsewhere, 1) == 0.0  # no name


def test_absent_share_weighs_missing_terms_by_idf(version):
    def share(text: str) -> float:
        return confidence.absent_share(version, _profile(version, text), 1)

    assert share("replay kubernetes") > 0.5  # the absent term is the rarer one
    assert share("replay capture") == 0.0
    assert share("how would you replay it") == 0.0  # function words never count


def test_absence_says_nothing_in_a_small_index(version):
    least = ConfidenceSettings().absence_min_chunks
    assert version.searcher.num_docs < least
    assert confidence.absent_share(version, _profile(version, "replay kubernetes"), least) == 0.0


@pytest.mark.parametrize("fusion", ["bm25", "dense"])
def test_one_retriever_alone(engine, fusion):
    result = search(engine, "WOW6432Node registry key", fusion=fusion, reranker="none")
    scores = [hit.score for hit in result.results]
    assert scores == sorted(scores, reverse=True)
    if fusion == "bm25":
        assert result.results[0].match in ("bm25", "both")
        assert "WOW6432Node" in result.results[0].text
        assert all(h.score > 0 for h in result.results if h.match != "dense")
    else:
        assert all(-1.0 <= s <= 1.0 for s in scores)  # cosines


def _pair(best_cosine: float) -> tuple[Candidate, Candidate, list[Candidate]]:
    """A chunk first by BM25 and 22nd by cosine, one first by cosine and absent from the BM25
    list (the dense list's best cosine being `best_cosine`), and the 20 between them."""
    lexical = Candidate(None, 0, 0, bm25=9.0, bm25_rank=1, dense=best_cosine - 0.3)
    semantic = Candidate(None, 0, 1, dense=best_cosine)
    between = [Candidate(None, 0, 2 + i, dense=best_cosine - 0.01 * (i + 1)) for i in range(20)]
    return lexical, semantic, [lexical, semantic, *between]


K, TRUST = DEFAULT_SETTINGS.adaptive_k, DEFAULT_SETTINGS.dense_trust


def test_adaptive_fusion_scores_first_in_both_lists_one():
    first = Candidate(None, 0, 0, bm25=5.0, bm25_rank=1, dense=0.5, dense_rank=1)
    other = Candidate(None, 0, 1, bm25=1.0, bm25_rank=2, dense=0.3, dense_rank=2)
    adaptive([first, other], K, TRUST)
    assert first.score == pytest.approx(1.0)
    assert 0 < other.score < first.score
    adaptive([], K, TRUST)  # nothing to rank is not an error


def test_adaptive_fusion_trusts_the_dense_list_more_when_its_best_match_is_close():
    lexical, semantic, everything = _pair(best_cosine=0.6)  # a technical corpus: equal weights
    adaptive(everything, K, TRUST)
    assert lexical.score > semantic.score  # found by both beats first in one
    lexical, semantic, everything = _pair(best_cosine=0.8)  # the model on its own ground
    adaptive(everything, K, TRUST)
    assert semantic.score > lexical.score
    wary = DenseTrust(start=0.85, slope=20.0)  # a start above .80: equal weights
    adaptive(everything, K, wary)
    assert lexical.score > semantic.score


def test_a_request_in_prose_is_fused_by_reciprocal_ranks_alone():
    question = "how do I raise max_connections when the server sits behind a busy proxy"
    profile = profile_query(question)
    assert profile.literals == ["max_connections"] and len(question.split()) == 13
    holds = Candidate(None, 0, 0, bm25=1.0, bm25_rank=2, dense=0.5)
    other = Candidate(None, 0, 1, bm25=2.0, bm25_rank=1, dense=0.6)
    holding = SimpleNamespace(text="Set max_connections = 50 in docdex.toml.", headings=["Limits"])
    holds._record = holding  # type: ignore[assignment]
    other._record = SimpleNamespace(text="A proxy in front.", headings=["Proxies"])  # type: ignore[assignment]

    def literal_wins(**settings) -> bool:
        chosen = msgspec.structs.replace(DEFAULT_SETTINGS, **settings)
        fuse(QueryContext(None, chosen, None, profile, None), [holds, other])  # type: ignore[arg-type]
        return holds.score > other.score

    assert literal_wins(prose_words=0)  # every query alike: the literal bonus lifts it
    assert not literal_wins()  # the default: a 13-word question is prose, ranks alone
    assert not literal_wins(prose_fusion=Fusion.ADAPTIVE)
    assert literal_wins(prose_fusion=Fusion.ADAPTIVE, prose_literals=True)
    assert literal_wins(prose_words=14)  # shorter than prose


def test_a_short_question_is_prose_only_when_asked():
    short = profile_query("How do I rotate keys?")
    assert short.question and not short.identifier
    assert not is_prose(short, DEFAULT_SETTINGS)  # the default: 5 words are not prose
    asking = msgspec.structs.replace(DEFAULT_SETTINGS, prose_questions=True)
    assert is_prose(short, asking)
    assert not is_prose(profile_query("rotate signing keys"), asking)  # no question
    assert not is_prose(profile_query("what does E1234 mean"), asking)  # an identifier
    assert profile_query("signing keys?").question


def test_every_fusion_ranks(engine):
    for fusion in (Fusion.ADAPTIVE, Fusion.RRF, "weighted"):
        result = search(engine, "max_connections", fusion=fusion)
        assert "max_connections" in result.results[0].text


def test_one_per_page(engine):
    result = search(engine, "widget", num_results=10, one_per_page=True)
    doc_ids = [h.doc_id for h in result.results]
    assert len(doc_ids) == len(set(doc_ids)) > 1
    scores = [h.score for h in result.results]
    assert scores == sorted(scores, reverse=True)


# --- rerankers -------------------------------------------------------------------------------


def test_default_reranker_is_maxsim_when_token_vectors_exist(version, engine):
    assert isinstance(resolve_reranker("default", version), MaxSimReranker)
    assert resolve_reranker("none", version) is None
    with pytest.raises(RerankerError, match="unknown reranker"):
        resolve_reranker("bogus", version)
    assert engine.models.reranker_name() == "maxsim"


def test_maxsim_reranker_moves_scores(engine):
    plain = search(engine, "device object deleted before enrollment", reranker="none")
    reranked = search(engine, "device object deleted before enrollment", reranker="maxsim")
    assert reranked.results[0].path == "troubleshooting/errors.md"
    assert [h.score for h in plain.results] != [h.score for h in reranked.results]


def test_token_arrays_round_trip(tmp_path, embedder):
    texts_in = ["Widget installs on Windows.", "Set max_connections in widget.toml. " * 30]
    arrays = token_arrays_of(embedder, texts_in, token_dim=64)
    assert arrays.vectors.dtype == np.int8 and arrays.vectors.shape[1] == 64
    assert arrays.offsets.tolist()[0] == 0 and arrays.offsets[-1] == len(arrays.ids)
    li.write_token_arrays(tmp_path, arrays)
    loaded = li.load_token_vectors(tmp_path, chunks=2)
    assert loaded is not None and loaded.offsets.tolist() == arrays.offsets.tolist()
    assert li.load_token_vectors(tmp_path, chunks=3) is None  # does not fit: ignored
    # the compressed vectors keep the query-token similarities MaxSim uses
    _, _, per = embed_with_tokens(embedder, texts_in)
    full = per[0][0]
    approx = loaded.dequantised(0) @ loaded.projection.T
    assert np.abs((full @ full.T) - (approx @ full.T)).max() < 0.15
    merged = li.concat_chunks([(loaded, 1), (loaded, 0)], embedder.info.dim, token_dim=64)
    assert merged.offsets.tolist() == [0, arrays.offsets[2] - arrays.offsets[1], len(arrays.ids)]


def test_token_packer_fits_its_basis_on_a_prefix(embedder):
    _, _, per = embed_with_tokens(
        embedder, [f"chunk {i}: widget setting number {i}" for i in range(6)]
    )
    assert per[0][0].dtype == np.float16  # kept compact until packed
    whole = packed(per, embedder.info.dim, token_dim=16)
    packer = li.TokenPacker(embedder.info.dim, token_dim=16, fit_tokens=len(per[0][1]))
    for vectors, ids in per:
        packer.add(vectors, ids)
    streamed = packer.finish()
    assert streamed.offsets.tolist() == whole.offsets.tolist()
    assert streamed.ids.tolist() == whole.ids.tolist()
    assert streamed.vectors.shape == whole.vectors.shape
    back, ids = li.chunk_tokens(streamed, 0)  # the basis was fitted on exactly this chunk
    assert np.abs(back - per[0][0].astype(np.float32)).max() < 0.05
    assert ids.tolist() == per[0][1].tolist()


# --- cross-encoder ---------------------------------------------------------------------------


def _varint(n: int) -> bytes:
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, value: bytes | int | str) -> bytes:
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    raw = value.encode() if isinstance(value, str) else value
    return _varint(number << 3 | 2) + _varint(len(raw)) + raw


def _tensor_info(name: str, elem_type: int, dims: list[int | str]) -> bytes:
    dim_msgs = b"".join(
        _field(1, _field(1, d) if isinstance(d, int) else _field(2, d)) for d in dims
    )
    tensor_type = _field(1, elem_type) + _field(2, dim_msgs)
    return _field(1, name) + _field(2, _field(1, tensor_type))


def _node(op: str, inputs: list[str], outputs: list[str], attrs: bytes = b"") -> bytes:
    body = b"".join(_field(1, i) for i in inputs) + b"".join(_field(2, o) for o in outputs)
    return body + _field(4, op) + attrs


def tiny_cross_encoder_onnx() -> bytes:
    """ONNX protobuf, written by hand (the `onnx` package is not installed): logits[b, 0] =
    sum of the unmasked input ids of pair b, so the "relevance" of a passage is known."""
    float_t, int64_t = 1, 7
    cast = _field(5, _field(1, "to") + _field(20, 2) + _field(3, float_t))
    axes = _field(5, _field(1, "axes") + _field(20, 7) + _field(8, 1))
    keep = _field(5, _field(1, "keepdims") + _field(20, 2) + _field(3, 1))
    nodes = [
        _node("Cast", ["input_ids"], ["ids_f"], cast),
        _node("Cast", ["attention_mask"], ["mask_f"], cast),
        _node("Mul", ["ids_f", "mask_f"], ["masked"]),
        _node("ReduceSum", ["masked"], ["logits"], axes + keep),
    ]
    graph = b"".join(_field(1, n) for n in nodes) + _field(2, "tiny")
    graph += _field(11, _tensor_info("input_ids", int64_t, ["batch", "seq"]))
    graph += _field(11, _tensor_info("attention_mask", int64_t, ["batch", "seq"]))
    graph += _field(12, _tensor_info("logits", float_t, ["batch", 1]))
    opset = _field(1, "") + _field(2, 11)
    return _field(1, 7) + _field(2, "docdex-test") + _field(7, graph) + _field(8, opset)


@pytest.fixture(scope="module")
def cross_encoder_dir(tmp_path_factory, embedder) -> Path:
    from docdex.model.files import tokenizer_path

    path = tmp_path_factory.mktemp("cross-encoder")
    (path / "model.onnx").write_bytes(tiny_cross_encoder_onnx())
    (path / "tokenizer.json").write_bytes(tokenizer_path().read_bytes())
    return path


def test_cross_encoder_scores_pairs(cross_encoder_dir):
    reranker = CrossEncoderReranker.load(cross_encoder_dir)
    scores = reranker.scores("widget", ["a", "zzz zzz zzz"])
    encodings = [reranker.tokenizer.encode("widget", p) for p in ["a", "zzz zzz zzz"]]
    assert scores.tolist() == [float(sum(e.ids)) for e in encodings]
    assert struct.pack("<f", scores[1]) != struct.pack("<f", scores[0])


def test_cross_encoder_reorders_the_head(engine, cross_encoder_dir):
    result = search(engine, "widget", reranker=f"cross-encoder:{cross_encoder_dir}")
    reranker = CrossEncoderReranker.cached(str(cross_encoder_dir))
    passages = [" › ".join(h.headings) + "\n" + h.text for h in result.results]
    expected = reranker.scores("widget", passages)
    assert list(expected) == sorted(expected, reverse=True)


def test_cross_encoder_directory_must_be_complete(tmp_path):
    with pytest.raises(RerankerError, match="tokenizer.json"):
        CrossEncoderReranker.load(tmp_path)
