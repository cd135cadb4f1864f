"""Vectors stay reusable while a kept version holds them: a file excluded and re-included
versions later, and an embedder switched away and back, copy the vectors of the older
version still on disk instead of embedding again; once garbage collection has dropped that
version (keep_versions), they are embedded again."""

from __future__ import annotations

import msgspec

from docdex.index_format.config import Config, Settings, SourceConfig, save_config
from docdex.index_format.layout import DataDir
from docdex.index_format.store import list_versions
from docdex.indexer.run.pipeline import index_sources

from fixtures import FAQ_E1234, build_workspace

HANDBOOK = "".join(
    f"## Rule {n}\n\nRule {n} of the handbook: rotate key {n} every {n * 7} days.\n\n"
    for n in range(12)
)


def run(data: DataDir, config: Config, embedder=None):
    data.ensure()
    save_config(data, config)
    report = index_sources(data, config, embedder=embedder)
    assert report.published, report
    return report


def reincluded_after(tmp_path, embedder, keep_versions: int):
    """handbook.md indexed, excluded, two pushes of other pages, then included again: the
    last run's report."""
    ws = build_workspace(tmp_path / "ws")
    ws.write("handbook.md", "# Handbook\n\n" + HANDBOOK)
    ws.commit_and_push()
    data = DataDir(tmp_path / "data")
    source = SourceConfig(name="docs", location=str(ws.bare))
    config = Config(settings=Settings(keep_versions=keep_versions), sources=[source])
    first = run(data, config, embedder)
    excluding = msgspec.structs.replace(source, exclude=[*source.exclude, "handbook.md"])
    run(data, msgspec.structs.replace(config, sources=[excluding]), embedder)
    for n in range(2):
        ws.write(f"news{n}.md", f"# News {n}\n\nRelease {n} is out.\n")
        ws.commit_and_push()
        run(data, msgspec.structs.replace(config, sources=[excluding]), embedder)
    back = run(data, config, embedder)
    assert back.version == first.version + 4
    return back


def test_a_file_reincluded_three_versions_later_embeds_nothing(tmp_path, embedder):
    (source,) = reincluded_after(tmp_path, embedder, keep_versions=5).sources
    assert source.added == 1
    assert source.chunks_embedded == 0 and source.chunks_reused >= 12


def test_once_its_version_is_collected_the_file_is_embedded_again(tmp_path, embedder):
    back = reincluded_after(tmp_path, embedder, keep_versions=3)
    (source,) = back.sources
    assert source.chunks_embedded >= 12  # the version holding its vectors was collected


def test_an_embedder_switched_away_and_back_embeds_nothing_the_second_time(tmp_path, embedder):
    ws = build_workspace(tmp_path / "ws")
    ws.write("handbook.md", "# Handbook\n\n" + HANDBOOK)
    ws.commit_and_push()
    data = DataDir(tmp_path / "data")
    minilm = Config(sources=[SourceConfig(name="docs", location=str(ws.bare))])
    first = run(data, minilm, embedder)
    int8 = run(data, msgspec.structs.replace(minilm, settings=Settings(embedder="minilm-int8")))
    assert int8.sources[0].chunks_embedded == first.chunks  # another model: all again
    ws.write("faq.md", FAQ_E1234 + "\n## Tokens\n\nA new section after the switch.\n")
    ws.commit_and_push()
    back = run(data, minilm)  # no model given: loaded only if a text needs embedding
    (source,) = back.sources
    assert source.chunks_embedded == 1  # the new section alone
    assert source.chunks_reused == first.chunks
    assert list_versions(data) == [1, 2, 3]
