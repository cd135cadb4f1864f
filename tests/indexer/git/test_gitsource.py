"""The git layer against real repositories built with the git CLI."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from dulwich.repo import Repo

from docdex.index_format.config import SourceError, source_kind
from docdex.index_format.globs import matches
from docdex.index_format.records import FileProblem
from docdex.indexer.git.blobs import read_markdown
from docdex.indexer.git.diffs import Change, FileEntry, diff_commits, list_files
from docdex.indexer.git.history import PageDates, page_dates
from docdex.indexer.git.repo import open_repo, resolve_branch

from paths import SHARED

MD = ["**/*.md"]
DAY = 86_400
EPOCH = 1_704_067_200  # 2024-01-01T00:00:00Z; commit n is dated EPOCH + n days

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Ada",
    "GIT_AUTHOR_EMAIL": "ada@example.com",
    "GIT_COMMITTER_NAME": "Ada",
    "GIT_COMMITTER_EMAIL": "ada@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        ["git", *args],
        cwd=cwd,
        env={**os.environ, **GIT_ENV, **(env or {})},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, f"git {' '.join(args)}: {result.stderr}"
    return result.stdout.strip()


def day(n: int) -> str:
    return datetime.fromtimestamp(EPOCH + n * DAY, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Work:
    """A work tree whose commits are dated one day apart."""

    def __init__(self, path: Path, branch: str = "main") -> None:
        self.path = path
        self.days = 0
        git(path.parent, "init", "-q", "-b", branch, str(path))

    def git(self, *args: str, env: dict[str, str] | None = None) -> str:
        return git(self.path, *args, env=env)

    def write(self, rel: str, content: str | bytes) -> None:
        target = self.path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            content = content.encode()
        target.write_bytes(content)

    def symlink(self, rel: str, target: str) -> None:
        link = self.path / rel
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() or link.exists():
            link.unlink()
        os.symlink(target, link)

    def remove(self, rel: str) -> None:
        self.git("rm", "-q", rel)

    def move(self, old: str, new: str) -> None:
        (self.path / new).parent.mkdir(parents=True, exist_ok=True)
        self.git("mv", old, new)

    def commit(self, message: str = "change", author_days: int | None = None) -> str:
        self.days += 1
        committed = EPOCH + self.days * DAY
        authored = committed if author_days is None else EPOCH + author_days * DAY
        self.git("add", "-A")
        self.git(
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            message,
            env={
                "GIT_AUTHOR_DATE": f"@{authored} +0000",
                "GIT_COMMITTER_DATE": f"@{committed} +0000",
            },
        )
        return self.head()

    def head(self) -> str:
        return self.git("rev-parse", "HEAD")

    def blob(self, rev: str, rel: str) -> str:
        return self.git("rev-parse", f"{rev}:{rel}")


@pytest.fixture
def work(tmp_path: Path) -> Work:
    return Work(tmp_path / "work")


@pytest.fixture
def repo(work: Work) -> Iterator[Repo]:
    with open_repo(str(work.path)) as opened:
        yield opened


def lines(n: int, word: str = "line") -> str:
    return "".join(f"{word} {i} of a reasonably long paragraph of prose\n" for i in range(n))


# --- locations, repositories, branches ----------------------------------------------------


@pytest.mark.parametrize(
    "location",
    [
        "https://github.com/org/docs.git",
        "http://git.example.com/docs",
        "ssh://git@example.com:2222/docs.git",
        "git://example.com/docs.git",
        "file:///srv/git/docs.git",
        "git@github.com:org/docs.git",
    ],
)
def test_urls_are_remote(location: str) -> None:
    assert source_kind(location) == "remote"


def test_unsupported_url_scheme_is_an_error() -> None:
    with pytest.raises(SourceError, match="unsupported URL scheme 'ftp'"):
        source_kind("ftp://example.com/docs.git")


def test_local_kinds(tmp_path: Path, work: Work) -> None:
    git(tmp_path, "init", "-q", "--bare", "bare.git")
    work.commit()
    work.git("worktree", "add", "-q", str(tmp_path / "linked"))
    (tmp_path / "plain").mkdir()

    assert source_kind(str(tmp_path / "bare.git")) == "bare"
    assert source_kind(str(work.path)) == "checkout"
    assert source_kind(str(tmp_path / "linked")) == "checkout"  # .git is a file there
    with pytest.raises(SourceError, match="plain.* is not a git repository"):
        source_kind(str(tmp_path / "plain"))
    with pytest.raises(SourceError, match="is not a git repository"):
        source_kind(str(tmp_path / "missing"))
    with pytest.raises(SourceError, match="location is empty"):
        source_kind("")


def test_open_repo_rejects_a_plain_directory(tmp_path: Path) -> None:
    with (
        pytest.raises(SourceError, match="cannot open git repository"),
        open_repo(str(tmp_path)),
    ):
        pass


def test_head_branch_of_a_checkout(work: Work, repo: Repo) -> None:
    sha = work.commit()
    assert resolve_branch(repo, None) == ("main", sha)
    assert resolve_branch(repo, "main") == ("main", sha)
    assert resolve_branch(repo, "refs/heads/main") == ("main", sha)


def test_head_branch_of_a_bare_repo(tmp_path: Path, work: Work) -> None:
    git(tmp_path, "init", "-q", "--bare", "-b", "trunk", "bare.git")
    work.write("a.md", "# A\n")
    sha = work.commit()
    work.git("push", "-q", str(tmp_path / "bare.git"), "main:trunk", "main:other")
    with open_repo(str(tmp_path / "bare.git")) as bare:
        assert resolve_branch(bare, None) == ("trunk", sha)
        assert resolve_branch(bare, "other") == ("other", sha)


def test_empty_repo_has_an_unborn_head(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "--bare", "-b", "main", "empty.git")
    with open_repo(str(tmp_path / "empty.git")) as empty:
        assert resolve_branch(empty, None) == ("main", None)


def test_missing_branch(work: Work, repo: Repo) -> None:
    work.commit()
    assert resolve_branch(repo, "gone") == ("gone", None)


def test_bad_branch_name_and_detached_head(work: Work, repo: Repo) -> None:
    work.commit()
    with pytest.raises(SourceError, match="not a valid branch name"):
        resolve_branch(repo, "a..b")
    work.git("checkout", "-q", "--detach")
    with pytest.raises(SourceError, match="does not name a branch"):
        resolve_branch(repo, None)


# --- globs ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "include", "exclude", "expected"),
    [
        ("README.md", MD, [], True),
        ("docs/a/b.md", MD, [], True),
        ("docs/a.txt", MD, [], False),
        ("README.MD", MD, [], False),
        ("a.md", ["*.md"], [], True),
        ("docs/a.md", ["*.md"], [], False),
        ("docs/a.md", ["docs/*.md"], [], True),
        ("docs/x/a.md", ["docs/*.md"], [], False),
        ("docs/x/a.md", ["docs/**"], [], True),
        ("docs/a.md", ["docs/**/a.md"], [], True),
        ("docs/x/y/a.md", ["docs/**/a.md"], [], True),
        ("a1.md", ["a?.md"], [], True),
        ("a12.md", ["a?.md"], [], False),
        ("v1.md", ["v[0-9].md"], [], True),
        ("v1.md", ["v[!0-9].md"], [], False),
        ("a+b (1).md", ["a+b (1).md"], [], True),
        ("docs/drafts/x.md", MD, ["docs/drafts/"], False),
        ("drafts/x.md", MD, ["**/drafts/**"], False),
        ("CHANGELOG.md", MD, ["CHANGELOG.md"], False),
        ("docs/CHANGELOG.md", MD, ["CHANGELOG.md"], True),
        ("a.md", [], [], False),
        ("a.md", ["*.txt", "*.md"], [], True),
    ],
)
def test_matches(path: str, include: list[str], exclude: list[str], expected: bool) -> None:
    assert matches(path, include, exclude) is expected


# --- file lists -----------------------------------------------------------------------------


def test_list_files(work: Work, repo: Repo) -> None:
    work.write("README.md", "# Readme\n")
    work.write("docs/a.md", "# A\n")
    work.write("docs/deep/b.md", "# B\n")
    work.write("docs/notes.txt", "notes\n")
    work.write("drafts/x.md", "# X\n")
    work.write("run.md", "# Run\n")
    (work.path / "run.md").chmod(0o755)
    work.symlink("link.md", "docs/a.md")
    work.commit()
    # Submodule entries (gitlinks): one where the globs would select pages, which the
    # listing keeps so that its source reports it, and one where they would not.
    work.git("update-index", "--add", "--cacheinfo", f"160000,{work.head()},vendored")
    work.git("update-index", "--add", "--cacheinfo", f"160000,{work.head()},drafts/sub")
    work.git("commit", "-q", "-m", "gitlink")
    sha = work.head()

    files = list_files(repo, sha, MD, ["drafts/"])

    assert sorted(files) == [
        "README.md",
        "docs/a.md",
        "docs/deep/b.md",
        "link.md",
        "run.md",
        "vendored",
    ]
    assert files["vendored"].mode == 0o160000
    assert files["docs/a.md"] == FileEntry("docs/a.md", work.blob(sha, "docs/a.md"), 0o100644)
    assert files["run.md"].mode == 0o100755
    assert files["link.md"].mode == 0o120000


# --- diffs ----------------------------------------------------------------------------------


def kinds(changes: list[Change]) -> list[tuple[str, str, str | None]]:
    return [(c.kind, c.path, c.old_path) for c in changes]


def test_add_modify_delete(work: Work, repo: Repo) -> None:
    work.write("a.md", "# A\n")
    work.write("b.md", "# B\n")
    old = work.commit()
    work.write("a.md", "# A changed\n")
    work.remove("b.md")
    work.write("c.md", "# C\n")
    work.write("c.txt", "not markdown\n")
    new = work.commit()

    changes = diff_commits(repo, old, new, MD, [])

    assert changes == [
        Change("modify", "a.md", None, work.blob(new, "a.md"), work.blob(old, "a.md"), 0o100644),
        Change("delete", "b.md", old_blob=work.blob(old, "b.md")),
        Change("add", "c.md", blob=work.blob(new, "c.md"), mode=0o100644),
    ]


def test_first_index_is_all_adds(work: Work, repo: Repo) -> None:
    work.write("a.md", "# A\n")
    work.write("docs/b.md", "# B\n")
    new = work.commit()
    assert kinds(diff_commits(repo, None, new, MD, [])) == [
        ("add", "a.md", None),
        ("add", "docs/b.md", None),
    ]


def test_rename_without_edit(work: Work, repo: Repo) -> None:
    work.write("a.md", lines(10))
    old = work.commit()
    work.move("a.md", "docs/a.md")
    new = work.commit()

    [change] = diff_commits(repo, old, new, MD, [])

    blob = work.blob(old, "a.md")
    assert change == Change("rename", "docs/a.md", "a.md", blob, blob, 0o100644)


def test_rename_with_edit(work: Work, repo: Repo) -> None:
    work.write("a.md", lines(20))
    old = work.commit()
    work.move("a.md", "b.md")
    work.write("b.md", lines(20) + "one more line\n")
    new = work.commit()

    [change] = diff_commits(repo, old, new, MD, [])

    assert kinds([change]) == [("rename", "b.md", "a.md")]
    assert change.old_blob == work.blob(old, "a.md")
    assert change.blob == work.blob(new, "b.md")


def test_renames_across_the_globs(work: Work, repo: Repo) -> None:
    work.write("out.md", lines(10, "out"))
    work.write("in.txt", lines(10, "in"))
    work.write("hidden.md", lines(10, "hidden"))
    old = work.commit()
    work.move("out.md", "out.txt")
    work.move("in.txt", "in.md")
    work.move("hidden.md", "drafts/hidden.md")
    new = work.commit()

    assert kinds(diff_commits(repo, old, new, MD, ["drafts/"])) == [
        ("delete", "hidden.md", None),
        ("add", "in.md", None),
        ("delete", "out.md", None),
    ]


def test_file_turned_into_symlink_is_a_modify(work: Work, repo: Repo) -> None:
    work.write("a.md", "# A\n")
    work.write("b.md", "# B\n")
    old = work.commit()
    work.symlink("a.md", "b.md")
    new = work.commit()

    [change] = diff_commits(repo, old, new, MD, [])

    assert (change.kind, change.path, change.mode) == ("modify", "a.md", 0o120000)


def test_force_push_diffs_trees_not_history(tmp_path: Path, work: Work) -> None:
    bare = tmp_path / "bare.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    work.write("x.md", "# X\n")
    work.write("y.md", "# Y\n")
    base = work.commit()
    work.write("x.md", "# X rewritten\n")
    abandoned = work.commit()
    work.git("push", "-q", str(bare), "main")
    work.git("reset", "-q", "--hard", base)
    work.write("y.md", "# Y rewritten\n")
    work.write("z.md", "# Z\n")
    new = work.commit()
    work.git("push", "-q", "--force", str(bare), "main")

    with open_repo(str(bare)) as repo:
        assert resolve_branch(repo, None) == ("main", new)
        changes = diff_commits(repo, abandoned, new, MD, [])

    assert kinds(changes) == [
        ("modify", "x.md", None),
        ("modify", "y.md", None),
        ("add", "z.md", None),
    ]
    assert changes[0].blob == work.blob(base, "x.md")


def test_missing_old_commit_falls_back_to_the_indexed_files(tmp_path: Path, work: Work) -> None:
    work.write("a.md", "# A\n")
    work.write("b.md", "# B\n")
    work.write("c.md", "# C\n")
    old = work.commit()
    indexed = {path: work.blob(old, path) for path in ("a.md", "b.md", "c.md")}

    fresh = Work(tmp_path / "fresh")
    fresh.write("a.md", "# A edited\n")
    fresh.write("moved/b.md", "# B\n")
    fresh.write("d.md", "# D\n")
    new = fresh.commit()
    assert new != old

    with open_repo(str(fresh.path)) as repo:
        changes = diff_commits(repo, old, new, MD, [], indexed=indexed)
        without_index = diff_commits(repo, old, new, MD, [])

    assert changes == [
        Change("modify", "a.md", None, fresh.blob(new, "a.md"), indexed["a.md"], 0o100644),
        Change("delete", "c.md", old_blob=indexed["c.md"]),
        Change("add", "d.md", blob=fresh.blob(new, "d.md"), mode=0o100644),
        Change("rename", "moved/b.md", "b.md", indexed["b.md"], indexed["b.md"], 0o100644),
    ]
    assert kinds(without_index) == [
        ("add", "a.md", None),
        ("add", "d.md", None),
        ("add", "moved/b.md", None),
    ]


def test_unknown_new_commit_is_an_error(work: Work, repo: Repo) -> None:
    work.commit()
    with pytest.raises(SourceError, match="is not a commit"):
        diff_commits(repo, None, "0" * 40, MD, [])


# --- reading markdown -----------------------------------------------------------------------


def read(repo: Repo, work: Work, rel: str, max_bytes: int = 1 << 20) -> str | FileProblem:
    head = work.head()
    return read_markdown(repo, head, list_files(repo, head, ["**"], [])[rel], max_bytes)


def test_text_bom_and_crlf(work: Work, repo: Repo) -> None:
    work.write("plain.md", "# Plain\n")
    work.write("bom.md", b"\xef\xbb\xbf# Bom\r\nline\r\n")
    work.commit()
    assert read(repo, work, "plain.md") == "# Plain\n"
    assert read(repo, work, "bom.md") == "# Bom\r\nline\r\n"


def test_problems_with_content(work: Work, repo: Repo) -> None:
    work.write("binary.md", b"# looks like markdown\x00\x01\x02")
    work.write("latin1.md", b"caf\xe9\n")
    work.write("bom-latin1.md", b"\xef\xbb\xbfcaf\xe9\n")
    work.write("utf16.md", "# hi\n".encode("utf-16"))
    work.write("big.md", "x" * 2000)
    work.commit()

    assert read(repo, work, "binary.md") == FileProblem(
        "binary.md", "binary file (NUL byte in the first 8 KB); not indexed"
    )
    assert read(repo, work, "latin1.md") == FileProblem(
        "latin1.md", "invalid UTF-8 at byte offset 3; not indexed"
    )
    assert read(repo, work, "bom-latin1.md") == FileProblem(
        "bom-latin1.md", "invalid UTF-8 at byte offset 6; not indexed"
    )
    assert "UTF-16" in read(repo, work, "utf16.md").problem  # type: ignore[union-attr]
    big = read(repo, work, "big.md", max_bytes=1000)
    assert isinstance(big, FileProblem)
    assert "2,000 bytes" in big.problem and "max_file_bytes" in big.problem
    assert read(repo, work, "big.md", max_bytes=2000) == "x" * 2000


def test_symlinks_inside_the_repository_are_followed(work: Work, repo: Repo) -> None:
    work.write("README.md", "# Readme\n")
    work.write("docs/guide/c.md", "# C\n")
    work.symlink("docs/up.md", "../README.md")  # relative to the link's directory
    work.symlink("chain.md", "docs/up.md")  # a link to a link
    work.symlink("alias", "docs/guide")  # a linked directory on the way
    work.symlink("via-dir.md", "alias/./c.md")
    work.commit()

    assert read(repo, work, "docs/up.md") == "# Readme\n"
    assert read(repo, work, "chain.md") == "# Readme\n"
    assert read(repo, work, "via-dir.md") == "# C\n"
    tree = work.git("rev-parse", "HEAD^{tree}")
    entry = list_files(repo, work.head(), MD, [])["docs/up.md"]
    assert read_markdown(repo, tree, entry, 1000) == "# Readme\n"


@pytest.mark.parametrize(
    ("target", "problem"),
    [
        ("../outside.md", "symlink to outside the repository is not followed: ../outside.md"),
        ("docs/../../x.md", "symlink to outside the repository is not followed: docs/../../x.md"),
        ("/etc/passwd", "symlink to outside the repository is not followed: /etc/passwd"),
        ("nope.md", "symlink target does not exist in the repository: nope.md"),
        ("loop-b.md", "symlink loop is not followed: loop-b.md"),
        ("docs", "symlink points to a directory, not a file: docs"),
        ("docs/a.md/x", "symlink target does not exist in the repository: docs/a.md/x"),
    ],
)
def test_symlinks_that_are_not_followed(work: Work, repo: Repo, target: str, problem: str) -> None:
    work.write("docs/a.md", "# A\n")
    work.symlink("loop-a.md", "loop-b.md")
    work.symlink("loop-b.md", "loop-a.md")
    work.symlink("link.md", target)
    work.commit()
    assert read(repo, work, "link.md") == FileProblem("link.md", problem)


# --- page dates -----------------------------------------------------------------------------


def dates(created: int, modified: int, commit: str) -> PageDates:
    return PageDates(day(created), day(modified), commit)


def test_dates_from_the_whole_history(work: Work, repo: Repo) -> None:
    work.write("a.md", "# A\n")
    first = work.commit()
    work.write("b.md", "# B\n")
    second = work.commit()
    work.write("a.md", "# A again\n")
    third = work.commit()

    got = page_dates(repo, third, None, {"a.md", "b.md", "gone.md"}, {}, {})

    assert got == {"a.md": dates(1, 3, third), "b.md": dates(2, 2, second)}
    assert first != second


def test_dates_are_committer_dates(work: Work, repo: Repo) -> None:
    work.write("a.md", "# A\n")
    sha = work.commit(author_days=-300)  # e.g. a rebased or cherry-picked commit
    assert page_dates(repo, sha, None, {"a.md"}, {}, {}) == {"a.md": dates(1, 1, sha)}


def test_incremental_walk_updates_what_changed_and_keeps_the_rest(work: Work, repo: Repo) -> None:
    work.write("a.md", "# A\n")
    work.write("b.md", "# B\n")
    first = work.commit()
    work.write("b.md", "# B changed\n")
    second = work.commit()
    # Deliberately not what history says: untouched paths must be taken as known.
    known = {"a.md": PageDates("2000-01-01T00:00:00Z", "2000-02-01T00:00:00Z", first)}
    known["b.md"] = page_dates(repo, second, None, {"b.md"}, {}, {})["b.md"]
    work.write("b.md", "# B changed again\n")
    work.write("c.md", "# C\n")
    third = work.commit()

    got = page_dates(repo, third, second, {"a.md", "b.md", "c.md"}, known, {})

    assert got == {
        "a.md": known["a.md"],
        "b.md": dates(1, 3, third),
        "c.md": dates(3, 3, third),
    }


def test_created_follows_renames_in_history(work: Work, repo: Repo) -> None:
    work.write("a.md", lines(20))
    work.commit()
    work.move("a.md", "docs/a.md")
    work.write("docs/a.md", lines(20) + "edited while moving\n")
    moved = work.commit()
    work.write("x.md", lines(5))
    work.commit()
    work.move("x.md", "y.md")  # exact rename
    exact = work.commit()

    got = page_dates(repo, exact, None, {"docs/a.md", "y.md"}, {}, {})

    assert got == {"docs/a.md": dates(1, 2, moved), "y.md": dates(3, 4, exact)}


def test_created_carried_across_a_rename_the_walk_cannot_see(work: Work, repo: Repo) -> None:
    work.write("a.md", lines(10))
    old = work.commit()
    known = page_dates(repo, old, None, {"a.md"}, {}, {})
    work.remove("a.md")  # deleted in one commit, back under a new name in the next
    work.commit()
    work.write("b.md", lines(10))
    new = work.commit()

    carried = page_dates(repo, new, old, {"b.md"}, known, {"b.md": "a.md"})
    not_carried = page_dates(repo, new, old, {"b.md"}, known, {})

    assert carried == {"b.md": dates(1, 3, new)}
    assert not_carried == {"b.md": dates(3, 3, new)}


def test_a_file_deleted_and_added_again_starts_over(work: Work, repo: Repo) -> None:
    work.write("a.md", "# A\n")
    work.write("keep.md", "# Keep\n")
    first = work.commit()
    known = page_dates(repo, first, None, {"a.md"}, {}, {})
    work.remove("a.md")
    work.commit()
    work.write("a.md", "# A is back\n")
    new = work.commit()

    full = page_dates(repo, new, None, {"a.md"}, {}, {})
    incremental = page_dates(repo, new, first, {"a.md"}, known, {})

    assert full == incremental == {"a.md": dates(3, 3, new)}


def test_force_push_drops_dates_from_abandoned_commits(work: Work, repo: Repo) -> None:
    work.write("a.md", "# A\n")
    work.write("b.md", "# B\n")
    base = work.commit()
    work.write("a.md", "# A on a branch that goes away\n")
    abandoned = work.commit()
    known = page_dates(repo, abandoned, None, {"a.md", "b.md"}, {}, {})
    assert known["a.md"].commit == abandoned
    work.git("reset", "-q", "--hard", base)
    work.write("b.md", "# B rewritten\n")
    new = work.commit()

    after_force_push = page_dates(repo, new, abandoned, {"a.md", "b.md"}, known, {})
    back_to_base = page_dates(repo, base, abandoned, {"a.md", "b.md"}, known, {})

    assert after_force_push == {"a.md": dates(1, 1, base), "b.md": dates(1, 3, new)}
    assert back_to_base == {"a.md": dates(1, 1, base), "b.md": dates(1, 1, base)}


def test_missing_old_commit_walks_the_whole_history(work: Work, repo: Repo) -> None:
    work.write("a.md", "# A\n")
    work.commit()
    work.write("a.md", "# A 2\n")
    new = work.commit()
    stale = {"a.md": PageDates("2000-01-01T00:00:00Z", "2000-01-01T00:00:00Z", "f" * 40)}
    assert page_dates(repo, new, "f" * 40, {"a.md"}, stale, {}) == {"a.md": dates(1, 2, new)}


def test_paths_unknown_to_the_index_get_their_whole_history(work: Work, repo: Repo) -> None:
    work.write("a.md", "# A\n")
    work.write("notes/x.txt", "x\n")  # outside the globs at first, included later
    first = work.commit()
    work.write("a.md", "# A 2\n")
    second = work.commit()
    known = page_dates(repo, second, None, {"a.md"}, {}, {})
    work.write("a.md", "# A 3\n")
    third = work.commit()

    got = page_dates(repo, third, second, {"a.md", "notes/x.txt"}, known, {})

    assert got == {"a.md": dates(1, 3, third), "notes/x.txt": dates(1, 1, first)}


def test_merges_count_on_the_first_parent(work: Work, repo: Repo) -> None:
    work.write("a.md", "# A\n")
    work.write("b.md", "# B\n")
    work.commit()
    work.git("checkout", "-q", "-b", "side")
    work.write("a.md", "# A from a side branch\n")
    work.commit()
    work.git("checkout", "-q", "main")
    work.write("b.md", "# B on main\n")
    work.commit()
    work.days += 1
    stamp = f"@{EPOCH + work.days * DAY} +0000"
    work.git(
        "merge",
        "-q",
        "--no-ff",
        "-m",
        "merge side",
        "side",
        env={"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp},
    )
    merge = work.head()

    got = page_dates(repo, merge, None, {"a.md", "b.md"}, {}, {})

    assert got["a.md"] == dates(1, 4, merge)
    assert got["b.md"].modified == day(3)


# --- a real corpus --------------------------------------------------------------------------


@pytest.mark.slow
def test_apm_docs_corpus(tmp_path: Path) -> None:
    bundle = SHARED / "corpora" / "apm-docs.bundle"
    if not bundle.is_file():
        pytest.skip(f"{bundle} not found")
    bare = tmp_path / "apm.git"
    git(tmp_path, "clone", "-q", "--bare", str(bundle), str(bare))
    new = "7a33f0162d91506ec583d9a19de275ea442deea0"  # renames editions.md to plans.md
    old = git(bare, "rev-parse", f"{new}~5")
    expected = []
    for line in git(bare, "diff", "--name-status", "-M", old, new).splitlines():
        status, *paths = line.split("\t")
        if not paths[-1].endswith(".md"):
            continue
        kind = {"A": "add", "M": "modify", "D": "delete", "R": "rename"}[status[0]]
        expected.append((kind, paths[-1], paths[0] if kind == "rename" else None))

    with open_repo(str(bare)) as repo:
        _, head = resolve_branch(repo, None)
        assert head is not None
        files = list_files(repo, head, MD, [])
        changes = diff_commits(repo, old, new, MD, [])
        history = page_dates(repo, head, None, set(files), {}, {})

    assert len(files) == 51
    assert sorted(kinds(changes)) == sorted(expected)
    assert ("rename", "plans.md", "editions.md") in kinds(changes)
    for path in ("README.md", "plans.md", "troubleshooting/faq.md"):
        last = git(bare, "log", "-1", "--first-parent", "--format=%H", head, "--", path)
        assert history[path].commit == last
