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
