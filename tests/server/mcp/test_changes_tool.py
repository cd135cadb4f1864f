"""The changes tool, search_docs(changed_since) and get_document(ref=<commit>) over a real
repository's history (renames, a deletion, tags, a clean merge and one that resolved a
conflict), through a real MCP client, which checks every answer against the output schema
the tool declares."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from mcp import Client

from docdex.index_format.config import Config, SourceConfig, load_config, save_config
from docdex.server.answers.source_limits import SourceLimit
from docdex.server.mcp.tools import build_mcp

from fixtures import open_workspace_docs
from gitrepo import git
from historyrepo import Story, history_story


@pytest.fixture(scope="module")
def story(tmp_path_factory) -> Story:
    return history_story(tmp_path_factory.mktemp("changes-tool") / "repo")


@pytest.fixture(scope="module")
def docs(story, tmp_path_factory, embedder):
    docs = open_workspace_docs(tmp_path_factory.mktemp("changes-data"), story.ws, embedder)
    yield docs
    docs.close()


def calls(docs, *asked: tuple[str, dict[str, Any]]) -> list[Any]:
    """Each (tool, arguments) called in turn by one in-process MCP client."""

    async def main() -> list[Any]:
        async with Client(build_mcp(docs)) as client:
            return [await client.call_tool(name, arguments) for name, arguments in asked]

    return asyncio.run(main())


def changes(docs, **arguments: Any) -> dict[str, Any]:
    (result,) = calls(docs, ("changes", arguments))
    assert not result.is_error, result.content[0].text
    return result.structured_content


def kinds(answer: dict[str, Any]) -> dict[str, str]:
    return {page["path"]: page["kind"] for page in answer["pages"]}


def test_between_two_tags_each_kind_of_change_with_its_commits_lines_and_sections(story, docs):
    answer = changes(docs, source="docs", since="v1", until="v2")
    assert kinds(answer) == {
        "api.md": "added",
        "faq.md": "deleted",
        "guide.md": "modified",
        "new.md": "renamed",
    }
    pages = {page["path"]: page for page in answer["pages"]}
    assert pages["new.md"]["old_path"] == "old.md"
    assert pages["new.md"]["commits"] == [story.commits["rename"]]
    assert (pages["new.md"]["lines_added"], pages["new.md"].get("lines_removed", 0)) == (1, 0)
    assert pages["guide.md"]["sections"] == ["Guide › Install", "Guide › Use"]
    assert pages["guide.md"]["commits"] == [story.commits["use"], story.commits["install"]]
    assert answer["since"]["kind"] == answer["until"]["kind"] == "tag"
    assert answer["until"]["commit"] == story.commits["merge"]  # the annotated tag, peeled
    subjects = {commit["id"]: commit["subject"] for commit in answer["commits"]}
    assert subjects[story.commits["delete"]] == "Drop the FAQ"
    assert story.commits["merge"] not in subjects  # a clean merge touched no page itself
    # the links: the new text at until, a deleted page's last text at since
    assert pages["guide.md"]["doc_id"] == "docs:guide.md"
    assert pages["guide.md"]["uri"] == "docdex://docs/guide.md"
    assert "uri" not in pages["faq.md"]
    assert answer["complete"] and not answer["next_cursor"]


def test_a_merge_that_resolved_a_conflict_is_the_page_s_commit(story, docs):
    answer = changes(docs, source="docs", since="v2")  # until: the default branch's tip
    pages = {page["path"]: page for page in answer["pages"]}
    assert set(pages) == {"guide.md", "news.md"}
    touched = pages["guide.md"]["commits"]
    assert story.commits["resolved"] in touched and story.commits["news"] in touched
    assert story.commits["fix"] in touched  # the branch's own commit, merged in
    assert answer["until"]["commit"] == story.commits["news"]


def test_commit_ids_branches_dates_ages_and_the_start(story, docs):
    by_commit = changes(docs, source="docs", since=story.commits["install"][:7], until="feature")
    assert kinds(by_commit) == {"api.md": "added", "guide.md": "modified"}
    assert by_commit["since"]["kind"] == "commit" and by_commit["until"]["kind"] == "branch"
    # a date between the commits "rename" and "delete": the newest commit at or before it
    hour_after_rename = story.times["rename"] + 1800
    date = f"{_iso(hour_after_rename)}"
    by_date = changes(docs, source="docs", since=date, until=story.commits["delete"])
    assert kinds(by_date) == {"faq.md": "deleted"}
    assert by_date["since"]["kind"] == "date"
    assert by_date["since"]["commit"] == story.commits["rename"]
    # an age longer than the whole history: the start, every page there is added
    everything = changes(docs, source="docs", since="5000w", until="v1")
    assert kinds(everything) == {"faq.md": "added", "guide.md": "added", "old.md": "added"}
    from_start = changes(docs, source="docs", until="v1")
    assert from_start["since"]["kind"] == "start" and kinds(from_start) == kinds(everything)


def test_source_at_ref_and_a_path_prefix_give_one_page_s_history(story, docs):
    answer = changes(docs, source="docs@feature", path_prefix="guide.md")
    assert answer["ref"]["kind"] == "branch" and answer["ref"]["asked"] == "feature"
    (page,) = answer["pages"]
    assert page["kind"] == "added" and page["commits"] == [
        story.commits["use"],
        story.commits["install"],
        story.commits["first"],
    ]
    assert [commit["id"] for commit in answer["commits"]] == page["commits"]


def test_a_cursor_reads_the_rest_of_the_same_range(story, docs):
    whole = changes(docs, source="docs", since="v1")
    first = changes(docs, source="docs", since="v1", max_chars=1000)
    assert first["total"] == whole["total"] == 5 and len(first["pages"]) < 5
    pages, answer = list(first["pages"]), first
    while answer["next_cursor"]:
        answer = changes(docs, cursor=answer["next_cursor"], max_chars=1000)
        for end in ("since", "until"):  # pinned to the commits the first answer resolved
            assert answer[end]["commit"] == first[end]["commit"]
        assert answer["offset"] == len(pages)
        pages += answer["pages"]
    assert pages == whole["pages"]


def test_refusals_are_tool_errors_that_say_what_to_do(docs):
    asked = [
        ("changes", {"source": "docs", "since": "v9"}),
        ("changes", {"source": "nope", "since": "v1"}),
        ("changes", {"source": "docs", "cursor": "not-a-cursor"}),
        ("changes", {"source": "docs@feature", "ref": "main"}),
    ]
    errors = [result.content[0].text for result in calls(docs, *asked)]
    assert "'v9' names no branch, tag or commit" in errors[0]
    assert "unknown source 'nope'; valid sources: docs" in errors[1]
    assert "cursor is not one changes returned" in errors[2]
    assert "pass one of them" in errors[3]


def test_a_caller_limited_to_other_sources_sees_no_history(docs):
    limited = docs.for_caller(SourceLimit(frozenset({"other"})))
    with pytest.raises(Exception, match="unknown source 'docs'; valid sources: \\(none\\)"):
        limited.changes("docs", since="v1")
    with pytest.raises(Exception, match="no document"):
        limited.get_document("docs:guide.md", ref="v1")


def test_get_document_reads_any_version_from_git_with_the_same_windows(story, docs):
    (old, deleted, chunk) = calls(
        docs,
        ("get_document", {"doc_id": "docs:guide.md", "ref": "v1"}),
        ("get_document", {"doc_id": "docs:faq.md", "ref": story.commits["rename"]}),
        ("get_document", {"doc_id": "docs:guide.md#chunk0", "ref": "v1"}),
    )
    assert "Run the installer.\n" in old.structured_content["text"]
    assert old.structured_content["commit"] == story.commits["first"]
    assert deleted.structured_content["text"].startswith("# FAQ")
    assert chunk.is_error and "pass the page's id" in chunk.content[0].text
    # windows of 1,000 characters and their cursors join into the whole file
    texts, arguments = [], {"doc_id": "docs:new.md", "ref": "v2", "max_chars": 1000}
    while True:
        (result,) = calls(docs, ("get_document", arguments))
        window = result.structured_content
        texts.append(window["text"])
        if not window["next_cursor"]:
            break
        arguments = {**arguments, "cursor": window["next_cursor"]}
    whole = story.git("show", f"{story.commits['rename']}:new.md")
    assert len(texts) > 1 and "".join(texts).rstrip("\n") == whole


def test_search_docs_changed_since_keeps_only_the_pages_changed(docs):
    (everything, changed) = calls(
        docs,
        ("search_docs", {"query": "installer app option", "num_results": 10}),
        ("search_docs", {"query": "installer app option", "changed_since": "v2"}),
    )
    paths = {hit["path"] for hit in everything.structured_content["results"]}
    assert {"new.md", "guide.md"} <= paths
    assert {hit["path"] for hit in changed.structured_content["results"]} <= {
        "guide.md",
        "news.md",
    }
    assert changed.structured_content["results"]


def _iso(seconds: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_shallow_clone_answers_what_it_holds_and_says_where_history_stops(story, docs, tmp_path):
    shallow = tmp_path / "shallow.git"
    git(tmp_path, "clone", "-q", "--bare", "--depth", "2", f"file://{story.bare}", str(shallow))
    config = load_config(docs.data)
    save_config(docs.data, Config(sources=[SourceConfig(name="docs", location=str(shallow))]))
    try:
        answer = changes(docs, source="docs")
    finally:
        save_config(docs.data, config)
    assert not answer["complete"]
    assert any("history stops at" in note for note in answer["notes"]), answer["notes"]
    assert {page["path"] for page in answer["pages"]} == {"api.md", "guide.md", "new.md", "news.md"}
