"""Each source ranked by its own statistics (adr/0044): adding an unrelated source to the
same data directory leaves the ranking of a search within a source as it was."""

from __future__ import annotations

import pytest

from docdex.index_format.config import Config, SourceConfig, save_config
from docdex.index_format.layout import DataDir
from docdex.indexer.run.pipeline import index_sources
from docdex.server.engine import Engine, EngineSettings, Fusion

from fixtures import pushed_workspace

QUERY = "alpha beta"
FILLER = "It is configured in the settings file and documented with examples below."
DOCS = {  # in this source "beta" is rarer than "alpha": the beta page ranks first by BM25
    "cache.md": f"# Cache\n\nThe alpha cache keeps results. {FILLER}\n",
    "worker.md": f"# Worker\n\nThe alpha worker drains jobs. {FILLER}\n",
    "queue.md": f"# Queue\n\nThe beta queue orders jobs. {FILLER}\n",
    "install.md": f"# Install\n\nRun the installer once. {FILLER}\n",
    "upgrade.md": f"# Upgrade\n\nStop the server first. {FILLER}\n",
}
# another project, where "beta" is everywhere: over the whole index it is the common word
OTHER = {
    f"release-{n}.md": f"# Release {n}\n\nThe beta channel got build {n}. {FILLER}\n"
    for n in range(40)
}


def _index(data: DataDir, sources: list[SourceConfig], embedder) -> None:
    save_config(data, Config(sources=sources))
    assert index_sources(data, Config(sources=sources), embedder=embedder).published


def _order(data: DataDir, embedder, fusion: Fusion) -> list[str]:
    engine = Engine.open(data, embedder, settings=EngineSettings(fusion=fusion))
    try:
        hits = engine.search(QUERY, 5, engine.scope(source="docs")).results
        return [hit.chunk_id for hit in hits]
    finally:
        engine.close()


@pytest.fixture(scope="module")
def before_and_after(tmp_path_factory, embedder) -> dict[Fusion, tuple[list[str], list[str]]]:
    root = tmp_path_factory.mktemp("statistics")
    docs = SourceConfig(name="docs", location=str(pushed_workspace(root / "docs", DOCS).bare))
    other = SourceConfig(name="other", location=str(pushed_workspace(root / "other", OTHER).bare))
    data = DataDir(root / "data")
    data.ensure()
    fusions = (Fusion.BM25, Fusion.ADAPTIVE, Fusion.RRF)
    _index(data, [docs], embedder)
    alone = {f: _order(data, embedder, f) for f in fusions}
    _index(data, [docs, other], embedder)
    return {f: (alone[f], _order(data, embedder, f)) for f in fusions}


@pytest.mark.parametrize("fusion", [Fusion.BM25, Fusion.ADAPTIVE, Fusion.RRF])
def test_adding_an_unrelated_source_leaves_a_sources_hit_order(before_and_after, fusion):
    alone, beside_other = before_and_after[fusion]
    assert alone == beside_other
    assert all(chunk.startswith("docs:") for chunk in beside_other)


def test_the_rare_word_of_the_source_leads_its_bm25_list(before_and_after):
    alone, beside_other = before_and_after[Fusion.BM25]
    assert alone[0].startswith("docs:queue.md") and beside_other[0].startswith("docs:queue.md")


TIED = "# Note\n\nThe gamma setting keeps the delta cache warm between runs.\n"


def _tied_order(root, first: str, second: str, embedder) -> list[str]:
    """Two pages of the same text, `first` indexed in one run and `second` in the next (so
    in another Tantivy segment): their BM25 order."""
    ws = pushed_workspace(root / "docs", {first: TIED})
    data = DataDir(root / "data")
    data.ensure()
    source = SourceConfig(name="docs", location=str(ws.bare))
    _index(data, [source], embedder)
    ws.write(second, TIED)
    ws.commit_and_push("the same text again")
    _index(data, [source], embedder)
    engine = Engine.open(data, embedder, settings=EngineSettings(fusion=Fusion.BM25))
    try:
        hits = engine.search("gamma delta", 5, engine.scope(source="docs")).results
        assert len(hits) == 2 and hits[0].score == hits[1].score
        return [hit.path for hit in hits]
    finally:
        engine.close()


def test_equal_bm25_scores_come_in_chunk_order_whichever_segment_holds_them(tmp_path, embedder):
    earlier_first = _tied_order(tmp_path / "one", "a.md", "b.md", embedder)
    later_first = _tied_order(tmp_path / "two", "b.md", "a.md", embedder)
    assert earlier_first == later_first == ["a.md", "b.md"]
