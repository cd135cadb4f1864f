"""Symlinked pages follow their targets: a commit or a saved edit that changes, deletes or
moves what a link resolves to re-reads the link's page, in both the git-tree path (bare
repositories) and the working-tree path (watch mode). After every step the incremental
index must equal a fresh index of the same state: pages, their text and the problems."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec
import pytest
from dulwich.repo import Repo

from docdex.index_format.config import Config, SourceConfig, save_config
from docdex.index_format.layout import DataDir
from docdex.index_format.records import FileProblem
from docdex.index_format.store import load_current, load_pages, load_segment, write_manifest
from docdex.indexer.git.blobs import read_markdown
from docdex.indexer.git.diffs import list_files
from docdex.indexer.run.pipeline import index_sources
from docdex.indexer.run.report import RunReport
from docdex.indexer.sources.worktree import Worktree

from gitrepo import Workspace, git

ALPHA = "# Alpha\n\nThe first version talks about the copperfinch.\n"
ALPHA_EDITED = "# Alpha\n\nThe second version talks about the silverwren.\n"
BETA = "# Beta\n\nA different page about the marblecrest.\n"
OUTSIDE = "# Secret\n\nOutside the repository: never read, the obsidianmoth.\n"

Indexed = tuple[dict[str, str], dict[str, str]]  # path -> page text, path -> problem


def served(data: DataDir, source: str = "docs") -> Indexed:
    """The pages (their chunks' text joined) and the problems the current version holds."""
    manifest = load_current(data)
    assert manifest is not None
    state = manifest.sources[source]
    chunks: dict[str, list] = {}
    texts = {}
    for page in load_pages(data, state.pages_file):
        for ref in page.chunks:
            if ref.segment not in chunks:
                chunks[ref.segment] = load_segment(data, ref.segment, manifest.embedder.dim).chunks
        texts[page.path] = "".join(chunks[ref.segment][ref.index].text for ref in page.chunks)
    return texts, {p.path: p.problem for p in state.problems}


def link(ws: Workspace, path: str, target: str) -> None:
    full = ws.work / path
    full.parent.mkdir(parents=True, exist_ok=True)
    if full.is_symlink() or full.exists():
        full.unlink()
    os.symlink(target, full)


def delete(ws: Workspace, path: str) -> None:
    (ws.work / path).unlink()


class Indexer:
    """One source indexed incrementally into `data`; `fresh()` indexes the same state from
    scratch into a new data directory, as the reference the incremental index must equal."""

    def __init__(self, tmp_path: Path, location: Path, embedder, worktree: bool) -> None:
        self.tmp_path = tmp_path
        self.location = location
        self.embedder = embedder
        self.worktree = worktree
        self.data = self._data_dir("data")
        self.fresh_runs = 0

    @classmethod
    def indexed(cls, tmp_path: Path, location: Path, embedder, worktree: bool) -> Indexer:
        """An Indexer whose first run is done."""
        indexer = cls(tmp_path, location, embedder, worktree)
        indexer.run()
        return indexer

    def _data_dir(self, name: str) -> DataDir:
        data = DataDir(self.tmp_path / name)
        data.ensure()
        save_config(data, self.config())
        return data

    def config(self) -> Config:
        return Config(sources=[SourceConfig(name="docs", location=str(self.location))])

    def run(self, dirty: set[str] | None = None) -> RunReport:
        return index_sources(
            self.data,
            self.config(),
            embedder=self.embedder,
            worktree=self.worktree,
            dirty=None if dirty is None else {"docs": dirty},
        )

    def fresh(self) -> Indexed:
        self.fresh_runs += 1
        data = self._data_dir(f"fresh-{self.fresh_runs}")
        index_sources(data, self.config(), embedder=self.embedder, worktree=self.worktree)
        return served(data)

    def check(self) -> Indexed:
        """The incremental index equals a fresh one; returns it."""
        now = served(self.data)
        assert now == self.fresh()
        return now


@pytest.fixture()
def ws(tmp_path) -> Workspace:
    """docs/alpha.md and beta.md; links to alpha directly, through a chain and through a
    linked directory; a link to a file outside the include globs."""
    ws = Workspace(tmp_path / "repo")
    ws.write("docs/alpha.md", ALPHA)
    ws.write("beta.md", BETA)
    ws.write("notes.txt", "# Notes\n\nPlain text, outside the globs: the tinselfox.\n")
    link(ws, "link.md", "docs/alpha.md")
    link(ws, "chain.md", "link.md")
    link(ws, "alias", "docs")
    link(ws, "via-dir.md", "alias/./alpha.md")
    link(ws, "text.md", "notes.txt")
    ws.commit_and_push("initial")
    (tmp_path / "outside.md").write_text(OUTSIDE)
    return ws


LINKS_TO_ALPHA = ("link.md", "chain.md", "via-dir.md")


def assert_links_read(texts: dict[str, str], word: str, links=LINKS_TO_ALPHA) -> None:
    for path in links:
        assert word in texts[path], path


# --- the git-tree path: pushes to a bare repository -------------------------------------------


@pytest.fixture()
def bare(tmp_path, ws, embedder) -> Indexer:
    return Indexer.indexed(tmp_path, ws.bare, embedder, worktree=False)


def recorded_links(data: DataDir) -> dict[str, str] | None:
    manifest = load_current(data)
    assert manifest is not None
    return manifest.sources["docs"].links


def forget_links(data: DataDir) -> None:
    """Make the current version's state look like one written before links were recorded."""
    manifest = load_current(data)
    state = msgspec.structs.replace(manifest.sources["docs"], links=None)
    write_manifest(data, msgspec.structs.replace(manifest, sources={"docs": state}))


IN_GLOB_LINKS = {*LINKS_TO_ALPHA, "text.md"}  # `alias` links a directory: not a page


@pytest.mark.parametrize("recorded", [True, False], ids=["links-recorded", "links-listed"])
def test_push_editing_a_target_rereads_its_links(bare, ws, recorded):
    texts, _ = bare.check()
    assert_links_read(texts, "copperfinch")
    assert set(recorded_links(bare.data)) == IN_GLOB_LINKS
    if not recorded:
        forget_links(bare.data)

    ws.write("docs/alpha.md", ALPHA_EDITED)
    ws.write("notes.txt", "# Notes\n\nEdited plain text: the velvetgnat.\n")
    ws.commit_and_push("edit the targets only")
    report = bare.run()
    assert report.sources[0].modified == 1 + len(LINKS_TO_ALPHA) + 1  # alpha, its links, text.md
    texts, _ = bare.check()
    assert_links_read(texts, "silverwren")
    assert "velvetgnat" in texts["text.md"]


def test_push_deleting_a_target_turns_its_links_into_problems(bare, ws):
    ws.remove("docs/alpha.md")
    ws.commit_and_push("delete the target")
    bare.run()
    texts, problems = bare.check()  # as a dangling link is at first index
    assert set(texts) == {"beta.md", "text.md"}
    assert set(problems) == set(LINKS_TO_ALPHA)
    assert "does not exist" in problems["link.md"]

    ws.write("docs/alpha.md", ALPHA_EDITED)
    ws.commit_and_push("the target is back")
    bare.run()
    texts, problems = bare.check()
    assert problems == {}
    assert_links_read(texts, "silverwren")


def test_push_retargeting_links(bare, ws):
    ws.write("other/alpha.md", "# Other alpha\n\nThe alias now leads to the lanternfly.\n")
    link(ws, "alias", "other")  # a linked directory on the way moves
    link(ws, "link.md", "beta.md")  # the link itself moves, and the chain with it
    ws.commit_and_push("retarget")
    bare.run()
    texts, _ = bare.check()
    assert "lanternfly" in texts["via-dir.md"]
    assert "marblecrest" in texts["link.md"] and "marblecrest" in texts["chain.md"]
    assert set(recorded_links(bare.data)) == IN_GLOB_LINKS


def test_pushes_keep_the_recorded_links_current(bare, ws):
    delete(ws, "docs/alpha.md")
    link(ws, "docs/alpha.md", "../beta.md")  # a file turned into a link
    delete(ws, "text.md")
    ws.write("text.md", "# Text\n\nNo longer a link: the amberwhelk.\n")  # a link turned file
    delete(ws, "chain.md")
    head = ws.commit_and_push("links come and go")
    bare.run()
    texts, problems = bare.check()
    assert problems == {} and "amberwhelk" in texts["text.md"]
    links = recorded_links(bare.data)
    assert set(links) == {"docs/alpha.md", "link.md", "via-dir.md"}
    in_tree = list_files(Repo(str(ws.bare)), head, ["**/*.md"], [])
    assert links == {path: in_tree[path].blob for path in links}
    assert_links_read(texts, "marblecrest", ("docs/alpha.md", "link.md", "via-dir.md"))


def test_push_never_follows_a_link_out_of_the_repository(bare, ws, tmp_path):
    delete(ws, "docs/alpha.md")
    link(ws, "docs/alpha.md", str(tmp_path / "outside.md"))  # the target turns into an escape
    link(ws, "beta.md", "../outside.md")
    ws.commit_and_push("escape")
    bare.run()
    texts, problems = bare.check()
    assert "obsidianmoth" not in "".join(texts.values())
    assert set(problems) == {"docs/alpha.md", "beta.md", *LINKS_TO_ALPHA}
    assert all("outside the repository" in problems[p] for p in problems)


# --- the working-tree path: what watch mode runs ----------------------------------------------


@pytest.fixture()
def checkout(tmp_path, ws, embedder) -> Indexer:
    return Indexer.indexed(tmp_path, ws.work, embedder, worktree=True)


def test_saving_a_target_rereads_its_links(checkout, ws):
    ws.write("docs/alpha.md", ALPHA_EDITED)
    ws.write("notes.txt", "# Notes\n\nEdited plain text: the velvetgnat.\n")
    report = checkout.run({"docs/alpha.md", "notes.txt"})
    assert report.sources[0].modified == 1 + len(LINKS_TO_ALPHA) + 1
    texts, _ = checkout.check()
    assert_links_read(texts, "silverwren")
    assert "velvetgnat" in texts["text.md"]


def test_deleting_a_target_turns_its_links_into_problems(checkout, ws):
    delete(ws, "docs/alpha.md")
    checkout.run({"docs/alpha.md"})
    texts, problems = checkout.check()
    assert set(texts) == {"beta.md", "text.md"}
    assert set(problems) == set(LINKS_TO_ALPHA)

    ws.write("docs/alpha.md", ALPHA_EDITED)
    checkout.run({"docs/alpha.md"})
    texts, problems = checkout.check()
    assert problems == {}
    assert_links_read(texts, "silverwren")


def test_moving_a_target_directory_rereads_its_links(checkout, ws):
    os.rename(ws.work / "docs", ws.work / "moved")
    checkout.run({"docs", "moved"})
    _, problems = checkout.check()
    assert set(problems) == set(LINKS_TO_ALPHA)


def test_retargeting_a_link_on_the_way(checkout, ws):
    ws.write("other/alpha.md", "# Other alpha\n\nThe alias now leads to the lanternfly.\n")
    link(ws, "alias", "other")
    link(ws, "link.md", "beta.md")
    checkout.run({"alias", "other/alpha.md", "link.md"})
    texts, _ = checkout.check()
    assert "lanternfly" in texts["via-dir.md"]
    assert "marblecrest" in texts["link.md"] and "marblecrest" in texts["chain.md"]


def test_a_target_turned_into_an_escape_is_not_read(checkout, ws, tmp_path):
    delete(ws, "docs/alpha.md")
    link(ws, "docs/alpha.md", str(tmp_path / "outside.md"))
    checkout.run({"docs/alpha.md"})
    texts, problems = checkout.check()
    assert "obsidianmoth" not in "".join(texts.values())
    assert set(problems) == {"docs/alpha.md", *LINKS_TO_ALPHA}
    assert all("outside the repository" in problems[p] for p in problems)


def test_unrelated_saves_leave_links_alone(checkout, ws):
    ws.write("beta.md", BETA + "\nAn unrelated edit.\n")
    report = checkout.run({"beta.md"})
    assert report.sources[0].modified == 1
    checkout.check()


# --- one resolver for both: the same answers --------------------------------------------------


@pytest.mark.parametrize(
    ("target", "problem"),
    [
        ("docs/alpha.md", None),
        ("alias/../beta.md", None),  # ".." after a linked directory: its real parent
        ("chain.md", None),
        ("../outside.md", "symlink to outside the repository is not followed"),
        ("alias/../../x.md", "symlink to outside the repository is not followed"),
        (".git/HEAD", "symlink target does not exist in the repository"),
        ("nope.md", "symlink target does not exist in the repository"),
        ("beta.md/x", "symlink target does not exist in the repository"),
        ("loop.md", "symlink loop is not followed"),
        ("docs", "symlink points to a directory, not a file"),
    ],
)
def test_commit_and_working_tree_resolve_alike(ws, target, problem):
    link(ws, "loop.md", "loop.md")
    link(ws, "probe.md", target)
    ws.commit("probe")
    with Repo(str(ws.work)) as repo:
        head = git(ws.work, "rev-parse", "HEAD")
        entry = list_files(repo, head, ["**/*.md"], [])["probe.md"]
        from_commit = read_markdown(repo, head, entry, 1 << 20)
        from_worktree = Worktree(repo, ["**/*.md"], []).read("probe.md", 1 << 20)
    if problem is None:
        assert from_commit == from_worktree and isinstance(from_commit, str)
    else:
        assert from_commit == FileProblem("probe.md", f"{problem}: {target}")
        if target.startswith(".git/"):  # no .git in a commit; the checkout's is refused
            problem = "symlink to outside the repository is not followed"
        assert from_worktree == FileProblem("probe.md", f"{problem}: {target}")


def test_an_absolute_link_into_the_checkout_is_followed_in_the_working_tree(ws):
    link(ws, "absolute.md", str(ws.work / "beta.md"))
    with Repo(str(ws.work)) as repo:
        assert Worktree(repo, ["**/*.md"], []).read("absolute.md", 1 << 20) == BETA
