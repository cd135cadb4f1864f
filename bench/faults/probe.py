"""Attacks as rows: what a hostile tester and the official MCP conformance suite tried, each
answered by its regression tests. The tests of every attack run in one pytest process; its
JUnit XML gives each test case's outcome, and an attack held when all of its cases passed."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from collections import Counter
from pathlib import Path
from typing import NamedTuple

from .rows import Row
from bench.summary import ROOT

STDIO = "tests/server/mcp/test_stdio.py"


class Attack(NamedTuple):
    what: str  # the attack, in a few plain words
    tests: tuple[str, ...]  # pytest node ids of the tests that show it held


ATTACKS = (
    Attack(
        "a get_document cursor reused after its page was edited",
        (
            "tests/indexer/triggers/test_watch.py"
            "::test_a_cursor_from_one_uncommitted_edit_is_refused_after_the_next",
        ),
    ),
    Attack(
        "get_document lines asked of a chunk outside its range",
        (
            "tests/server/answers/test_answers.py::test_lines_asked_of_a_chunk_are_the_ones_it_covers",
        ),
    ),
    Attack(
        "hook install on a repository already a source under another name",
        ("tests/hooks/test_hooks.py::test_a_repository_already_a_source_keeps_its_name",),
    ),
    Attack(
        "a ref asked for by its full name (refs/heads/x, refs/tags/v1)",
        ("tests/indexer/sources/test_refs.py::test_a_full_ref_name_keeps_its_kind",),
    ),
    Attack(
        "`docdex verify` while `docdex gc` collects the version it checks",
        (
            "tests/index_format/test_verify.py"
            "::test_a_version_collected_while_verify_checks_it_is_not_damage",
        ),
    ),
    Attack(
        "bidirectional controls in a path shown on the search page",
        (
            "tests/server/http/test_web.py"
            "::test_a_path_that_overrides_direction_cannot_reverse_the_rest_of_the_line",
        ),
    ),
    Attack(
        "a file named like a chunk id (a.md#chunk0)",
        (
            "tests/indexer/run/test_pipeline.py"
            "::test_a_file_named_like_a_chunk_id_is_a_problem_not_a_page",
        ),
    ),
    Attack(
        "requests piped to `docdex mcp` just before end of input",
        (f"{STDIO}::test_every_request_piped_in_before_end_of_input_is_answered",),
    ),
    # Measured by the cost scenario (bench/faults/cost.py), not by tests: a row pointing there.
    Attack("cost per input byte: the cost scenario's table, not run here", ()),
    Attack(
        "prompts/get on a server that has no prompts",
        (f"{STDIO}::test_what_docdex_does_not_offer_gets_the_specification_s_errors",),
    ),
    Attack(
        "tools/call of a tool that does not exist",
        (f"{STDIO}::test_what_docdex_does_not_offer_gets_the_specification_s_errors",),
    ),
    Attack(
        "initialize: an empty serverInfo.version",
        (f"{STDIO}::test_stdout_carries_the_protocol_only",),
    ),
    Attack(
        "malformed JSON-RPC over HTTP and stdio (bad ids, no jsonrpc, batches)",
        (
            "tests/server/http/test_edge_http.py::test_a_body_that_is_no_request_gets_the_json_rpc_error",
            f"{STDIO}::test_a_line_that_is_no_request_gets_the_json_rpc_error",
        ),
    ),
    Attack(
        "tools/list with a cursor it never gave",
        (f"{STDIO}::test_what_docdex_does_not_offer_gets_the_specification_s_errors",),
    ),
    Attack(
        "resources/list for a session of an older protocol version",
        (f"{STDIO}::test_what_docdex_does_not_offer_gets_the_specification_s_errors",),
    ),
)


def run(quick: bool, work: Path) -> list[Row]:
    return run_attacks(ATTACKS, "probe", work)


def run_attacks(attacks: tuple[Attack, ...], scenario: str, work: Path) -> list[Row]:
    """Every attack's tests in one pytest process; a row per attack, named for `scenario`."""
    report = work / "junit.xml"
    tests = list(dict.fromkeys(t for attack in attacks for t in attack.tests))
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    command += [f"--junitxml={report}", *tests]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    outcomes = read_outcomes(report) if report.exists() else {}
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    return [row(attack, outcomes, last, scenario) for attack in attacks]


def read_outcomes(report: Path) -> dict[str, str]:
    """Each test case of a JUnit XML report by its node id: passed, failed or skipped."""
    outcomes = {}
    for case in ElementTree.parse(report).iter("testcase"):
        # Test functions at module level: the class name is the module's dotted path.
        module = case.get("classname", "").replace(".", "/")
        outcomes[f"{module}.py::{case.get('name', '')}"] = outcome(case)
    return outcomes


def outcome(case: ElementTree.Element) -> str:
    if case.find("failure") is not None or case.find("error") is not None:
        return "failed"
    return "skipped" if case.find("skipped") is not None else "passed"


def cases_of(test: str, outcomes: dict[str, str]) -> Counter[str]:
    """The outcomes of a test's cases (one, or one per parameter set)."""
    return Counter(v for node, v in outcomes.items() if node == test or node.startswith(f"{test}["))


def cases_lost(cases: Counter[str]) -> int:
    """A test's failed cases; one when none passed and none failed (renamed, not collected,
    skipped): a test that ran nothing shows nothing held."""
    return cases["failed"] or (0 if cases["passed"] else 1)


def row(attack: Attack, outcomes: dict[str, str], last: str, scenario: str = "probe") -> Row:
    if not attack.tests:
        return Row(scenario=scenario, injected=attack.what, count=0, lost=0)
    per_test = {test: cases_of(test, outcomes) for test in attack.tests}
    return Row(
        scenario=scenario,
        injected=attack.what,
        count=sum(cases.total() for cases in per_test.values()),
        lost=sum(cases_lost(cases) for cases in per_test.values()),
        figures={test: cases["passed"] for test, cases in per_test.items()},
        notes=f"pytest: {last}",
    )
