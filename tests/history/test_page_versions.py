"""A page as of any commit, tag, branch or date, read from git; a page's own commits,
renames followed; symlinks read through to their target, as the indexer reads them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from docdex.errors import NotFound
from docdex.history import History, SourceRepository, Unreadable
from docdex.index_format.config import SourceConfig
from docdex.index_format.layout import DataDir

from gitrepo import Workspace
from historyrepo import Story, history_story


@pytest.fixture(scope="module")
def story(tmp_path_factory) -> Story:
    return history_story(tmp_path_factory.mktemp("pages") / "repo")


def source_of(location: Path, tmp_path: Path) -> SourceRepository:
    config = SourceConfig(name="docs", location=str(location))
    return SourceRepository.of(DataDir(tmp_path / "data"), config)


def test_a_page_as_of_a_tag_a_commit_a_branch_and_a_date(story, tmp_path):
    source, history = source_of(story.bare, tmp_path), History()
    for at in ("v1", story.commits["rename"], story.commits["use"][:8], "feature"):
        page = history.page(source, "guide.md", at=at)
        assert page.text == story.git("show", f"{page.at.commit}:guide.md") + "\n"
    tip = history.page(source, "guide.md")
    assert (tip.at.asked, tip.at.commit) == ("main", story.commits["news"])
    assert "five times" in tip.text
    dated = history.page(source, "faq.md", at="2023-11-15T04:00:00Z")  # before its deletion
    assert dated.at.commit == story.commits["rename"]
    assert dated.text.startswith("# FAQ")


def test_a_page_that_is_not_there_then_is_not_found(story, tmp_path):
    source, history = source_of(story.bare, tmp_path), History()
    assert history.page(source, "old.md", at="v1").text.startswith("# Reference")
    with pytest.raises(NotFound, match="'old.md' is no file at main"):
        history.page(source, "old.md")
    with pytest.raises(NotFound, match="no file"):
        history.page(source, "notes")


def test_a_pages_history_follows_its_renames(story, tmp_path):
    source, history = source_of(story.bare, tmp_path), History()
    renamed = history.page_history(source, "new.md")
    follow = story.git("log", "--follow", "--format=%H", "main", "--", "new.md").split()
    assert [c.id for c in renamed.commits] == follow
    assert renamed.paths == ["new.md", "old.md"]
    assert renamed.complete and renamed.notes == []
    guide = history.page_history(source, "guide.md")
    assert [c.id for c in guide.commits] == story.git(
        "log", "--format=%H", "main", "--", "guide.md"
    ).split()
    newest = history.page_history(source, "guide.md", limit=2)
    assert [c.id for c in newest.commits] == [c.id for c in guide.commits[:2]]
    assert not newest.complete and "newest 2 commits" in newest.notes[0]
    on_v1 = history.page_history(source, "faq.md", until="v1")
    assert [c.id for c in on_v1.commits] == [story.commits["first"]]


def test_symlinks_are_read_through_and_a_type_change_is_a_modification(tmp_path):
    ws = Workspace(tmp_path / "links")
    ws.write("real.md", "# Real\n\nThe text.\n")
    os.symlink("real.md", ws.work / "link.md")
    os.symlink("../../outside.md", ws.work / "escape.md")
    first = ws.commit_and_push("pages and links")
    (ws.work / "link.md").unlink()
    ws.write("link.md", "# Real\n\nThe text, now its own.\n")
    ws.commit_and_push("the link becomes a page")
    source, history = source_of(ws.bare, tmp_path), History()
    assert history.page(source, "link.md", at=first).text == "# Real\n\nThe text.\n"
    with pytest.raises(Unreadable, match="out of the repository"):
        history.page(source, "escape.md")
    changes = history.changes(source, since=first)
    [page] = changes.pages
    assert (page.path, page.kind, page.lines_added, page.lines_removed) == (
        "link.md",
        "modified",
        1,
        1,
    )
    assert page.sections == ["Real"]
