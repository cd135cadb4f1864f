"""Searching a ref (adr/0017): the same question answered per branch or tag, each hit naming
its ref and linking its lines at their commit; without a ref, the default branch only;
list_sources shows every indexed ref with its tip."""

from __future__ import annotations

import asyncio
import json
import re
from concurrent.futures import Future

import pytest
from mcp import Client

from docdex.errors import NotFound
from docdex.index_format.config import Config, SourceConfig, load_config, save_config
from docdex.index_format.layout import DataDir
from docdex.indexer.run.pipeline import index_sources
from docdex.server.boot import Boot, open_docs
from docdex.server.engine import resource_uri
from docdex.server.mcp.tools import build_mcp

from gitrepo import Workspace, git
from refrepo import PORTS, QUESTION, workspace_with_refs

TEMPLATE = "https://git.example.org/docs/{ref}/{commit}/{path}#L{start_line}-L{end_line}"
REFS = {"": "main", "release/1.0": "release/1.0", "release/2.0": "release/2.0", "v2.1": "v2.1"}


@pytest.fixture()
def ws(tmp_path) -> Workspace:
    return workspace_with_refs(tmp_path / "repo")


@pytest.fixture()
def docs(ws, tmp_path, embedder):
    data = DataDir(tmp_path / "data")
    source = SourceConfig(
        name="docs", location=str(ws.bare), refs=["release/*", "v2.*"], url_template=TEMPLATE
    )
    data.ensure()
    save_config(data, Config(sources=[source]))
    assert index_sources(data, load_config(data), embedder=embedder).published
    model: Future = Future()
    model.set_result(embedder)
    docs = open_docs(data, Boot(), model)
    yield docs
    docs.holder.stop()


def test_each_ref_answers_with_its_own_version(docs, ws):
    for ref, name in REFS.items():
        hits = docs.search(QUESTION, 3, source="docs", ref=ref).results
        port = PORTS[f"docs@{ref}" if ref else "docs"]
        assert f"port {port}" in hits[0].text, (ref, hits[0].text)
        assert {hit.ref for hit in hits} == {name}
        link = re.fullmatch(
            r"https://git\.example\.org/docs/([^/]+)/([0-9a-f]{40})/(.+)#L(\d+)-L(\d+)", hits[0].url
        )
        assert link and link[1] == name.replace("/", "%2F") and link[2] == hits[0].commit
        lines = git(ws.bare, "show", f"{link[2]}:{link[3]}").split("\n")
        assert f"port {port}" in "\n".join(lines[int(link[4]) - 1 : int(link[5])])


def test_without_a_ref_only_the_default_branch_answers(docs):
    hits = docs.search(QUESTION, 20).results
    assert hits and all("@" not in hit.doc_id and hit.ref == "main" for hit in hits)
    pages = docs.query_docs(limit=100).documents
    assert pages and all("@" not in page.doc_id for page in pages)
    released = docs.query_docs(ref="release/1.0", limit=100).documents
    assert {page.doc_id.partition(":")[0] for page in released} == {"docs@release/1.0"}


def test_get_document_reads_a_path_at_a_ref(docs):
    page = docs.get_document("docs:guide/install.md", ref="release/1.0")
    assert page.doc_id == "docs@release/1.0:guide/install.md" and page.ref == "release/1.0"
    assert "port 7010" in page.text
    same = docs.get_document("docs@release/1.0:guide/install.md")
    assert same.text == page.text


def test_an_unknown_ref_is_refused_in_a_sentence(docs):
    with pytest.raises(NotFound, match=r"does not index ref 'v9'; its refs: main, release/1\.0"):
        docs.search(QUESTION, source="docs", ref="v9")
    with pytest.raises(NotFound, match="no source indexes ref 'v9'"):
        docs.search(QUESTION, ref="v9")


def test_list_sources_shows_every_ref_with_its_tip(docs):
    entries = {s.name: s for s in docs.list_sources().sources}
    assert set(entries) == {"docs", "docs@release/1.0", "docs@release/2.0", "docs@v2.1"}
    assert entries["docs@v2.1"].ref_kind == "tag" and entries["docs"].ref == "main"
    for entry in entries.values():
        assert entry.tip == entry.commit and entry.behind == 0


def test_ref_over_mcp(docs):
    async def run():
        async with Client(build_mcp(docs)) as client:
            page = await client.read_resource(resource_uri("docs@release/1.0", "guide/install.md"))
            found = await client.call_tool(
                "search_docs", {"query": QUESTION, "source": "docs", "ref": "v2.1"}
            )
            return page, found

    page, result = asyncio.run(run())
    assert "port 7010" in page.contents[0].text
    assert not result.is_error
    top = result.structured_content["results"][0]
    assert top["ref"] == "v2.1" and "port 7021" in top["text"]


def test_docdex_search_takes_a_ref(docs, capsys):
    from docdex.cli import main

    for ref in ("release/1.0", "v2.1"):
        argv = ["--data", str(docs.data.root), "search", QUESTION, "--ref", ref, "--json"]
        assert main(argv) == 0
        hits = json.loads(capsys.readouterr().out)["results"]
        assert f"port {PORTS[f'docs@{ref}']}" in hits[0]["text"]
        assert {hit["ref"] for hit in hits} == {ref}
    assert main(["--data", str(docs.data.root), "search", QUESTION, "--ref", "nope"]) == 1
    assert "nope" in capsys.readouterr().err
