"""The tables of docs/benchmarks.md and docs/reliability.md are what the committed
summaries in bench/results render to (bench/tables.py), so the documents cannot drift
from the results; and a run's summary, once recorded, is what its table shows."""

from __future__ import annotations

import json

import pytest

from bench import tables
from bench.faults.rows import Row, as_figures
from bench.summary import Figure, Machine, Summary, committed, record

DOCS = [tables.BENCHMARKS, tables.RELIABILITY]


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: d.name)
def test_the_tables_are_the_committed_summaries(doc):
    summaries = tables.summaries_for(doc)
    assert summaries, f"no summary in bench/results has its table in {doc.name}"
    assert tables.stale(doc, summaries) == []


def summary(name: str, figures: list[Figure], which: str = "") -> Summary:
    machine = Machine(python="3.11.7", platform="Linux", cpus=2)
    return Summary(
        bench=name,
        set=which,
        date="2026-12-01T10:00:00Z",
        commit="abc1234",
        dirty=False,
        machine=machine,
        figures=figures,
    )


def test_a_recorded_run_rewrites_its_table_and_a_changed_summary_shows(tmp_path):
    results, cache, doc = tmp_path / "results", tmp_path / "cache", tmp_path / "doc.md"
    doc.write_text("# Doc\n\n<!-- bench:push -->\nold\n<!-- /bench:push -->\n\nAfter.\n")
    figures = [
        Figure("push", "median", 0.45, "s", "<= 1.0", True),
        Figure("push", "p95", 1.25, "s"),
        Figure("cold start", "first answer", 1.04, "s", "<= 1", False),
    ]
    record(summary("push", figures), {"seconds": [0.4, 0.5]}, results, cache)
    assert json.loads((cache / "push.json").read_text())["raw"] == {"seconds": [0.4, 0.5]}
    assert "seconds" not in (results / "push.json").read_text()  # the raw stays in the cache

    found = committed(results)
    assert tables.rewrite(doc, found) == []
    text = doc.read_text()
    assert "| push: median | 0.45 s | <= 1.0 | ok |" in text
    assert "| cold start: first answer | 1.04 s | <= 1 | **missed** |" in text
    assert "Last run: 2026-12-01 at `abc1234`" in text and text.endswith("\nAfter.\n")
    assert tables.stale(doc, found) == []

    figures[1] = Figure("push", "p95", 1.5, "s")
    record(summary("push", figures), {}, results, cache)
    assert tables.stale(doc, committed(results)) == [
        "push: the table is not its summary's (rewrite the tables)"
    ]
    assert tables.rewrite(doc, {"other": found["push"]}) == ["other"]  # no block for it


def test_a_fault_scenario_shows_its_full_run_and_its_quick_set(tmp_path):
    results, cache = tmp_path / "results", tmp_path / "cache"
    kills = Row("crash", "kill -9 inside a compaction", 14, 0)
    queries = Row("crash", "queries during all of the above", 3000, 2, {"failed requests": 2})
    record(summary("faults-crash", as_figures([kills, queries]), "full"), {}, results, cache)
    record(summary("faults-crash", as_figures([kills]), "quick"), {}, results, cache)
    assert sorted(p.name for p in results.iterdir()) == [
        "faults-crash.json",
        "faults-crash.quick.json",
    ]

    block = tables.render(committed(results)["faults-crash"])
    table = block.split("\n\n")[0]
    assert table.splitlines()[2:] == [
        "| kill -9 inside a compaction | 14 | 0 |  |",
        "| queries during all of the above | 3,000 | **2** (target == 0) | failed requests: 2 |",
    ]
    assert "Last run: the full set, 2026-12-01" in block
    assert "The quick set: lost 0 in 1 row; 2026-12-01 at `abc1234`." in block
