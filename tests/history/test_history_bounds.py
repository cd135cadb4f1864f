"""Every call is bounded (commits walked, bytes read, time, sections named) and says what a
bound left out; a range read once is kept, except what a call left out for lack of time.
Time is an injected clock: nothing here depends on the machine's speed."""

from __future__ import annotations

from pathlib import Path

import pytest

from docdex.history import History, HistoryBounds, SourceRepository
from docdex.index_format.config import SourceConfig
from docdex.index_format.layout import DataDir

from historyrepo import Story, history_story


@pytest.fixture(scope="module")
def story(tmp_path_factory) -> Story:
    return history_story(tmp_path_factory.mktemp("bounds") / "repo")


@pytest.fixture
def source(story: Story, tmp_path: Path) -> SourceRepository:
    config = SourceConfig(name="docs", location=str(story.bare))
    return SourceRepository.of(DataDir(tmp_path / "data"), config)


class Clock:
    """Seconds that pass only when the test says: `step` seconds at every reading."""

    def __init__(self, step: float = 0.0) -> None:
        self.now = 0.0
        self.step = step
        self.readings = 0

    def __call__(self) -> float:
        self.readings += 1
        self.now += self.step
        return self.now


def test_the_commits_walked_are_bounded_and_the_answer_says_so(story, source):
    changes = History(HistoryBounds(max_commits=3)).changes(source, since="v1")
    assert changes.commits_walked == 3 and not changes.complete
    assert any("3 commits (max_commits)" in note for note in changes.notes)
    walked = {c.id for c in changes.commits}
    newest = story.git("log", "--format=%H", "--date-order", "-3", "v1..main").split()
    assert walked <= set(newest)


def test_bytes_read_are_bounded_pages_past_them_are_listed_without_lines(story, source):
    changes = History(HistoryBounds(max_bytes=100)).changes(source, since="v1")
    unread = [p for p in changes.pages if p.lines_added is None]
    assert unread and all(p.note == "lines not counted" for p in unread)
    assert any("(max_bytes)" in note for note in changes.notes)
    assert {p.path for p in changes.pages} == {"api.md", "faq.md", "guide.md", "new.md", "news.md"}


def test_a_page_over_the_file_bound_is_not_diffed(story, source):
    changes = History(HistoryBounds(max_file_bytes=200)).changes(source, since="v1")
    new = next(p for p in changes.pages if p.path == "new.md")  # about 1 KB
    assert new.lines_added is None and "over the bound of 200" in new.note
    guide = next(p for p in changes.pages if p.path == "guide.md")
    assert guide.lines_added is not None


def test_sections_named_are_bounded(story, source):
    changes = History(HistoryBounds(max_sections=1)).changes(source, until="v1")
    guide = next(p for p in changes.pages if p.path == "guide.md")
    assert (guide.sections, guide.sections_omitted) == (["Guide"], 2)


def test_commits_listed_per_page_are_bounded_newest_first(story, source):
    whole = History().changes(source, since="v1")
    bounded = History(HistoryBounds(max_page_commits=2)).changes(source, since="v1")
    guide = next(p for p in whole.pages if p.path == "guide.md")
    short = next(p for p in bounded.pages if p.path == "guide.md")
    assert short.commits == guide.commits[:2]
    assert short.commits_omitted == len(guide.commits) - 2 == 4
    named = {c for p in bounded.pages for c in p.commits}
    assert {c.id for c in bounded.commits} == named


def test_time_is_bounded_and_what_it_left_out_is_read_again(story, source):
    clock = Clock(step=1.0)  # each reading a second later: 3 s pass within a few steps
    history = History(HistoryBounds(max_seconds=3), clock=clock)
    hurried = history.changes(source, since="v1")
    assert not hurried.complete
    assert any("3 s (max_seconds)" in note for note in hurried.notes)
    clock.step = 0.0  # time stands still: the same question is answered whole
    whole = history.changes(source, since="v1")
    assert whole.complete and whole.commits_walked == 10
    assert all(p.lines_added is not None for p in whole.pages)


def test_a_range_asked_again_is_read_from_memory(story, source):
    clock = Clock()
    history = History(clock=clock)
    first = history.changes(source, since="v1", until="v2")
    spent = clock.readings
    again = history.changes(source, since="v1", until="v2")
    assert again == first
    # the first call read the clock at each commit and page it read; the second read none
    assert spent > 10 and clock.readings - spent <= 1
    moved = History(clock=clock, cached_ranges=1)
    moved.changes(source, since="v1", until="v2")
    moved.changes(source, since="v1", until="main")  # pushes the first range out
    before = clock.readings
    moved.changes(source, since="v1", until="v2")
    assert clock.readings - before > 10
