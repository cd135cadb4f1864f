"""One source cannot hold back the others: what a page includes is bounded (a file included
N times is expanded once; `max_file_bytes` counts the page with its includes), and a source
past its time budget fails on its own, keeping its last good pages, while the others
publish."""

from __future__ import annotations

import itertools

from docdex.index_format.config import Config, Settings, SourceConfig
from docdex.index_format.layout import DataDir
from docdex.index_format.store import load_current, load_pages
from docdex.indexer.chunking.include_syntax import (
    INCLUDED_BYTES_PER_PAGE,
    INCLUDED_BYTES_PER_RUN,
    IncludeBudget,
    PageIncludes,
)
from docdex.indexer.run.pipeline import index_sources

from fixtures import search_index
from gitrepo import Workspace

SNIPPET = "".join(f"Step {n}: tighten bolt {n} of the turbine housing.\n" for n in range(150))


def two_sources(tmp_path, first: Workspace, second: Workspace, **settings) -> Config:
    return Config(
        settings=Settings(**settings),
        sources=[
            SourceConfig(name="first", location=str(first.bare)),
            SourceConfig(name="second", location=str(second.bare)),
        ],
    )


def pages_of(data: DataDir, source: str) -> dict:
    state = load_current(data).sources[source]
    return {p.path: p for p in load_pages(data, state.pages_file)}


def test_a_page_including_one_file_32_times_expands_it_once(tmp_path, embedder):
    amplified = Workspace(tmp_path / "amplified")
    amplified.write("snippets/steps.md", SNIPPET)  # about 8 KB
    amplified.write("page.md", "# Maintenance\n\n" + '--8<-- "snippets/steps.md"\n' * 32)
    amplified.commit_and_push()
    normal = Workspace(tmp_path / "normal")
    normal.write("guide.md", "# Guide\n\nHow to calibrate the anemometer.\n")
    normal.commit_and_push()
    data = DataDir(tmp_path / "data")
    config = two_sources(tmp_path, amplified, normal, max_file_bytes=100_000)

    report = index_sources(data, config, embedder=embedder)
    assert report.published and {s.status for s in report.sources} == {"indexed"}
    # Once expanded: the snippet's own page and the including page embed about as much.
    once = len(SNIPPET) // 4 // 200  # windows of the snippet's tokens, roughly
    assert report.windows_embedded < 4 * (once + 2)
    hits = search_index(data, embedder, "tighten bolt turbine housing", 5, source="first")
    assert {h.path for h in hits.results} == {"page.md", "snippets/steps.md"}
    assert "anemometer" in search_index(data, embedder, "anemometer", 1).results[0].text


def test_max_file_bytes_counts_a_page_with_what_it_includes(tmp_path, embedder):
    ws = Workspace(tmp_path / "repo")
    ws.write("snippets/steps.md", SNIPPET)
    ws.write("page.md", '# Maintenance\n\nTurbines.\n\n--8<-- "snippets/steps.md"\n')
    ws.commit_and_push()
    data = DataDir(tmp_path / "data")
    config = Config(
        settings=Settings(max_file_bytes=len(SNIPPET) + 10),  # the snippet fits; with it, no
        sources=[SourceConfig(name="docs", location=str(ws.bare))],
    )
    report = index_sources(data, config, embedder=embedder)
    problems = {p.path: p.problem for p in report.sources[0].problems}
    assert "snippets/steps.md" in problems["page.md"] and "max_file_bytes" in problems["page.md"]
    assert set(pages_of(data, "docs")) == {"page.md", "snippets/steps.md"}  # both indexed


def test_include_budgets_per_page_and_per_source():
    files = {"a.md": "a" * 600_000, "b.md": "b" * 600_000, "c.md": "c" * 10}
    budget = IncludeBudget()
    page = budget.page(files.get, page_bytes=100, max_file_bytes=10_000_000)
    assert page("a.md") == files["a.md"] and page("a.md") is None  # once per page
    assert page("b.md") is None  # 1.2 MB would pass INCLUDED_BYTES_PER_PAGE
    assert page("c.md") == files["c.md"] and page.refused == ["b.md"]
    assert f"{INCLUDED_BYTES_PER_PAGE:,}" in page.problem() and "b.md" in page.problem()
    assert budget.left == INCLUDED_BYTES_PER_RUN - 600_010

    budget.left = 700_000  # most of the source's budget spent on earlier pages
    later = budget.page(files.get, page_bytes=100, max_file_bytes=10_000_000)
    assert later("a.md") is not None and later("b.md") is None and budget.left == 100_000
    assert isinstance(later, PageIncludes) and later.refused == ["b.md"]


class TickingClock:
    """A clock that moves one second each time it is read: a source's time is the number of
    steps it takes (a file read, a commit walked, a group of texts embedded), whatever the
    machine's speed."""

    def __init__(self) -> None:
        self._ticks = itertools.count()

    def __call__(self) -> float:
        return float(next(self._ticks))


def test_a_source_past_its_time_budget_fails_alone_and_keeps_its_pages(tmp_path, embedder):
    slow = Workspace(tmp_path / "slow")
    for n in range(40):
        slow.write(f"part{n}.md", f"# Part {n}\n\nAssembly step {n} of the zeppelin.\n")
    slow.commit_and_push()
    quick = Workspace(tmp_path / "quick")
    quick.write("guide.md", "# Guide\n\nHow to calibrate the anemometer.\n")
    quick.commit_and_push()
    data = DataDir(tmp_path / "data")
    config = two_sources(tmp_path, slow, quick)
    index_sources(data, config, embedder=embedder)  # no budget: both indexed
    slow_commit = load_current(data).sources["first"].commit
    before = {path: p.blob for path, p in pages_of(data, "first").items()}

    for n in range(40):
        slow.write(f"part{n}.md", f"# Part {n}\n\nAssembly step {n} of the blimp.\n")
    slow.commit_and_push()
    quick.write("guide.md", "# Guide\n\nHow to calibrate the anemometer and the barometer.\n")
    tip = quick.commit_and_push()
    report = index_sources(
        data, config, embedder=embedder, source_timeout_s=20, clock=TickingClock()
    )

    outcome = {s.name: s for s in report.sources}
    assert outcome["second"].status == "indexed" and outcome["second"].commit == tip
    assert outcome["first"].status == "failed" and "time budget (20 s" in outcome["first"].error
    manifest = load_current(data)
    assert manifest.sources["second"].commit == tip
    first = manifest.sources["first"]
    assert first.commit == slow_commit and first.last_error and first.failed_since
    assert {path: p.blob for path, p in pages_of(data, "first").items()} == before
    assert "barometer" in search_index(data, embedder, "barometer", 1).results[0].text
    assert "zeppelin" in search_index(data, embedder, "zeppelin", 1, source="first").results[0].text
