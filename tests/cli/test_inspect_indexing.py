"""`docdex inspect` says how far a version published keywords first is embedded, and what
a version published while a source was read holds of it (`docdex verify` too)."""

from __future__ import annotations

from docdex.cli import main
from docdex.index_format.config import Config, Settings, SourceConfig, save_config
from docdex.index_format.layout import DataDir
from docdex.indexer.run.pipeline import index_sources

from fixtures import pushed_workspace
from stopped_runs import configure, killed_while_reading, pages


def test_inspect_names_the_chunks_waiting_for_vectors(tmp_path, embedder, capsys):
    quokkas = {f"p{n}.md": f"# Page {n}\n\nThe quokka note {n}.\n" for n in range(4)}
    ws = pushed_workspace(tmp_path / "repo", quokkas)
    data = DataDir(tmp_path / "data")
    data.ensure()
    config = Config(
        settings=Settings(keywords_first=2),
        sources=[SourceConfig(name="docs", location=str(ws.bare))],
    )
    save_config(data, config)
    index_sources(data, config, embedder=embedder, embed_while=None)
    assert main(["--data", str(data.root), "inspect"]) == 0
    out = capsys.readouterr().out
    assert "4 chunks waiting for vectors" in out
    assert "now: 4 of 4 chunks wait for vectors" in out and "the worker embeds them next" in out

    index_sources(data, config, embedder=embedder)
    assert main(["--data", str(data.root), "inspect"]) == 0
    current = [line for line in capsys.readouterr().out.splitlines() if "(current)" in line]
    assert current and "waiting" not in current[0]


def test_inspect_and_verify_say_a_version_holds_part_of_a_source(tmp_path, capsys):
    ws = pushed_workspace(tmp_path / "repo", pages(40))
    data = DataDir(tmp_path / "data")
    configure(data, ws, partial_every_s=20, keywords_first=2)
    killed_while_reading(data, tmp_path / "killed.log")
    assert main(["--data", str(data.root), "inspect"]) == 0
    out = capsys.readouterr().out
    assert "source docs is partly indexed: 10 of 40 pages read when its run stopped" in out
    assert main(["--data", str(data.root), "verify"]) == 0
    assert "entry docs was published while being read: 10 of 40 files" in capsys.readouterr().out
