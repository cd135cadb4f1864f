"""`just demo`, as CI runs it: `python -m docdex.demo --exit` end to end."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest


# The demo embeds docdex's own docs with the real model: minutes on a loaded machine, so its
# safety net is wider than the suite's 300 s (a bound on a hang, not on speed).
@pytest.mark.timeout(1200)
def test_demo_pushes_indexes_searches_and_cleans_up():
    done = subprocess.run(
        [sys.executable, "-m", "docdex.demo", "--exit"],
        capture_output=True,
        text=True,
        timeout=1100,
        check=False,
    )
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert "pushing…" in out and "remote: docdex: queued for indexing: docdex-docs@" in out
    assert re.search(r"indexed: version \d+, [1-9]\d* chunks", out)
    hits = re.findall(r"^  (\S+\.md):(\d+)-(\d+)  \S", out, re.MULTILINE)
    assert hits and all(int(start) <= int(end) for _path, start, end in hits)
    # The pages that tell how a push is indexed (the question the demo asks).
    told = {"README.md", "docs/architecture.md", "docs/deploy.md", "docs/first-run.md"}
    assert {path for path, _s, _e in hits} & told

    url = re.search(r"MCP endpoint \(streamable HTTP\): (\S+)", out).group(1)
    at = out.index("{", out.index(".mcp.json"))
    snippet, _end = json.JSONDecoder().raw_decode(out, at)
    assert snippet == {"mcpServers": {"docdex": {"type": "http", "url": url}}}
    last = out.strip().splitlines()[-1]
    assert last == f"Search page for people, in a browser: {url.removesuffix('mcp')}"

    repo = re.search(r"installed the post-receive hook in (\S+) ", out).group(1)
    assert not Path(repo).parent.exists()  # temporary files removed
