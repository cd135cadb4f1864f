"""What the `docdex` command prints for people says what it means in words: the files an
index run changed, which retriever found a hit, each indexed ref and commit, and a commit
that includes a checkout's uncommitted edits. `--json` keeps its shape."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from docdex.index_format.config import Config, SourceConfig, save_config
from docdex.index_format.layout import DataDir
from docdex.indexer.run.pipeline import index_sources

from gitrepo import Workspace, git

DOCDEX = [sys.executable, "-m", "docdex.cli"]
KEYS = "# Keys\n\nThe signing key rotates every ninety days with `docdex-keys rotate`.\n"
PLAN = "# Plan\n\nThe next release moves the archive to cold storage in the spring.\n"
VERSION_KEYS = {
    "version",
    "current",
    "created_at",
    "commits",
    "segments",
    "chunks",
    "vectors",
    "bytes",
    "waiting",  # chunks published keywords first, not embedded yet (added, nothing renamed)
}


def docdex(data: Path, *args: str) -> str:
    result = subprocess.run(
        [*DOCDEX, "--data", str(data), *args], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, f"docdex {' '.join(args)} failed: {result.stderr}"
    return result.stdout


def two_pages(root: Path) -> Workspace:
    ws = Workspace(root)
    ws.write("keys.md", KEYS)
    ws.write("plan.md", PLAN)
    ws.commit_and_push()
    return ws


def test_index_inspect_and_search_say_it_in_words(tmp_path):
    ws = two_pages(tmp_path / "repo")
    git(ws.work, "tag", "v1")
    git(ws.work, "push", "-q", "origin", "v1")
    sha = git(ws.bare, "rev-parse", "main")
    data = tmp_path / "data"
    docdex(data, "source", "add", "docs", str(ws.bare), "--ref", "v*")

    indexed = docdex(data, "index").splitlines()
    assert f"docs: indexed, commit {sha[:12]}" in indexed
    assert f"docs@v1: indexed, commit {sha[:12]}" in indexed
    assert indexed.count("  files: 2 added, 0 modified, 0 deleted, 0 renamed") == 2
    assert any(re.fullmatch(r"  chunks: \d+ embedded, \d+ reused \(.+\)", ln) for ln in indexed)

    inspected = docdex(data, "inspect")
    assert f"    docs at branch main, commit {sha[:12]}\n" in inspected
    assert f"    docs at tag v1, commit {sha[:12]}\n" in inspected
    assert "@v1@" not in inspected and "* version 1 (current)" in inspected
    [version] = json.loads(docdex(data, "inspect", "--json"))
    assert set(version) == VERSION_KEYS  # --json as it was
    assert version["commits"] == {"docs": sha, "docs@v1": sha}
    tag = docdex(data, "inspect", "source", "docs@v1")
    assert f"\n  tag v1, commit {sha}\n" in tag

    found = docdex(data, "search", "docdex-keys rotate the signing key", "-n", "2")
    assert re.search(
        r"1\. docs:keys\.md:1-3  score \d\.\d{3}, found by keywords and meaning", found
    )
    assert "(both)" not in found and "\nscore: how well a hit matches this query" in found


def test_a_full_run_reports_what_changed_since_the_last_version(tmp_path):
    ws = two_pages(tmp_path / "repo")
    data = tmp_path / "data"
    docdex(data, "source", "add", "docs", str(ws.bare))
    docdex(data, "index")

    [again] = json.loads(docdex(data, "index", "--full", "--json"))["sources"]
    counts = [again[k] for k in ("added", "modified", "deleted", "renamed", "reread")]
    assert counts == [0, 0, 0, 0, 2] and again["chunks_embedded"] == 0

    ws.write("plan.md", PLAN + "\n## Later\n\nThe archive keeps ten years of reports.\n")
    ws.commit_and_push()
    full = docdex(data, "index", "--full")
    assert "  files: 0 added, 1 modified, 0 deleted, 0 renamed; 1 unchanged (read again)" in full
    assert "docs: unchanged" in docdex(data, "index")


def test_a_watched_checkout_says_its_commit_has_uncommitted_edits(tmp_path, embedder):
    ws = two_pages(tmp_path / "repo")
    head = git(ws.work, "rev-parse", "HEAD")
    ws.write("plan.md", PLAN + "\n## Draft\n\nAn edit saved but not committed yet.\n")
    data = DataDir(tmp_path / "data")
    data.ensure()
    config = Config(sources=[SourceConfig(name="notes", location=str(ws.work))])
    save_config(data, config)
    index_sources(data, config, embedder=embedder, worktree=True)  # what `docdex watch` runs

    inspected = docdex(data.root, "inspect")
    assert f"    notes at branch main, commit {head[:12]} + uncommitted edits\n" in inspected
    source = docdex(data.root, "inspect", "source", "notes")
    assert f"\n  branch main, commit {head} + uncommitted edits\n" in source
    assert "(an uncommitted edit)" in docdex(data.root, "inspect", "doc", "notes:plan.md")
    assert f"(commit {head[:12]})" in docdex(data.root, "inspect", "doc", "notes:keys.md")
