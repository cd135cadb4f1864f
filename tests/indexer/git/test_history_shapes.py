"""Any history git can hold is indexed: shallow and partial clones, grafts, missing parents,
empty repositories, a HEAD naming no branch, a branch deleted and recreated, orphan
branches, submodules and LFS pointers. Whatever can be read is indexed, page dates fall
back to the history there is (and say so), and what cannot be read is one sentence: a
per-file problem, or the source's error, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from docdex.index_format.config import Config, SourceConfig, save_config
from docdex.index_format.layout import DataDir
from docdex.index_format.store import load_current, load_pages
from docdex.indexer.git.history import HISTORY_ENDS, RENAME_UNCHECKED
from docdex.indexer.run.pipeline import index_sources
from docdex.indexer.run.report import RunReport, SourceReport

from gitrepo import Workspace, git

BIG = "# Big page\n\n" + "".join(
    f"Paragraph {n} about the narwhal migration.\n\n" for n in range(120)
)
ALLOW_FILTER = "--upload-pack=git -c uploadpack.allowFilter=true upload-pack"


@pytest.fixture
def history(tmp_path) -> Workspace:
    """Five commits: small pages, a page over 3 KB, a rename of the big page."""
    ws = Workspace(tmp_path / "src")
    ws.write("guide.md", "# Guide\n\nHow to feed the axolotl.\n")
    ws.write("big.md", BIG)
    ws.commit_and_push("first")
    ws.write("faq.md", "# FAQ\n\nWhy the axolotl smiles.\n")
    ws.commit_and_push("faq")
    ws.move("big.md", "large.md")
    ws.write("large.md", BIG + "One more paragraph.\n")
    ws.commit_and_push("rename the big page")
    ws.write("guide.md", "# Guide\n\nHow to feed the axolotl, twice a day.\n")
    ws.commit_and_push("edit the guide")
    ws.write("news.md", "# News\n\nThe aquarium opens on Monday.\n")
    ws.commit_and_push("news")
    return ws


def clone(src: Path, dst: Path, *args: str) -> Path:
    git(dst.parent, "clone", "-q", "--bare", *args, f"file://{src}", str(dst))
    if any(a.startswith("--filter") for a in args):
        git(dst, "remote", "remove", "origin")  # the missing blobs stay missing
    return dst


def index(tmp_path: Path, location: Path, embedder, **kwargs) -> RunReport:
    data = DataDir(tmp_path / "data")
    config = Config(sources=[SourceConfig(name="docs", location=str(location))])
    return index_sources(data, config, embedder=embedder, **kwargs)


def docs_report(report: RunReport) -> SourceReport:
    return next(s for s in report.sources if s.name == "docs")


def pages(tmp_path: Path) -> dict:
    data = DataDir(tmp_path / "data")
    state = load_current(data).sources["docs"]
    return {p.path: p for p in load_pages(data, state.pages_file)} if state.pages_file else {}


def problems(report: RunReport) -> dict[str, str]:
    return {p.path: p.problem for p in docs_report(report).problems}


# --- partial clones ---------------------------------------------------------------------------


def test_a_partial_clone_indexes_what_it_holds(tmp_path, history, embedder):
    partial = clone(history.bare, tmp_path / "partial.git", "--filter=blob:limit=3k", ALLOW_FILTER)
    report = index(tmp_path, partial, embedder)
    assert docs_report(report).status == "indexed" and report.published
    assert set(pages(tmp_path)) == {"guide.md", "faq.md", "news.md"}
    missing = problems(report)["large.md"]
    assert "missing from the repository" in missing and "git fetch --refetch" in missing
    found = pages(tmp_path)  # dated from history, which needs trees only
    assert found["guide.md"].dates_note == ""
    assert found["guide.md"].created < found["guide.md"].modified


def test_a_rename_a_partial_clone_cannot_check_says_so(tmp_path, embedder):
    ws = Workspace(tmp_path / "src")
    ws.write("old.md", BIG)
    ws.commit_and_push("big")
    ws.move("old.md", "new.md")
    ws.write("new.md", BIG + "Edited on the way.\n")  # a content rename: needs both blobs
    ws.commit_and_push("rename")
    ws.write("new.md", "# Small now\n\nThe page shrank to a line about the narwhal.\n")
    ws.commit_and_push("shrink")
    partial = clone(ws.bare, tmp_path / "partial.git", "--filter=blob:limit=3k", ALLOW_FILTER)
    index(tmp_path, partial, embedder)
    page = pages(tmp_path)["new.md"]
    assert page.dates_note == RENAME_UNCHECKED


def test_a_clone_without_blobs_reports_every_page(tmp_path, history, embedder):
    bare = clone(history.bare, tmp_path / "none.git", "--filter=blob:none", ALLOW_FILTER)
    report = index(tmp_path, bare, embedder)
    assert docs_report(report).status == "indexed"
    assert set(problems(report)) == {"guide.md", "faq.md", "large.md", "news.md"}
    assert pages(tmp_path) == {}


def test_the_cli_says_one_line_per_missing_page_and_no_traceback(tmp_path, history):
    bare = clone(history.bare, tmp_path / "none.git", "--filter=blob:none", ALLOW_FILTER)
    data = DataDir(tmp_path / "data")
    data.ensure()
    save_config(data, Config(sources=[SourceConfig(name="docs", location=str(bare))]))
    done = subprocess.run(
        [sys.executable, "-m", "docdex.cli", "--data", str(data.root), "index"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "DOCDEX_LOG_LEVEL": "WARNING"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    skipped = [line for line in done.stdout.splitlines() if line.startswith("  skipped ")]
    assert len(skipped) == 4 and all("missing from the repository" in s for s in skipped)


# --- shallow clones, grafts, missing parents --------------------------------------------------


def test_a_clone_of_depth_one_dates_its_pages_from_the_one_commit(tmp_path, history, embedder):
    shallow = clone(history.bare, tmp_path / "shallow.git", "--depth", "1")
    report = index(tmp_path, shallow, embedder)
    assert docs_report(report).status == "indexed"
    found = pages(tmp_path)
    assert set(found) == {"guide.md", "faq.md", "large.md", "news.md"}
    head = git(shallow, "log", "-1", "--format=%H")
    for page in found.values():
        assert page.created == page.modified and page.commit == head
        assert page.dates_note == HISTORY_ENDS


def test_a_clone_of_depth_n_has_exact_dates_for_what_changed_within_it(tmp_path, history, embedder):
    shallow = clone(history.bare, tmp_path / "shallow.git", "--depth", "3")
    index(tmp_path, shallow, embedder)
    found = pages(tmp_path)
    news = found["news.md"]  # added by the newest commit: its whole history is there
    assert news.dates_note == "" and news.created == news.modified
    assert found["guide.md"].dates_note == HISTORY_ENDS
    assert found["guide.md"].created < found["guide.md"].modified  # edited within the depth

    # The source moves on; the shallow clone fetches the new commit and indexes it.
    history.write("news.md", "# News\n\nThe aquarium opens on Tuesday.\n")
    tip = history.commit_and_push("news moved")
    git(shallow, "fetch", "-q", "origin", "main:main")
    report = index(tmp_path, shallow, embedder)
    assert docs_report(report).modified == 1 and docs_report(report).commit == tip
    news_again = pages(tmp_path)["news.md"]
    assert news_again.commit == tip and news_again.created == news.created


def test_a_graft_ends_history_where_it_says(tmp_path, history, embedder):
    bare = clone(history.bare, tmp_path / "grafted.git")
    cut = git(bare, "rev-parse", "main~1")
    (bare / "info").mkdir(exist_ok=True)
    (bare / "info" / "grafts").write_text(f"{cut}\n")  # main~1 has no parents now
    index(tmp_path, bare, embedder)
    found = pages(tmp_path)
    assert found["news.md"].dates_note == ""  # added by main, after the graft
    assert found["faq.md"].dates_note == HISTORY_ENDS
    assert found["faq.md"].created == found["guide.md"].created  # both "added" at the graft


def test_a_missing_parent_ends_history_there(tmp_path, history, embedder):
    bare = loose_clone(history.bare, tmp_path / "loose.git")
    first = git(bare, "rev-list", "--max-parents=0", "main")
    (bare / "objects" / first[:2] / first[2:]).unlink()  # the root commit is gone
    report = index(tmp_path, bare, embedder)
    assert docs_report(report).status == "indexed"
    found = pages(tmp_path)
    assert found["guide.md"].dates_note == HISTORY_ENDS and found["news.md"].dates_note == ""


def loose_clone(src: Path, bare: Path) -> Path:
    """A bare clone whose objects are loose files, so that a test can remove one."""
    git(bare.parent, "clone", "-q", "--bare", "--no-local", str(src), str(bare))
    packs = list((bare / "objects" / "pack").iterdir())
    pack = next(p for p in packs if p.suffix == ".pack").read_bytes()
    for path in packs:
        path.unlink()
    git(bare, "unpack-objects", "-q", input=pack)
    return bare


def test_a_missing_tree_fails_the_source_in_a_sentence_and_the_others_publish(
    tmp_path, history, embedder
):
    bare = loose_clone(history.bare, tmp_path / "loose.git")
    tree = git(bare, "rev-parse", "main^{tree}")
    (bare / "objects" / tree[:2] / tree[2:]).unlink()
    other = Workspace(tmp_path / "other")
    other.write("manual.md", "# Manual\n\nThe other docs, about the okapi.\n")
    other.commit_and_push()
    data = DataDir(tmp_path / "data")
    config = Config(
        sources=[
            SourceConfig(name="docs", location=str(bare)),
            SourceConfig(name="other", location=str(other.bare)),
        ]
    )
    report = index_sources(data, config, embedder=embedder)
    outcome = {s.name: s for s in report.sources}
    assert outcome["other"].status == "indexed" and report.published
    error = outcome["docs"].error
    assert outcome["docs"].status == "failed" and f"tree {tree} is missing" in error
    assert "git fetch --refetch" in error and "\n" not in error


# --- branches --------------------------------------------------------------------------------


def test_an_empty_repository_has_nothing_pushed_yet(tmp_path, embedder):
    empty = tmp_path / "empty.git"
    git(tmp_path, "init", "-q", "--bare", "--initial-branch=main", str(empty))
    report = index(tmp_path, empty, embedder)
    error = docs_report(report).error
    assert "nothing has been pushed" in error and "does not exist" not in error


def test_head_naming_a_missing_branch_says_which_exist(tmp_path, history, embedder):
    git(history.bare, "symbolic-ref", "HEAD", "refs/heads/master")
    report = index(tmp_path, history.bare, embedder)
    error = docs_report(report).error
    assert "HEAD" in error and "'master'" in error and "main" in error and "branch" in error


def test_a_branch_deleted_and_recreated_is_indexed_again(tmp_path, history, embedder):
    index(tmp_path, history.bare, embedder)
    git(history.bare, "update-ref", "-d", "refs/heads/main")
    gone = docs_report(index(tmp_path, history.bare, embedder))
    assert gone.status == "branch-deleted" and pages(tmp_path) == {}

    history.push()  # the branch again
    back = docs_report(index(tmp_path, history.bare, embedder))
    assert back.status == "indexed" and back.added == 4
    assert set(pages(tmp_path)) == {"guide.md", "faq.md", "large.md", "news.md"}
    history.write("faq.md", "# FAQ\n\nWhy the axolotl smiles so much.\n")
    history.commit_and_push()
    after = docs_report(index(tmp_path, history.bare, embedder))
    assert after.status == "indexed" and after.modified == 1 and not after.error


def test_an_orphan_branch_pushed_over_the_old_history(tmp_path, history, embedder):
    index(tmp_path, history.bare, embedder)
    git(history.work, "checkout", "-q", "--orphan", "fresh")
    git(history.work, "rm", "-q", "-r", "--cached", ".")
    for path in ("guide.md", "faq.md", "large.md", "news.md"):
        (history.work / path).unlink()
    history.write("start.md", "# Start\n\nA new history about the capybara.\n")
    history.commit("orphan")
    history.push(force=True)
    report = docs_report(index(tmp_path, history.bare, embedder))
    assert report.status == "indexed" and (report.added, report.deleted) == (1, 4)
    page = pages(tmp_path)["start.md"]
    assert page.dates_note == "" and page.created == page.modified


# --- what a tree holds that is no page ---------------------------------------------------------


def test_submodules_and_lfs_pointers_are_problems_not_pages(tmp_path, history, embedder):
    lfs = (
        "version https://git-lfs.github.com/spec/v1\n"
        "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
        "size 12345\n"
    )
    history.write("manual.md", lfs)
    head = git(history.work, "rev-parse", "HEAD")
    git(history.work, "add", "manual.md")
    git(history.work, "update-index", "--add", "--cacheinfo", f"160000,{head},theme")
    git(history.work, "commit", "-q", "-m", "a submodule and an LFS pointer")
    history.push()
    report = index(tmp_path, history.bare, embedder)
    found = problems(report)
    assert "Git LFS pointer" in found["manual.md"]
    assert "submodule" in found["theme"] and head[:12] in found["theme"]
    assert "manual.md" not in pages(tmp_path) and "news.md" in pages(tmp_path)
