"""The fault campaign's one comparison (bench/faults/harness.py: index_differences) on real
indexes: an index brought to a commit by incremental runs equals one built from scratch at
that commit, and an index that differs in one page is told apart, naming the page."""

from __future__ import annotations

from docdex.index_format.layout import DataDir
from docdex.index_format.store import load_current
from docdex.indexer.run.pipeline import index_sources

from bench.faults.harness import index_content, index_differences, write_config
from fixtures import build_workspace


def index_at_head(data: DataDir, bare, embedder) -> None:
    config = write_config(data, {"docs": bare}, segment_chunks=2, max_segments=2)
    index_sources(data, config, embedder=embedder)


def test_incremental_equals_from_scratch_and_a_difference_is_named(tmp_path, embedder):
    ws = build_workspace(tmp_path / "repo")
    incremental = DataDir(tmp_path / "incremental")
    index_at_head(incremental, ws.bare, embedder)
    ws.move("guide/install.md", "setup/install.md")
    ws.write("faq.md", (ws.work / "faq.md").read_text() + "\n## Disks\n\nKeep room free.\n")
    ws.remove("reference/api.md")
    ws.commit_and_push("move, edit, delete")
    index_at_head(incremental, ws.bare, embedder)  # small segments: this run compacts too
    scratch = DataDir(tmp_path / "scratch")
    index_at_head(scratch, ws.bare, embedder)
    assert load_current(incremental).version == 2

    assert index_differences(index_content(incremental), index_content(scratch)) == []

    ws.write("faq.md", (ws.work / "faq.md").read_text().replace("room", "space"))
    ws.commit_and_push("one word")
    index_at_head(scratch, ws.bare, embedder)
    differences = index_differences(index_content(incremental), index_content(scratch))
    assert any("commit" in d for d in differences), differences
    assert any("docs:faq.md differs" in d for d in differences), differences
    assert not any("install.md" in d for d in differences), differences
