"""Fuzzing as a row: run tests/server/mcp/test_fuzz.py (hypothesis over every MCP tool and
HTTP route, against a real `docdex serve`) and count the test cases it tried and the ones
that failed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from .rows import Row
from bench.common import ROOT

_SUMMARY = re.compile(r"(\d+) (passed|failed|errors?)\b")


def run(quick: bool, work: Path) -> list[Row]:
    counts_file = work / "counts.json"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    command += ["-p", "bench.faults.fuzzcount", "tests/server/mcp/test_fuzz.py"]
    done = subprocess.run(
        command,
        cwd=ROOT,
        env={**os.environ, "DOCDEX_FUZZ_COUNTS": str(counts_file)},
        capture_output=True,
        text=True,
        check=False,
    )
    cases = json.loads(counts_file.read_text()) if counts_file.exists() else {}
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    outcome = {kind.rstrip("s"): int(n) for n, kind in _SUMMARY.findall(last)}
    failed_tests = outcome.get("failed", 0) + outcome.get("error", 0)
    tried = sum(cases.values())
    return [
        Row(
            scenario="fuzz",
            injected="hypothesis arguments for every MCP tool and HTTP route",
            count=tried,
            lost=cases.get("failed", 0) + failed_tests + (0 if tried else 1),
            figures={
                "cases passed": cases.get("passed", 0),
                "cases invalid": cases.get("gave_up", 0),
                "tests passed": outcome.get("passed", 0),
                "tests failed": failed_tests,
            },
            notes=f"tests/server/mcp/test_fuzz.py: {last}",
        )
    ]
