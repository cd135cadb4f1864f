"""What changed between two points of a real repository's history (made with git: edits,
a rename with an edit, a deletion, merges with and without a conflict, a lightweight and
an annotated tag), each form of since and until: tags, branches, commit ids, dates, ages,
the start of history. git itself is the oracle: `git diff -M` for the pages and their
lines, `git log A..B -- PATH` for each page's commits, `git rev-list --before` for dates."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest

from docdex.errors import InvalidArgument, NotFound
from docdex.history import ChangeSet, History, SourceRepository
from docdex.index_format.config import SourceConfig
from docdex.index_format.layout import DataDir

from historyrepo import Story, history_story


@pytest.fixture(scope="module")
def story(tmp_path_factory) -> Story:
    return history_story(tmp_path_factory.mktemp("history") / "repo")


@pytest.fixture
def source(story: Story, tmp_path: Path) -> SourceRepository:
    config = SourceConfig(name="docs", location=str(story.bare))
    return SourceRepository.of(DataDir(tmp_path / "data"), config)


def git_pages(story: Story, old: str, new: str) -> dict[str, tuple[str, str, int, int]]:
    """path -> (kind, old path, lines added, lines removed), as git diff -M says, for the
    pages the default globs select."""
    statuses = story.git("diff", "--name-status", "-M", old, new).splitlines()
    counts = story.git("diff", "--numstat", "-M", old, new).splitlines()
    kinds = {"A": "added", "M": "modified", "D": "deleted", "R": "renamed"}
    found = {}
    for status, count in zip(statuses, counts, strict=True):
        letter, *paths = status.split("\t")
        added, removed, _ = count.split("\t", 2)
        path, old_path = paths[-1], paths[0] if letter.startswith("R") else ""
        if path.endswith(".md") and not path.startswith("."):
            found[path] = (kinds[letter[0]], old_path, int(added), int(removed))
    return found


def git_log(story: Story, old: str, new: str, *paths: str) -> list[str]:
    return story.git("log", "--format=%H", f"{old}..{new}", "--", *paths).split()


def ours(changes: ChangeSet) -> dict[str, tuple[str, str, int | None, int | None]]:
    return {p.path: (p.kind, p.old_path, p.lines_added, p.lines_removed) for p in changes.pages}


def assert_like_git(story: Story, changes: ChangeSet, old: str, new: str) -> None:
    assert ours(changes) == git_pages(story, old, new)
    for page in changes.pages:
        names = [page.path, *([page.old_path] if page.old_path else [])]
        assert page.commits == git_log(story, old, new, *names), page.path
    listed = {c for page in changes.pages for c in page.commits}
    assert [c.id for c in changes.commits] == [
        c
        for c in story.git("log", "--format=%H", "--date-order", f"{old}..{new}").split()
        if c in listed
    ]


def test_between_two_tags_pages_lines_and_commits_are_gits(story, source):
    changes = History().changes(source, since="v1", until="v2")
    assert (changes.since.kind, changes.since.commit) == ("tag", story.commits["first"])
    # v2 is an annotated tag: it is peeled to its commit
    assert (changes.until.kind, changes.until.commit) == ("tag", story.commits["merge"])
    assert_like_git(story, changes, "v1", "v2")
    guide = next(p for p in changes.pages if p.path == "guide.md")
    # the feature's two commits; the clean merge that brought them is not listed
    assert guide.commits == [story.commits["use"], story.commits["install"]]
    assert guide.sections == ["Guide › Install", "Guide › Use"]
    renamed = next(p for p in changes.pages if p.kind == "renamed")
    assert (renamed.path, renamed.old_path) == ("new.md", "old.md")
    assert renamed.commits == [story.commits["rename"]]
    assert changes.complete and changes.notes == []
    assert changes.total == len(changes.pages) == 4  # not notes.txt, not .github/
    subjects = {c.id: c.subject for c in changes.commits}
    assert subjects[story.commits["rename"]] == "Rename the reference and add an option"


def test_a_merge_that_resolved_a_conflict_in_the_page_is_one_of_its_commits(story, source):
    changes = History().changes(source, since="v2", until="main")
    assert_like_git(story, changes, "v2", "main")
    guide = next(p for p in changes.pages if p.path == "guide.md")
    assert story.commits["resolved"] in guide.commits
    assert story.commits["fix"] in guide.commits  # the branch's own commit too


def test_branches_and_commit_ids_full_and_short(story, source):
    history = History()
    by_branch = history.changes(source, since="feature", until="fix")
    assert by_branch.since.kind == by_branch.until.kind == "branch"
    assert_like_git(story, by_branch, "feature", "fix")
    first, rename = story.commits["first"], story.commits["rename"]
    by_id = history.changes(source, since=first[:7], until=rename)
    assert (by_id.since.kind, by_id.since.commit, by_id.until.commit) == ("commit", first, rename)
    assert_like_git(story, by_id, first, rename)
    assert history.changes(source, since="refs/tags/v1").since.commit == first


def test_until_defaults_to_the_tip_of_ref_else_of_the_default_branch(story, source):
    history = History()
    on_main = history.changes(source, since="v1")
    assert (on_main.ref.asked, on_main.until.commit) == ("main", story.commits["news"])
    assert_like_git(story, on_main, "v1", "main")
    on_feature = history.changes(source, since="v1", ref="feature")
    assert on_feature.until.commit == story.commits["use"]
    assert_like_git(story, on_feature, "v1", "feature")


def test_since_a_date_is_the_last_commit_before_it_on_the_branch(story, source):
    # between the fix branch's commit and the merge of feature: main's first parents
    # reach back to the FAQ's deletion, never to the fix branch's commit
    moment = story.times["fix"] + 600
    day = datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    changes = History().changes(source, since=day)
    expected = story.git("rev-list", "-1", "--first-parent", f"--before={moment}", "main")
    assert expected == story.commits["delete"]
    assert (changes.since.kind, changes.since.commit) == ("date", expected)
    assert_like_git(story, changes, expected, "main")
    # a day: midnight UTC, here before the first commit (2023-11-14T23:13:20Z)
    whole_day = History().changes(source, since="2023-11-14")
    assert (whole_day.since.kind, whole_day.since.commit) == ("date", "")


def test_since_an_age_counts_back_from_now(story, source):
    now = story.times["news"] + 1800
    history = History(now=lambda: now)
    changes = history.changes(source, since="2h")
    expected = story.git("rev-list", "-1", "--first-parent", f"--before={now - 7200}", "main")
    assert (changes.since.kind, changes.since.commit) == ("age", expected)
    assert_like_git(story, changes, expected, "main")
    assert history.changes(source, since="1w").since.commit == ""  # older than the repository


def test_since_the_start_lists_every_page_as_added(story, source):
    changes = History().changes(source, until="v1")
    assert changes.since.kind == "start"
    assert {p.path: p.kind for p in changes.pages} == {
        "faq.md": "added",
        "guide.md": "added",
        "old.md": "added",
    }
    for page in changes.pages:
        assert page.commits == [story.commits["first"]]
        assert page.lines_removed == 0 and page.lines_added > 0
    guide = next(p for p in changes.pages if p.path == "guide.md")
    assert guide.sections == ["Guide", "Guide › Install", "Guide › Use"]


def test_a_tag_named_like_a_date_is_the_tag(story, source, tmp_path):
    story.git("tag", "2023-11-15", story.commits["api"])
    try:
        changes = History().changes(source, since="2023-11-15")
    finally:
        story.git("tag", "-d", "2023-11-15")
    assert (changes.since.kind, changes.since.commit) == ("tag", story.commits["api"])


def test_what_names_nothing_is_refused_in_a_sentence(story, source):
    history = History()
    with pytest.raises(NotFound, match="names no branch, tag or commit"):
        history.changes(source, since="v9")
    with pytest.raises(NotFound, match="names no branch or tag"):
        history.changes(source, since="v1", ref="nope")
    with pytest.raises(InvalidArgument, match="is not a date"):
        history.changes(source, since="2023-13-45")
    with pytest.raises(NotFound, match="names no commit"):
        history.changes(source, since="0000000")
    with pytest.raises(NotFound, match="before the first commit"):
        history.changes(source, until="2020-01-01")


def test_a_path_prefix_and_windows_of_pages(story, source):
    history = History()
    whole = history.changes(source, since="v1")
    assert [p.path for p in whole.pages] == sorted(p.path for p in whole.pages)
    prefixed = history.changes(source, since="v1", path_prefix="new")
    assert [p.path for p in prefixed.pages] == ["new.md", "news.md"]
    windows = [history.changes(source, since="v1", offset=n, limit=2) for n in (0, 2, 4)]
    assert [p for w in windows for p in w.pages] == whole.pages
    assert all(w.total == whole.total for w in windows)
    for window in windows:  # each window names the commits of its own pages, once each
        named = [c for p in window.pages for c in p.commits]
        assert sorted(c.id for c in window.commits) == sorted(set(named))
    with pytest.raises(InvalidArgument):
        history.changes(source, since="v1", limit=0)


def test_changed_paths_are_the_pages_of_the_range(story, source):
    found = History().changed_paths(source, since="v1", until="v2")
    assert found.paths == ["api.md", "guide.md", "new.md"]
    assert found.deleted == ["faq.md"]


def test_the_answer_is_typed_and_encodes(story, source):
    changes = History().changes(source, since="v1", until="v2")
    decoded = msgspec.json.decode(msgspec.json.encode(changes), type=ChangeSet)
    assert decoded == changes
