"""A pytest plugin for the fuzz row: counts the test cases hypothesis runs (passed, failed)
through its observability callbacks and writes them as JSON to $DOCDEX_FUZZ_COUNTS."""

from __future__ import annotations

import json
import os
from collections import Counter

from hypothesis.internal.observability import add_observability_callback

counts: Counter[str] = Counter()


def _observe(observation, _thread_id: int) -> None:
    if getattr(observation, "type", "") == "test_case":
        counts[observation.status] += 1


def pytest_configure(config) -> None:
    add_observability_callback(_observe, all_threads=True)


def pytest_unconfigure(config) -> None:
    target = os.environ.get("DOCDEX_FUZZ_COUNTS")
    if target:
        with open(target, "w") as out:
            json.dump(dict(counts), out)
