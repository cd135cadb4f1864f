"""Version swaps: leases keep a search on one version, old versions close after their last
search, versions the server cannot serve are refused; and the whole thing under load: a
real server answering without pause while the real indexer publishes 20 versions."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import msgspec
import pytest

from docdex.index_format.config import Config, Settings, SourceConfig
from docdex.index_format.layout import DataDir
from docdex.index_format.store import load_manifest, point_current, write_manifest
from docdex.indexer.run.pipeline import index_sources
from docdex.server.boot import engine_loader
from docdex.server.engine import DEFAULT_SETTINGS, EngineSettings
from docdex.server.versions import NoVersion, VersionHolder
from docdex.serverproc import ServeProcess

from fixtures import http, index_workspace, wait_for
from gitrepo import Workspace
from searchers import HttpSearcher, McpSearcher

PAGES = ("alpha", "beta", "gamma")
QUERY = "zebra release marker"


def page_text(name: str, generation: int) -> str:
    return (
        f"# Page {name}\n\n"
        f"Release marker gen{generation} of page {name}. The zebra crossing is documented "
        f"here, generation gen{generation}.\n"
    )


def write_generation(ws: Workspace, generation: int) -> None:
    for name in PAGES:
        ws.write(f"{name}.md", page_text(name, generation))
    ws.commit_and_push(f"generation {generation}")


def config_for(ws: Workspace) -> Config:
    return Config(settings=Settings(), sources=[SourceConfig(name="docs", location=str(ws.bare))])


def publish(data: DataDir, ws: Workspace, generation: int, embedder) -> int:
    write_generation(ws, generation)
    report = index_sources(data, config_for(ws), embedder=embedder)
    assert report.published, report
    return report.version


def refuse_by_embedder(data: DataDir, base: int, new: int) -> None:
    """Publish `new`: the manifest of `base` claiming another embedder."""
    manifest = load_manifest(data, base)
    other = msgspec.structs.replace(manifest.embedder, id="some-other-model", dim=768)
    write_manifest(data, msgspec.structs.replace(manifest, version=new, embedder=other))
    point_current(data, new)


# --- the holder, in process ------------------------------------------------------------------


def indexed_generation(root: Path, generation: int, embedder) -> tuple[Workspace, DataDir, int]:
    """A workspace under `root` at `generation`, indexed into root/data; its version."""
    ws = Workspace(root)
    data = DataDir(root / "data")
    write_generation(ws, generation)
    return ws, data, index_workspace(data, ws, embedder)


@pytest.fixture(scope="module")
def two_versions(tmp_path_factory, embedder):
    ws, data, first = indexed_generation(tmp_path_factory.mktemp("versions"), 1, embedder)
    second = publish(data, ws, 2, embedder)
    return data, first, second


@pytest.fixture()
def data_copy(two_versions, tmp_path):
    data, first, second = two_versions
    shutil.copytree(data.root, tmp_path / "data")
    return DataDir(tmp_path / "data"), first, second


def test_a_lease_keeps_its_version_until_released(data_copy, embedder):
    data, first, second = data_copy
    load = engine_loader(data, embedder)
    holder = VersionHolder(data, load)
    holder.swap(load(first))
    with holder.acquire() as old:
        holder.refresh()  # CURRENT names the second version
        assert holder.serving == second
        stats = holder.stats()
        assert stats.held_old == [first] and stats.closed == 0 and stats.swaps == 2
        result = old.search(QUERY, 5)  # the held version still answers
        assert result.index_version == first
        assert all("gen1" in hit.text for hit in result.results)
        with holder.acquire() as new:
            assert new.version == second
    stats = holder.stats()
    assert stats.held_old == [] and stats.closed == 1
    holder.stop()
    assert holder.stats().closed == 2
    with pytest.raises(NoVersion, match="stopped"), holder.acquire():
        pass


def test_a_version_is_opened_while_the_model_is_still_loading(data_copy, embedder, monkeypatch):
    """A cold start opens the version (page tables, records, graphs) before the model is
    ready; only the warm-up search waits for it (adr/0025)."""
    from concurrent.futures import Future

    from docdex.server.engine.loaded import LoadedVersion

    data, _first, second = data_copy
    opened = threading.Event()
    real_load = LoadedVersion.load

    def load_and_tell(*args, **kwargs):
        version = real_load(*args, **kwargs)
        opened.set()
        return version

    monkeypatch.setattr(LoadedVersion, "load", load_and_tell)
    model: Future = Future()
    loaded: list = []
    loading = threading.Thread(target=lambda: loaded.append(engine_loader(data, model)(second)))
    loading.start()
    assert opened.wait(60)
    loading.join(0.2)
    assert loading.is_alive() and not loaded  # open, and waiting for the model to warm up
    model.set_result(embedder)
    loading.join(60)
    [engine] = loaded
    assert engine.search(QUERY, 5).index_version == second
    engine.close()


def test_a_cold_start_leaves_the_identifier_vocabulary_to_the_first_literal_query(
    data_copy, embedder
):
    """Listing the identifier terms (76 ms on PowerShell-Docs) is part of a swap's warm-up,
    not of a cold start's; a query without literals never lists them."""
    data, first, second = data_copy
    load = engine_loader(data, embedder)
    cold, swapped = load(first), load(second)
    assert (
        not cold.index.derived().identifier_vocabulary
        and swapped.index.derived().identifier_vocabulary
    )
    cold.search("zebra crossing", 3)
    assert not cold.index.derived().identifier_vocabulary
    cold.search("gen1_marker", 3)
    assert cold.index.derived().identifier_vocabulary
    cold.close()
    swapped.close()


@pytest.mark.parametrize("exact_rows", [DEFAULT_SETTINGS.exact_dense_max_rows, 0])
def test_a_warmed_version_answers_after_gc_deletes_its_segment_files(
    data_copy, embedder, exact_rows
):
    """Warm-up reads or opens what searches use: small segments their float32 copy only (the
    HNSW graph is never loaded for them); with exact search off, the graph and the vectors."""
    data, _first, second = data_copy
    settings = EngineSettings(exact_dense_max_rows=exact_rows)  # 0: HNSW everywhere
    engine = engine_loader(data, embedder, settings)(second)
    loaded = [s.graph_loaded for s in engine.index.segments()]
    assert loaded == [exact_rows == 0] * len(loaded)
    shutil.rmtree(data.segments)
    result = engine.search(QUERY, 5)
    assert result.results and all("gen2" in hit.text for hit in result.results)
    assert [s.graph_loaded for s in engine.index.segments()] == loaded
    engine.close()


def test_an_unservable_version_is_refused_and_the_old_one_keeps_serving(data_copy, embedder):
    data, _first, second = data_copy
    holder = VersionHolder(data, engine_loader(data, embedder))
    holder.refresh()
    assert holder.serving == second

    refuse_by_embedder(data, second, second + 1)
    holder.refresh()
    refused = holder.stats().refused_version
    assert refused is not None and refused.version == second + 1
    assert "some-other-model" in refused.error and "dim 768" in refused.error
    with holder.acquire() as engine:
        assert engine.version == second

    manifest = load_manifest(data, second)
    data.manifest(second + 2).write_bytes(
        msgspec.json.encode(msgspec.structs.replace(manifest, version=second + 2, format_major=2))
    )
    point_current(data, second + 2)
    holder.refresh()
    assert "format 2" in holder.stats().refused_version.error
    assert holder.serving == second

    point_current(data, second)  # CURRENT back on the served version: nothing is refused
    holder.refresh()
    assert holder.stats().refused_version is None and holder.serving == second
    holder.stop()


def test_nothing_to_serve_is_explained(tmp_path, embedder):
    empty = DataDir(tmp_path / "empty")
    holder = VersionHolder(empty, engine_loader(empty, embedder))
    holder.refresh()
    with pytest.raises(NoVersion, match="docdex index"), holder.acquire():
        pass
    assert holder.stats().serving is None and "docdex index" in holder.stats().error


def test_the_first_version_refused_leaves_nothing_to_serve(data_copy, embedder):
    data, _first, second = data_copy
    refuse_by_embedder(data, second, second + 1)
    holder = VersionHolder(data, engine_loader(data, embedder))
    holder.refresh()
    with pytest.raises(NoVersion, match="some-other-model"), holder.acquire():
        pass


# --- a real server under swaps ---------------------------------------------------------------


@pytest.fixture(scope="module")
def live(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("live")
    ws, data, base = indexed_generation(root, 0, embedder)
    server = ServeProcess(data.root, root / "server.log")
    server.wait_ready()
    yield data, ws, server, {base: 0}
    server.stop()


def test_searches_never_fail_or_mix_versions_while_20_versions_are_published(live, embedder):
    data, ws, server, generation_of = live
    stop = threading.Event()
    searchers = [HttpSearcher(server.url, QUERY, stop), McpSearcher(server.mcp_url, QUERY, stop)]
    for searcher in searchers:
        searcher.start()
    wait_for(lambda: all(s.answers for s in searchers), what="first answers")
    for generation in range(1, 21):
        generation_of[publish(data, ws, generation, embedder)] = generation
    last = max(generation_of)
    wait_for(
        lambda: all(s.answers[-1]["index_version"] == last for s in searchers),
        what=f"version {last} served",
    )
    stop.set()
    for searcher in searchers:
        searcher.join(timeout=30)

    answers = [a for s in searchers for a in s.answers]
    assert [f for s in searchers for f in s.failures] == []
    for answer in answers:
        generation = generation_of[answer["index_version"]]
        texts = [hit["text"] for hit in answer["results"]]
        assert len(texts) == len(PAGES), answer
        assert all(f"marker gen{generation} of" in t for t in texts), answer
    seen = {a["index_version"] for a in answers}
    print(
        f"\n{len(answers)} answers ({[len(s.answers) for s in searchers]}), "
        f"versions seen {sorted(seen)}"
    )
    assert len(seen) >= 5, seen  # the searches really ran across swaps
    health = wait_for(
        lambda: (h := http(f"{server.url}/health").json())["versions"]["held_old"] == [] and h,
        what="old versions closed",
    )
    assert health["index_version"] == last and health["status"] == "ok"
    assert health["versions"]["closed"] >= len(seen) - 1
    assert "closed version" in server.output()


def test_a_refused_version_shows_in_health_and_the_old_one_keeps_serving(live):
    data, _ws, server, generation_of = live
    served = max(generation_of)
    refused = served + 100
    refuse_by_embedder(data, served, refused)
    health = wait_for(
        lambda: (h := http(f"{server.url}/health").json())["refused_version"] and h,
        what="refusal in /health",
    )
    assert health["status"] == "degraded" and health["index_version"] == served
    assert health["refused_version"]["version"] == refused
    assert "some-other-model" in health["refused_version"]["error"]
    answer = http(f"{server.url}/api/search?q=zebra").json()
    assert answer["index_version"] == served
    assert f"refused version {refused}" in server.output()

    point_current(data, served)
    health = wait_for(
        lambda: (h := http(f"{server.url}/health").json())["status"] == "ok" and h,
        what="refusal cleared",
    )
    assert health["refused_version"] is None
