"""What an agent reads (server/mcp/text_content.py): search_docs' and get_document's text
content is markdown (each hit's breadcrumb, citation, commit, how it was found, then its text
as written), the JSON stays in structuredContent; the other tools' text is their JSON. A real
MCP client calls the real tools over a real index."""

from __future__ import annotations

import asyncio
import json

import pytest
from mcp import Client

from docdex.server.mcp.tools import build_mcp

from fixtures import API, FAQ_E1234, INSTALL, open_indexed_docs

FILES = {"guide/install.md": INSTALL, "faq.md": FAQ_E1234, "reference/api.md": API}


@pytest.fixture(scope="module")
def docs(tmp_path_factory, embedder):
    docs = open_indexed_docs(tmp_path_factory.mktemp("text-content"), FILES, embedder)
    yield docs
    docs.holder.stop()


def call(docs, *calls: tuple[str, dict]):
    async def go():
        async with Client(build_mcp(docs)) as client:
            return [await client.call_tool(name, arguments) for name, arguments in calls]

    return asyncio.run(go())


def test_search_text_is_markdown_and_the_json_stays_structured(docs):
    (result,) = call(docs, ("search_docs", {"query": "error E1234", "num_results": 3}))
    text, hits = result.content[0].text, result.structured_content["results"]
    top = hits[0]
    assert top["heading"] == "FAQ › Error E1234"
    assert text.startswith(f"{len(hits)} hits, index version ")
    cite = f"`docs:faq.md:{top['start_line']}-{top['end_line']}`"
    assert f"## 1. FAQ › Error E1234\n{cite} · #chunk" in text
    assert f"commit {top['commit'][:12]}" in text and "found by " in text
    assert f"\n\n{top['text']}\n\n" in text  # its text as written: no escapes, no quotes
    assert '"chunk_id"' not in text and "\\n" not in text
    for n, hit in enumerate(hits, 1):
        assert f"## {n}. {hit['heading']}\n`docs:{hit['path']}:" in text
    assert len(text) < len(json.dumps(result.structured_content, ensure_ascii=False))


def test_get_document_text_is_markdown_the_other_tools_json(docs):
    page, sources = call(docs, ("get_document", {"doc_id": "docs:faq.md"}), ("list_sources", {}))
    document = page.structured_content
    text = page.content[0].text
    assert text.startswith("# FAQ\ndocs:faq.md · `docs:faq.md:1-")
    assert f"\n\n{document['text']}\n\n" in text
    assert all(f", {s['chunk_id']})" in text.split("Sections:")[1] for s in document["sections"])
    assert json.loads(sources.content[0].text) == sources.structured_content
