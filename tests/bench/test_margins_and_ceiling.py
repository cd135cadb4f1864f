"""The margins bench's bootstrap interval, and the ceiling bench's counting of a judged
section's chunks (bench/ranking/margins.py, bench/ranking/ceiling.py) on a real index."""

from __future__ import annotations

import pytest

from docdex.evaluation.scoring import Judgment, Query
from docdex.index_format.layout import DataDir
from docdex.server.engine import Engine

from bench.ranking import ceiling, margins
from bench.ranking.answers_alone import Judged
from fixtures import FAQ_E1234, INSTALL, index_workspace, pushed_workspace

# the install guide twice: each of its chunks has an exact copy in the other folder
FILES = {"guide/install.md": INSTALL, "old/install.md": INSTALL, "faq.md": FAQ_E1234}


def test_the_interval_of_equal_differences_is_that_difference():
    assert margins.interval([0.25] * 9, 500) == (0.25, 0.25)


def test_the_interval_holds_the_mean_and_widens_with_spread():
    narrow = margins.interval([0.0, 0.1] * 20, 2000)
    wide = margins.interval([-1.0, 1.1] * 20, 2000)
    assert narrow[0] <= 0.05 <= narrow[1] and wide[0] <= 0.05 <= wide[1]
    assert wide[1] - wide[0] > narrow[1] - narrow[0] > 0


def test_margin_cells_count_the_questions_each_side():
    cells = margins.margin_cells([1.0, 0.5, 0.0], [0.5, 0.5, 1.0], 0.0, 200)
    assert cells[1] == "1 / 1"
    assert cells[0].startswith("-0.167 [")


@pytest.fixture(scope="module")
def engine(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("ceiling")
    data = DataDir(root / "data")
    index_workspace(data, pushed_workspace(root / "ws", FILES), embedder)
    opened = Engine.open(data, embedder)
    yield opened
    opened.close()


def _judged_on(path: str) -> Query:
    return Query(
        id="q",
        query="C compiler needed to build hnswlib",
        relevant=[Judgment(path, "Requirements")],
    )


def test_a_copy_of_the_judged_section_counts_where_it_stands(engine):
    hits = engine.search("C compiler needed to build hnswlib", 10, engine.scope(source="docs"))
    paths = [hit.path for hit in hits.results]
    for path in ("guide/install.md", "old/install.md"):
        query = _judged_on(path)
        sections = ceiling.judged_sections(engine, "docs", query)
        assert [s.path for s in sections] == [path]
        first = min(paths.index("guide/install.md"), paths.index("old/install.md")) + 1
        assert ceiling.first_inside(engine, "docs", query, sections) == first
        assert ceiling.held(engine, "docs", query, sections)


def test_a_section_no_chunk_lies_in_counts_none(engine):
    query = _judged_on("guide/install.md")
    nowhere = [Judged("faq.md", 1000, 1001, long=False)]  # past the page's last line
    assert ceiling.first_inside(engine, "docs", query, nowhere) == 0
    assert not ceiling.held(engine, "docs", query, nowhere)
    assert ceiling.judged_sections(engine, "docs", _judged_on("missing.md")) == []
