"""The MCP surface beyond search: get_document pages through long texts with cursors, every
answer stays under the hard cap, pages are resources, and the instructions follow the index.
The tools run in process through the SDK's client (which checks each answer against the
tool's output schema)."""

from __future__ import annotations

import asyncio
import random

import msgspec
import pytest
from mcp import Client
from mcp.shared.uri_template import UriTemplate

from docdex.errors import InvalidArgument
from docdex.index_format.config import load_config, save_config
from docdex.server.answers.budget import ANSWER_CAP_CHARS, answer_chars, within_cap
from docdex.server.answers.cursors import Lines
from docdex.server.answers.documents import page_text
from docdex.server.answers.shapes import PageList, PageSummary
from docdex.server.engine import RESOURCE_TEMPLATE, resource_uri
from docdex.server.mcp.tools import build_mcp

from fixtures import FAQ, open_indexed_docs

# A long page: 40 sections of 12 lines, and one 30,000-character line in the middle.
SECTIONS = [
    f"## Part {n}\n\n" + "\n".join(f"Line {n}.{i} of the tide tables." for i in range(12))
    for n in range(40)
]
SECTIONS.insert(20, "## Raw dump\n\n" + " ".join(f"tide-{i}" for i in range(3_300)))
LONG = "# Tide tables\n\n" + "\n\n".join(SECTIONS) + "\n"
ODD_PATH = "notes/odd name #1 ü 100%.md"
TAGGED = "---\ntags: [tides, Harbour]\n---\n# Posted\n\nThe harbour master posts the tide tables.\n"
MANY = "# Many\n\n" + "\n\n".join(
    f"## Section {n}\n\nSection {n} says where the tide turns on day {n}." for n in range(300)
)


@pytest.fixture(scope="module")
def docs(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("answers")
    files = {
        "many.md": MANY,
        "tagged.md": TAGGED,
        "faq.md": FAQ,
        "tides.md": LONG,
        ODD_PATH: "# Odd\n\nA page whose path needs escaping.\n",
    }
    docs = open_indexed_docs(root, files, embedder)
    yield docs
    docs.holder.stop()


def run(docs, calls):
    async def go():
        async with Client(build_mcp(docs)) as client:
            return await calls(client)

    return asyncio.run(go())


# --- paging ----------------------------------------------------------------------------------


def test_windows_join_into_the_exact_text():
    rng = random.Random(7)
    pieces = ["word ", "x" * 300, "\n", "\r", "ü", " ", "\n\n", "tab\t"]
    for _ in range(200):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 400)))
        lines = Lines(text, first_line=5)
        begin, stop = lines.span(0, 0)
        budget = rng.randint(1, 400)
        joined, at = "", begin
        while True:
            window = lines.window(at, stop, budget)
            assert 0 < len(window.text) <= budget or not text
            assert lines.line_at(at) == window.start_line <= window.end_line <= lines.last_line
            joined += window.text
            if window.next_offset is None:
                break
            at = window.next_offset
        assert joined == text


def test_a_window_ends_at_a_line_then_a_word():
    lines = Lines("alpha beta\ngamma delta epsilon\n")
    assert lines.window(0, 31, 15).text == "alpha beta\n"
    assert lines.window(11, 31, 15).text == "gamma delta "
    assert lines.window(0, 31, 15).end_line == 1


def test_get_document_pages_through_a_long_page_exactly(docs):
    async def calls(client):
        windows = []
        arguments = {"doc_id": "docs:tides.md", "max_chars": 4_000}
        while True:
            answer = (await client.call_tool("get_document", arguments)).structured_content
            windows.append(answer)
            if not answer["next_cursor"]:
                return windows
            arguments = {"doc_id": "docs:tides.md", "cursor": answer["next_cursor"]}
            arguments["max_chars"] = 4_000

    windows = run(docs, calls)
    assert len(windows) > 10 and all(len(w["text"]) <= 4_000 for w in windows)
    assert [w["truncated"] for w in windows] == [True] * (len(windows) - 1) + [False]
    with docs.holder.acquire() as snapshot:
        whole = page_text(snapshot.index, snapshot.index.pages["docs:tides.md"])
    assert "".join(w["text"] for w in windows) == whole
    assert whole.split("\n")[2] == "## Part 0"  # line-aligned with the file
    assert windows[0]["start_line"] == 1 and windows[-1]["end_line"] == windows[0]["last_line"]
    for before, after in zip(windows, windows[1:], strict=False):  # contiguous lines
        assert after["start_line"] in (before["end_line"], before["end_line"] + 1)
    for window in windows:  # the sections listed are the ones the window overlaps
        for section in window["sections"]:
            assert section["start_line"] <= window["end_line"]
            assert section["end_line"] >= window["start_line"]


def test_get_document_by_lines(docs):
    with docs.holder.acquire() as snapshot:
        file_lines = page_text(snapshot.index, snapshot.index.pages["docs:tides.md"]).split("\n")
    part = docs.get_document("docs:tides.md", start_line=3, end_line=5)
    assert part.text == "\n".join(file_lines[2:5]) and (part.start_line, part.end_line) == (3, 5)
    assert not part.truncated and [s.heading for s in part.sections][-1].endswith("Part 0")
    chunk = docs.get_document(part.sections[-1].chunk_id, start_line=3, end_line=3)
    assert chunk.kind == "chunk" and chunk.text == "## Part 0"


def test_lines_asked_of_a_chunk_are_the_ones_it_covers(docs):
    later = docs.get_document("docs:tides.md", max_chars=100_000).sections[-1]
    chunk = docs.get_document(later.chunk_id)
    first, last = chunk.start_line, chunk.end_line
    assert first > 2
    overlap = docs.get_document(later.chunk_id, start_line=1, end_line=first)
    assert (overlap.start_line, overlap.end_line) == (first, first)
    assert overlap.text == chunk.text.split("\n")[0]
    with pytest.raises(InvalidArgument, match=f"covers lines {first}-{last}"):
        docs.get_document(later.chunk_id, start_line=1, end_line=first - 1)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"cursor": "not-a-cursor"}, "cursor is not one get_document returned"),
        ({"start_line": -1}, "start_line must be a line number"),
        ({"start_line": 9, "end_line": 3}, "start_line 9 is after end_line 3"),
        ({"start_line": 99_999}, "past the end"),
        ({"start_line": 2, "cursor": "x"}, "either cursor or start_line/end_line"),
        ({"max_chars": 10}, "max_chars must be between"),
    ],
)
def test_bad_paging_arguments_are_refused_in_a_sentence(docs, arguments, message):
    with pytest.raises(InvalidArgument, match=message):
        docs.get_document("docs:tides.md", **arguments)


def test_the_sections_list_shares_the_budget_with_the_text(docs):
    window = docs.get_document("docs:many.md", max_chars=4_000)
    listed = msgspec.json.encode(window.sections).decode()
    assert len(window.text) >= 1_800 and len(window.text) + len(listed) <= 4_000
    assert window.sections and window.sections[0].start_line <= window.start_line + 2
    overlapping = window.sections[-1].end_line <= window.end_line or window.omitted
    assert overlapping and window.truncated


def test_the_tags_filter_keeps_the_tagged_pages(docs):
    hits = docs.search("tide tables", tags=["harbour"]).results
    assert hits and {h.path for h in hits} == {"tagged.md"}
    assert docs.search("tide tables", tags=["no such tag"]).results == []
    pages = docs.query_docs(tags=["TIDES"]).documents
    assert [p.path for p in pages] == ["tagged.md"] and pages[0].tags == ["tides", "Harbour"]


def test_a_cursor_belongs_to_its_document(docs):
    cursor = docs.get_document("docs:tides.md", max_chars=1_000).next_cursor
    with pytest.raises(InvalidArgument, match="continues 'docs:tides.md', not 'docs:faq.md'"):
        docs.get_document("docs:faq.md", cursor=cursor)


def test_query_docs_pages_on_with_its_cursor_over_mcp(docs):
    async def calls(client):
        tools = {t.name: t for t in (await client.list_tools()).tools}
        answers = [(await client.call_tool("query_docs", {"limit": 2})).structured_content]
        while answers[-1]["next_cursor"]:
            arguments = {"limit": 2, "cursor": answers[-1]["next_cursor"]}
            answers.append((await client.call_tool("query_docs", arguments)).structured_content)
        return tools["query_docs"], answers

    tool, answers = run(docs, calls)
    assert "cursor" in tool.input_schema["properties"]
    assert "next_cursor" in tool.output_schema["properties"]
    assert [len(a["documents"]) for a in answers] == [2, 2, 1]
    assert [a["truncated"] for a in answers] == [True, True, False]
    listed = [d["path"] for a in answers for d in a["documents"]]
    assert listed == ["faq.md", "many.md", ODD_PATH, "tagged.md", "tides.md"]
    assert {a["total"] for a in answers} == {5}


def test_a_query_docs_cursor_belongs_to_its_filters(docs):
    first = docs.query_docs(file_path_contains=".md", limit=1)
    assert first.truncated and first.next_cursor
    second = docs.query_docs(file_path_contains=".md", limit=1, cursor=first.next_cursor)
    assert [p.path for p in second.documents] == ["many.md"]
    with pytest.raises(InvalidArgument, match="other filters"):
        docs.query_docs(title_contains="tide", cursor=first.next_cursor)
    with pytest.raises(InvalidArgument, match="not one query_docs returned"):
        docs.query_docs(cursor=docs.get_document("docs:tides.md", max_chars=1_000).next_cursor)
    assert docs.query_docs(limit=100).next_cursor == ""


# --- the hard cap ------------------------------------------------------------------------------


def summary(n: int, filler: str) -> PageSummary:
    path = f"{filler}/{n}.md"
    return PageSummary(f"s:{path}", "s", path, resource_uri("s", path), "T", "", [], "", "", "", 1)


def test_an_answer_over_the_cap_leaves_out_its_last_items():
    pages = [summary(n, "deep/" * 200) for n in range(100)]  # about 3,000 characters each
    answer = within_cap(PageList(pages, total=100, truncated=False, index_version=1), "documents")
    assert answer_chars(answer) <= ANSWER_CAP_CHARS
    assert 0 < len(answer.documents) < 100 and answer.omitted == 100 - len(answer.documents)
    assert answer.documents == pages[: len(answer.documents)]
    longer = msgspec.structs.replace(answer, documents=pages[: len(answer.documents) + 1])
    assert answer_chars(longer) > ANSWER_CAP_CHARS  # the longest prefix that fits
    small = PageList(pages[:3], total=3, truncated=False, index_version=1)
    assert within_cap(small, "documents") is small


def test_no_tool_answer_passes_the_cap(docs):
    async def calls(client):
        return [
            await client.call_tool(name, arguments)
            for name, arguments in [
                ("search_docs", {"query": "tide", "num_results": 100, "max_chars": 100_000}),
                ("get_document", {"doc_id": "docs:tides.md", "max_chars": 100_000}),
                ("query_docs", {"limit": 100}),
                ("list_sources", {}),
            ]
        ]

    for result in run(docs, calls):
        assert not result.is_error
        assert len(result.content[0].text) <= ANSWER_CAP_CHARS


# --- resources ---------------------------------------------------------------------------------


def test_resource_uris_round_trip_through_the_template():
    template = UriTemplate.parse(RESOURCE_TEMPLATE)
    for path in ["a.md", "guide/x y.md", ODD_PATH, "a?b.md", "c[1].md", "日本/語.md"]:
        assert template.match(resource_uri("docs", path)) == {"source": "docs", "path": path}
    at_ref = {"source": "docs@release/1.0", "path": "guide/a.md"}
    assert template.match(resource_uri(**at_ref)) == at_ref


def test_pages_list_and_read_as_resources(docs, monkeypatch):
    monkeypatch.setattr("docdex.server.mcp.resources.RESOURCE_PAGE", 2)

    async def calls(client):
        templates = (await client.list_resource_templates()).resource_templates
        answers = [await client.list_resources()]
        while answers[-1].next_cursor:
            answers.append(await client.list_resources(cursor=answers[-1].next_cursor))
        odd = await client.read_resource(resource_uri("docs", ODD_PATH))
        tides = await client.read_resource("docdex://docs/tides.md")
        return templates, answers, odd, tides

    templates, answers, odd, tides = run(docs, calls)
    assert [t.uri_template for t in templates] == [RESOURCE_TEMPLATE]
    assert templates[0].mime_type == "text/markdown"
    assert [len(a.resources) for a in answers] == [2, 2, 1]
    listed = [r.name for a in answers for r in a.resources]
    assert listed == ["faq.md", "many.md", ODD_PATH, "tagged.md", "tides.md"]
    assert odd.contents[0].text.startswith("# Odd") and odd.contents[0].mime_type == "text/markdown"
    with docs.holder.acquire() as snapshot:
        assert tides.contents[0].text == page_text(
            snapshot.index, snapshot.index.pages["docs:tides.md"]
        )


def test_a_missing_page_is_an_invalid_resource(docs):
    async def calls(client):
        try:
            await client.read_resource("docdex://docs/nowhere.md")
        except Exception as exc:  # the SDK raises MCPError with the server's message
            return str(exc)
        return "read"

    assert "no document 'docs:nowhere.md'" in run(docs, calls)


def test_search_hits_link_their_pages(docs):
    result = run(docs, lambda c: c.call_tool("search_docs", {"query": "tide tables"}))
    links = [item for item in result.content if item.type == "resource_link"]
    hits = result.structured_content["results"]
    uris = list(dict.fromkeys(f"docdex://{h['source']}/{h['path']}" for h in hits))
    assert [link.uri for link in links] == uris and "docdex://docs/tides.md" in uris
    assert all(link.mime_type == "text/markdown" for link in links)


# --- instructions and descriptions -----------------------------------------------------------


def test_instructions_name_the_sources_and_follow_the_config(docs):
    server = build_mcp(docs)  # one server: each connection reads the instructions anew

    def instructions():
        async def go():
            async with Client(server) as client:
                return client.instructions

        return asyncio.run(go())

    before = instructions()
    assert "- docs (5 pages)" in before and "search_docs" in before and "cite" in before.lower()
    config = load_config(docs.data)
    described = msgspec.structs.replace(
        config.sources[0], description="Tide tables and the harbour FAQ"
    )
    save_config(docs.data, msgspec.structs.replace(config, sources=[described]))
    try:
        after = instructions()
        assert "- docs: Tide tables and the harbour FAQ (5 pages)" in after
        assert docs.list_sources().sources[0].description == "Tide tables and the harbour FAQ"
    finally:
        save_config(docs.data, config)
