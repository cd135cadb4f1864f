"""Shallow and partial clones answer from the history they hold and say where it stops:
a shallow clone's cut is where commits end (a point before it is refused, a date before it
stops there), a partial clone lists every change its trees show and says which lines and
renames it could not read."""

from __future__ import annotations

from pathlib import Path

import pytest

from docdex.errors import NotFound
from docdex.history import RENAMES_UNCHECKED, History, SourceRepository, Unreadable
from docdex.index_format.config import SourceConfig
from docdex.index_format.layout import DataDir

from gitrepo import git
from historyrepo import Story, history_story

ALLOW_FILTER = "--upload-pack=git -c uploadpack.allowFilter=true upload-pack"


@pytest.fixture(scope="module")
def story(tmp_path_factory) -> Story:
    return history_story(tmp_path_factory.mktemp("clones") / "repo")


def clone(story: Story, where: Path, *args: str) -> SourceRepository:
    target = where / "clone.git"
    git(where, "clone", "-q", "--bare", *args, f"file://{story.bare}", str(target))
    if any(a.startswith("--filter") for a in args):
        git(target, "remote", "remove", "origin")  # the missing blobs stay missing
    config = SourceConfig(name="docs", location=str(target))
    return SourceRepository.of(DataDir(where / "data"), config)


def test_a_shallow_clone_says_where_its_history_stops(story, tmp_path):
    source = clone(story, tmp_path, "--depth", "2")
    cuts = (Path(source.path) / "shallow").read_text().split()  # git's own list of cuts
    assert cuts == [story.commits["resolved"]]
    history = History()
    everything = history.changes(source)  # since the start: what the clone holds
    assert not everything.complete
    assert any("history stops at" in note and cuts[0][:12] in note for note in everything.notes)
    assert {p.path for p in everything.pages} == {"api.md", "guide.md", "new.md", "news.md"}
    # the cut commits' own changes cannot be told: they are no page's commits
    assert not any(c in cuts for p in everything.pages for c in p.commits)
    with pytest.raises(NotFound, match="shallow clone"):
        history.changes(source, since=story.commits["first"])
    older = history.changes(source, since="2023-11-14")  # before the whole repository
    assert older.since.commit in cuts and "history stops at" in older.since.note
    assert not older.complete
    guide = history.page_history(source, "guide.md")
    assert not guide.complete and "history stops at" in guide.notes[-1]


def test_a_partial_clone_lists_changes_without_what_it_cannot_read(story, tmp_path):
    source = clone(story, tmp_path, "--filter=blob:none", "--no-local", ALLOW_FILTER)
    history = History()
    changes = history.changes(source, since="v1", until="v2")
    kinds = {p.path: p.kind for p in changes.pages}
    # old.md was renamed and edited: without contents that cannot be told from a new page
    assert kinds == {
        "api.md": "added",
        "faq.md": "deleted",
        "guide.md": "modified",
        "new.md": "added",
        "old.md": "deleted",
    }
    assert RENAMES_UNCHECKED in changes.notes and not changes.complete
    for page in changes.pages:
        assert page.lines_added is None and "is missing from the repository" in page.note
    guide = next(p for p in changes.pages if p.path == "guide.md")
    assert guide.commits == story.git("log", "--format=%H", "v1..v2", "--", "guide.md").split()
    with pytest.raises(Unreadable, match="partial clone"):
        history.page(source, "guide.md")
