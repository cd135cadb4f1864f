"""The `docdex` command as a user runs it: sources, index, inspect, gc, errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from docdex.cli import main
from docdex.index_format.config import DEFAULT_EXCLUDE
from docdex.index_format.layout import DataDir
from docdex.index_format.store import current_version, load_current

from gitrepo import Workspace, git

DOCDEX = [sys.executable, "-m", "docdex.cli"]


def docdex(data: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [*DOCDEX, "--data", str(data), *args], capture_output=True, text=True, check=False
    )
    if check and result.returncode != 0:
        raise AssertionError(f"docdex {' '.join(args)} failed: {result.stderr}")
    return result


def test_cli_usage_errors_are_one_line(tmp_path, capsys):
    data = str(tmp_path / "data")
    assert main(["--data", data, "source", "remove", "nope"]) == 1
    assert "unknown source 'nope'" in capsys.readouterr().err
    assert main(["--data", data, "source", "add", "../bad", str(tmp_path)]) == 1
    assert "invalid source name" in capsys.readouterr().err
    assert main(["--data", data, "source", "add", "x", str(tmp_path)]) == 1
    assert "not a git repository" in capsys.readouterr().err
    assert main(["--data", data, "index"]) == 1
    assert "no sources are configured" in capsys.readouterr().err
    assert main(["--data", str(tmp_path / "nowhere"), "inspect"]) == 1
    assert "does not exist; set one up with `docdex source add" in capsys.readouterr().err
    DataDir(data).ensure()
    assert main(["--data", data, "inspect", "doc", "x:y.md"]) == 1
    assert "no published version" in capsys.readouterr().err


def test_source_commands_round_trip(tmp_path, capsys):
    ws = Workspace(tmp_path / "repo")
    data = str(tmp_path / "data")
    assert (
        main(
            [
                "--data",
                data,
                "source",
                "add",
                "docs",
                str(ws.bare),
                "--branch",
                "main",
                "--exclude",
                "drafts/**",
            ]
        )
        == 0
    )
    assert main(["--data", data, "source", "add", "docs", str(ws.bare)]) == 1
    capsys.readouterr()
    assert main(["--data", data, "source", "list", "--json"]) == 0
    [source] = json.loads(capsys.readouterr().out)
    assert source["location"] == str(ws.bare)
    assert source["exclude"][-1:] == ["drafts/**"]  # after the default excludes, if any
    assert source["include"] == ["**/*.md", "**/*.markdown", "**/*.mdx"]
    assert main(["--data", data, "source", "remove", "docs"]) == 0
    capsys.readouterr()
    assert main(["--data", data, "source", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


@pytest.mark.slow
def test_apm_docs_index_inspect_and_one_file_edit(tmp_path, shared):
    """The issue's acceptance run, on the real apm-docs corpus, through the console."""
    bare = tmp_path / "apm.git"
    git(
        tmp_path,
        "clone",
        "-q",
        "--bare",
        "-b",
        "main",
        str(shared / "corpora" / "apm-docs.bundle"),
        str(bare),
    )
    data = tmp_path / "data"
    docdex(data, "source", "add", "apm", str(bare))
    first = json.loads(docdex(data, "index", "--json").stdout)
    [apm] = first["sources"]
    assert first["published"] and apm["added"] == 51 and apm["chunks_embedded"] > 300
    versions = json.loads(docdex(data, "inspect", "--json").stdout)
    # published for keywords first, then as its vectors came (adr/0042): the last is current
    assert versions[-1]["current"] and versions[-1]["chunks"] == first["chunks"]
    assert versions[-1]["version"] == first["version"] and versions[-1]["waiting"] == 0
    assert f"version {first['version']} (current)" in docdex(data, "inspect").stdout

    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(bare), str(work))
    readme = work / "README.md"
    readme.write_text(readme.read_text() + "\n## Release cadence\n\nWe ship every Tuesday.\n")
    git(work, "commit", "-q", "-am", "one more section")
    git(work, "push", "-q", "origin", "HEAD:main")
    second = json.loads(docdex(data, "index", "--json").stdout)
    [apm] = second["sources"]
    assert (apm["added"], apm["modified"], apm["deleted"], apm["renamed"]) == (0, 1, 0, 0)
    assert 1 <= apm["chunks_embedded"] <= 2  # the new section (and a chunk it changed)
    assert apm["chunks_reused"] >= 1
    text = docdex(data, "index").stdout
    assert "apm: unchanged" in text and "nothing changed" in text
    doc = json.loads(docdex(data, "inspect", "doc", "apm:README.md", "--json").stdout)
    assert doc["chunks"][-1]["breadcrumb"].endswith("Release cadence")
    assert all(c["windows"] >= 1 and c["start_line"] <= c["end_line"] for c in doc["chunks"])
    source = json.loads(docdex(data, "inspect", "source", "apm", "--json").stdout)
    assert len(source["pages"]) == 51 and source["state"]["commit"] == apm["commit"]


def test_kill_9_mid_index_keeps_the_previous_version(tmp_path):
    """A real SIGKILL at several moments of a run; the previous version keeps reading."""
    ws = Workspace(tmp_path / "repo")
    ws.write("start.md", "# Start\n\nThe first version has this one page only.\n")
    ws.commit_and_push()
    data = tmp_path / "data"
    docdex(data, "source", "add", "docs", str(ws.bare))
    docdex(data, "index")
    before = load_current(DataDir(data))
    for i in range(60):
        ws.write(f"bulk/page{i}.md", f"# Page {i}\n\n" + f"Sentence {i} about indexing. " * 80)
    ws.commit_and_push("bulk")
    for delay in (0.5, 1.5, 3.0):
        proc = subprocess.Popen(
            [*DOCDEX, "--data", str(data), "index"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        current = load_current(DataDir(data))  # whole and readable, whatever the moment
        assert current.sources["docs"].files in (1, 61)
        assert (current.version == before.version) == (current.sources["docs"].files == 1)
    docdex(data, "index")
    manifest = load_current(DataDir(data))
    assert manifest.version > before.version and manifest.sources["docs"].files == 61
    assert current_version(DataDir(data)) == manifest.version


def test_corrupt_index_gets_a_clear_error(tmp_path, capsys):
    ws = Workspace(tmp_path / "repo")
    ws.write("a.md", "# A page\n\nSome text long enough to become one chunk of its own.\n")
    ws.commit_and_push()
    data = tmp_path / "data"
    assert main(["--data", str(data), "source", "add", "docs", str(ws.bare)]) == 0
    assert main(["--data", str(data), "index"]) == 0
    manifest = DataDir(data).manifest(1)
    manifest.write_bytes(b'{"format_major": 1, "version": "garbage"')
    capsys.readouterr()
    assert main(["--data", str(data), "inspect"]) == 1
    err = capsys.readouterr().err
    assert "is not a docdex manifest" in err and str(manifest) in err
    manifest.write_bytes(manifest.read_bytes().replace(b"garbage", b"1").rstrip(b'"') + b"}")
    (DataDir(data).current).write_text("not-a-number\n")
    assert main(["--data", str(data), "index"]) == 1
    assert "does not name a version" in capsys.readouterr().err


def test_search_takes_the_configured_reranker_or_the_flag(tmp_path, capsys):
    ws = Workspace(tmp_path / "repo")
    ws.write("a.md", "# Rotation\n\nRotate the signing key with `docdex-keys rotate --now`.\n")
    ws.commit_and_push()
    data = str(tmp_path / "data")
    assert main(["--data", data, "source", "add", "docs", str(ws.bare)]) == 0
    assert main(["--data", data, "index"]) == 0
    capsys.readouterr()
    assert main(["--data", data, "search", "rotate the signing key", "--json"]) == 0
    [hit] = json.loads(capsys.readouterr().out)["results"]
    assert hit["path"] == "a.md" and "--now" in hit["text"]
    assert main(["--data", data, "search", "rotate", "--reranker", "bogus"]) == 1
    assert "unknown reranker 'bogus'" in capsys.readouterr().err


def test_source_set_changes_a_source_and_keeps_its_index(tmp_path, capsys):
    ws = Workspace(tmp_path / "repo")
    ws.write("guide/keys.md", "# Keys\n\nThe signing key rotates every ninety days.\n")
    ws.write("drafts/plan.md", "# Plan\n\nA draft of the next release, not yet for readers.\n")
    ws.commit_and_push()
    data = tmp_path / "data"
    docdex(data, "source", "add", "docs", str(ws.bare))
    first = json.loads(docdex(data, "index", "--json").stdout)
    assert first["sources"][0]["added"] == 2

    args = ["--data", str(data), "source", "set", "docs"]
    assert main([*args, "--exclude", "drafts/**", "--description", "the team's guide"]) == 0
    assert "changed source docs: description, exclude;" in capsys.readouterr().out
    changed = json.loads(docdex(data, "index", "--json").stdout)
    [run] = changed["sources"]
    assert changed["published"] and run["deleted"] == 1  # the excluded page left ...
    assert (run["modified"], run["reread"]) == (0, 1)  # ... the kept one read, unchanged
    assert run["chunks_embedded"] == 0  # ... and nothing kept was embedded again
    pages = json.loads(docdex(data, "inspect", "source", "docs", "--json").stdout)["pages"]
    assert pages == ["guide/keys.md"]

    assert main([*args, "--description", "the guide"]) == 0  # files untouched: nothing read
    capsys.readouterr()
    assert not json.loads(docdex(data, "index", "--json").stdout)["published"]
    assert main(["--data", str(data), "source", "list", "--json"]) == 0
    [source] = json.loads(capsys.readouterr().out)
    assert source["description"] == "the guide"
    assert source["exclude"] == [*DEFAULT_EXCLUDE, "drafts/**"]  # added to the defaults

    assert main(args) == 1  # nothing to change
    assert main(["--data", str(data), "source", "set", "nope", "--branch", "x"]) == 1
    assert "unknown source 'nope'" in capsys.readouterr().err
