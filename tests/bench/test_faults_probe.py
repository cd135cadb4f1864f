"""The probe's rows (bench/faults/probe.py) from a JUnit XML report: an attack held when
every case of its tests passed; a failed case, or a test that ran no case, is lost."""

from __future__ import annotations

from pathlib import Path

from bench.faults.probe import Attack, read_outcomes, row

REPORT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.server.test_a" name="test_held" />
<testcase classname="tests.server.test_a" name="test_param[one]" />
<testcase classname="tests.server.test_a" name="test_param[two]"><failure message="no" /></testcase>
<testcase classname="tests.http.test_b" name="test_skipped"><skipped message="no chromium" />
</testcase>
<testcase classname="tests.http.test_b" name="test_broken"><error message="fixture" /></testcase>
</testsuite></testsuites>
"""


def test_each_case_counts_for_the_attack_whose_test_it_is(tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    report.write_text(REPORT)
    outcomes = read_outcomes(report)
    assert outcomes["tests/server/test_a.py::test_param[two]"] == "failed"
    assert outcomes["tests/http/test_b.py::test_skipped"] == "skipped"

    held = row(Attack("held", ("tests/server/test_a.py::test_held",)), outcomes, "")
    assert (held.count, held.lost) == (1, 0)
    param = row(Attack("param", ("tests/server/test_a.py::test_param",)), outcomes, "")
    assert (param.count, param.lost, param.figures) == (
        2,
        1,
        {"tests/server/test_a.py::test_param": 1},
    )
    unshown = (
        "tests/http/test_b.py::test_skipped",
        "tests/http/test_b.py::test_broken",
        "tests/http/test_b.py::test_renamed",
    )
    assert row(Attack("unshown", unshown), outcomes, "").lost == 3
    assert row(Attack("measured elsewhere", ()), outcomes, "").lost == 0
