"""Indexes built before the chunk upper bound are chunked again (adr/0014)."""

from __future__ import annotations

import msgspec
import pytest

from docdex.index_format import records as model
from docdex.index_format.config import Config, Settings, SourceConfig
from docdex.index_format.layout import DataDir
from docdex.index_format.records import CHUNKER_RULES, ChunkerSettings
from docdex.index_format.store import current_version, load_current, load_pages, load_segment
from docdex.indexer.run.pipeline import index_sources

from fixtures import pushed_workspace

LINE = " ".join(f"Sentence {n} of a page that was written on one line." for n in range(300))


def test_settings_of_a_manifest_from_before_the_rules_differ_from_a_run_s() -> None:
    old = msgspec.json.decode(
        b'{"budget_chars": 1500, "section_levels": 3, "min_alnum": 25}', type=ChunkerSettings
    )
    assert old.rules == 1 and Settings().chunker().rules == CHUNKER_RULES > 1
    assert old != Settings().chunker()


def live_chunk_texts(data: DataDir) -> list[str]:
    manifest = load_current(data)
    segments = {
        ref.id: load_segment(data, ref.id, manifest.embedder.dim) for ref in manifest.segments
    }
    return [
        segments[ref.segment].chunks[ref.index].text
        for state in manifest.sources.values()
        for page in load_pages(data, state.pages_file)
        for ref in page.chunks
    ]


def forget_the_rules(data: DataDir) -> None:
    """Make the current manifest look written before ChunkerSettings had `rules`."""
    path = data.manifest(current_version(data))  # type: ignore[arg-type]
    manifest = msgspec.json.decode(path.read_bytes())
    del manifest["chunker"]["rules"]
    path.write_bytes(msgspec.json.encode(manifest))


def test_an_index_from_before_the_bound_is_chunked_again(
    tmp_path, embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = pushed_workspace(tmp_path, {"long.md": f"# Long\n\n{LINE}\n", "short.md": "# Short\n"})
    data = DataDir(tmp_path / "data")
    config = Config(sources=[SourceConfig(name="docs", location=str(ws.bare))])
    with monkeypatch.context() as unbounded:  # the chunker as it was: no upper bound
        unbounded.setattr(model, "MAX_CHUNK_BUDGETS", 1_000)
        index_sources(data, config, embedder=embedder)
    assert max(map(len, live_chunk_texts(data))) > len(LINE)
    forget_the_rules(data)
    assert load_current(data).chunker.rules == 1

    report = index_sources(data, config, embedder=embedder)  # nothing was pushed

    assert report.published and load_current(data).chunker.rules == CHUNKER_RULES
    texts = live_chunk_texts(data)
    assert len(texts) > 5 and max(map(len, texts)) <= ChunkerSettings().max_chars
    assert "".join(t for t in texts if not t.startswith("#")) == LINE
    assert not index_sources(data, config, embedder=embedder).published  # and then it is done
