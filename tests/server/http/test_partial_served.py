"""A version published while its source was still being read, left serving by a run killed
mid-read, answered by a real `docdex serve` on 127.0.0.1: hits by keywords from the pages
read, each answer saying what they cover (docs/adr/0042-keywords-first.md)."""

from __future__ import annotations

from docdex.index_format.layout import DataDir
from docdex.serverproc import ServeProcess

from fixtures import pushed_workspace
from stopped_runs import configure, killed_while_reading, pages

STOPPED = (
    "source docs is partly indexed: 10 of 40 pages read when its run stopped; results cover "
    "those, and the next run of the source reads it whole"
)


def test_a_partial_version_is_served_with_what_it_covers(tmp_path):
    ws = pushed_workspace(tmp_path / "repo", pages(40))
    data = DataDir(tmp_path / "data")
    configure(data, ws, partial_every_s=20, keywords_first=2)
    version = killed_while_reading(data, tmp_path / "killed.log")

    with ServeProcess(data.root, tmp_path / "serve.log") as server:
        health = server.wait_serving(version=version)
        assert health["status"] == "indexing" and STOPPED in health["status_detail"]
        assert health["sources"]["docs"]["reading"]["done"] == 10
        assert health["sources"]["docs"]["reading"]["total"] == 40

        found = server.api_search("widget3")
        assert found["results"][0]["path"] == "pages/page-03.md"
        assert found["results"][0]["match"] == "keywords"
        assert found["note"] == STOPPED
        assert server.api_search("widget38")["results"] == []  # not read yet

        searched, listed = server.call_tools(
            [("search_docs", {"query": "widget3", "source": "docs"}), ("list_sources", {})]
        )
        assert searched.structured_content["note"] == STOPPED
        assert STOPPED in searched.content[0].text
        [entry] = listed.structured_content["sources"]
        assert entry["indexed"] and entry["files"] == 10
        assert entry["note"].startswith(STOPPED)
