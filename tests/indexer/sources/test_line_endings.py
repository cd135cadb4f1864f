"""Checkouts whose files git converts on checkout (core.autocrlf=true, `eol=crlf`
attributes) compare with their blobs the way git compares them: a CRLF copy of a committed
LF file is unchanged, a real edit is an edit."""

from __future__ import annotations

from pathlib import Path

import pytest
from dulwich.repo import Repo

from docdex.index_format.config import Config, SourceConfig, save_config
from docdex.index_format.layout import DataDir
from docdex.index_format.store import load_current, load_pages
from docdex.indexer.run.pipeline import index_sources
from docdex.indexer.sources.worktree import Worktree

from gitrepo import Workspace, git

GUIDE = "# Install\n\nRun the installer with `--prefix /opt/docdex` to pick a directory.\n"
FAQ = "# FAQ\n\n## Why is my index stale?\n\nThe worker publishes a new version quickly.\n"


def crlf(text: str) -> bytes:
    return text.replace("\n", "\r\n").encode()


def clone(ws: Workspace, where: Path, *options: str) -> Path:
    git(where.parent, "clone", "-q", *options, str(ws.bare), str(where))
    return where


@pytest.fixture(params=["autocrlf", "attributes"])
def checkout(request, tmp_path) -> Path:
    """A clone whose markdown files git checked out with CRLF line endings."""
    ws = Workspace(tmp_path / "repo")
    ws.write("guide/install.md", GUIDE)
    ws.write("faq.md", FAQ)
    if request.param == "attributes":
        ws.write(".gitattributes", "*.md text eol=crlf\n")
    ws.commit_and_push("initial")
    options = ["-c", "core.autocrlf=true"] if request.param == "autocrlf" else []
    work = clone(ws, tmp_path / "clone", *options)
    assert (work / "faq.md").read_bytes() == crlf(FAQ)
    return work


def configure(data: DataDir, work: Path) -> Config:
    data.ensure()
    config = Config(sources=[SourceConfig(name="docs", location=str(work))])
    save_config(data, config)
    return config


def test_a_crlf_checkout_is_unchanged_in_the_working_tree(tmp_path, checkout, embedder):
    data = DataDir(tmp_path / "data")
    config = configure(data, checkout)
    index_sources(data, config, embedder=embedder)  # `docdex index`: the branch head

    report = index_sources(data, config, embedder=embedder, worktree=True)  # watch's first cycle
    source = report.sources[0]
    assert (source.added, source.modified, source.deleted, source.chunks_embedded) == (0, 0, 0, 0)
    head = git(checkout, "rev-parse", "HEAD")
    pages = load_pages(data, load_current(data).sources["docs"].pages_file)
    assert {p.path: p.commit for p in pages} == {"faq.md": head, "guide/install.md": head}

    (checkout / "faq.md").write_bytes(crlf(FAQ + "\nSaved on Windows: the quillowisp.\n"))
    (checkout / "guide/install.md").write_bytes(crlf(GUIDE))  # saved again, same text
    dirty = {"docs": {"faq.md", "guide/install.md"}}
    report = index_sources(data, config, embedder=embedder, worktree=True, dirty=dirty)
    assert report.sources[0].modified == 1  # the real edit only
    pages = load_pages(data, load_current(data).sources["docs"].pages_file)
    assert {p.path: p.commit for p in pages} == {"faq.md": "", "guide/install.md": head}


def test_blob_ids_are_those_git_computes(tmp_path):
    """Every case of git's checkin conversion, against git's own answers."""
    ws = Workspace(tmp_path / "repo")
    ws.write(".gitattributes", "keep/** -text\nauto/** text=auto\n")
    ws.write("crlf-committed.md", crlf(FAQ))  # committed with CRLF before autocrlf was on
    ws.write("auto/lone-cr.md", b"# Mixed\r\nline\rline\r\n")
    ws.commit("initial")
    git(ws.work, "config", "core.autocrlf", "true")
    files = {
        "plain.md": crlf(GUIDE),  # converted: autocrlf
        "keep/raw.md": crlf(GUIDE),  # -text: never converted
        "auto/new.md": crlf(FAQ),  # text=auto: converted
        "crlf-committed.md": crlf(FAQ + "\nEdited.\n"),  # the index holds CRLF: kept as is
        "lf.md": GUIDE.encode(),  # nothing to convert
        "binary.md": b"# Bin\r\n\x00\x01\r\n",  # binary: kept as is
        "lone-cr.md": b"# New\r\nline\rline\r\n",  # a lone CR: binary to git, kept
    }
    for path, content in files.items():
        ws.write(path, content)
    with Repo(str(ws.work)) as repo:
        blobs = {p: f.blob for p, f in Worktree(repo, ["**/*.md"], []).files().items()}
    git(ws.work, "add", "-A")  # not `git hash-object`: it ignores what the index holds
    staged = staged_blobs(ws.work)
    assert set(blobs) == set(files) | {"auto/lone-cr.md"}
    assert blobs == {p: staged[p] for p in blobs}


def staged_blobs(work: Path) -> dict[str, str]:
    entries = (line.split(maxsplit=3) for line in git(work, "ls-files", "-s").splitlines())
    return {path: sha for _mode, sha, _stage, path in entries}
