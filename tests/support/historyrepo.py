"""A documentation repository with a history to ask about: edits in two sections, a page
renamed and edited, a page deleted, a branch merged (without conflict, then with one
resolved), a lightweight and an annotated tag, and files the default globs leave out. Each
commit is an hour after the one before (the Workspace's clock), so dates are known."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from gitrepo import Workspace, git

GUIDE = "# Guide\n\n## Install\n\nRun the installer.\n\n## Use\n\nOpen the app.\n"
OLD = "# Reference\n\n" + "".join(f"Option {n} sets the thing number {n}.\n" for n in range(30))
FAQ = "# FAQ\n\n## Why\n\nBecause.\n"
API = "# API\n\n## Calls\n\nCall it.\n"


@dataclass
class Story:
    ws: Workspace
    commits: dict[str, str] = field(default_factory=dict)  # name -> sha
    times: dict[str, int] = field(default_factory=dict)  # name -> committer time

    @property
    def bare(self) -> Path:
        return self.ws.bare

    def commit(self, name: str, message: str) -> str:
        sha = self.ws.commit(message)
        self.commits[name] = sha
        self.times[name] = self.ws.clock
        return sha

    def merge(
        self, name: str, branch: str, message: str, resolution: dict[str, str] | None = None
    ) -> str:
        """Merge `branch` into the checked-out branch (a merge commit) at the clock's next
        hour; a conflict is resolved by writing `resolution` (path -> text)."""
        self.ws.clock += 3600
        stamp = {"GIT_AUTHOR_DATE": f"{self.ws.clock} +0000"}
        stamp["GIT_COMMITTER_DATE"] = stamp["GIT_AUTHOR_DATE"]
        failed = git_status(
            self.ws.work, "merge", "--no-ff", "-q", "-m", message, branch, env=stamp
        )
        assert failed == (resolution is not None), "the merge should conflict iff resolved"
        if resolution is not None:
            for path, text in resolution.items():
                self.ws.write(path, text)
            git(self.ws.work, "add", "-A")
            git(self.ws.work, "commit", "-q", "--no-edit", env=stamp)
        sha = git(self.ws.work, "rev-parse", "HEAD")
        self.commits[name] = sha
        self.times[name] = self.ws.clock
        return sha

    def git(self, *args: str) -> str:
        return git(self.bare, *args)


def git_status(cwd: Path, *args: str, env: dict[str, str]) -> int:
    """`git ARGS` that may fail (a merge with conflicts): its exit status."""
    try:
        git(cwd, *args, env=env)
    except AssertionError:
        return 1
    return 0


def history_story(root: Path) -> Story:
    """main: first (v1) - install - rename - delete faq - merge feature (v2, annotated) -
    conflict merge of fix - news; feature, from install: api page, edit of Use; fix, from
    delete faq: its own edit of Install, which conflicts with main's."""
    story = Story(Workspace(root))
    ws = story.ws
    ws.write("guide.md", GUIDE)
    ws.write("old.md", OLD)
    ws.write("faq.md", FAQ)
    ws.write("notes.txt", "not a page\n")
    ws.write(".github/issue.md", "# Left out by the default excludes\n")
    story.commit("first", "First pages")
    git(ws.work, "tag", "v1")
    ws.write("guide.md", GUIDE.replace("Run the installer.", "Run the installer twice."))
    story.commit("install", "Say to run the installer twice")
    git(ws.work, "checkout", "-q", "-b", "feature")
    ws.write("api.md", API)
    story.commit("api", "Add the API page")
    ws.write(
        "guide.md", ws_text(ws, "guide.md").replace("Open the app.", "Open the app, then log in.")
    )
    story.commit("use", "Log in after opening")
    git(ws.work, "checkout", "-q", "main")
    ws.move("old.md", "new.md")
    ws.write("new.md", OLD + "Option 30 is new.\n")
    story.commit("rename", "Rename the reference and add an option")
    ws.remove("faq.md")
    story.commit("delete", "Drop the FAQ")
    git(ws.work, "checkout", "-q", "-b", "fix")
    ws.write("guide.md", ws_text(ws, "guide.md").replace("twice", "three times"))
    story.commit("fix", "Three times, in fact")
    git(ws.work, "checkout", "-q", "main")
    story.merge("merge", "feature", "Merge the feature")
    git(ws.work, "tag", "-a", "-m", "release 2", "v2")
    ws.write("guide.md", ws_text(ws, "guide.md").replace("twice", "four times"))
    story.commit("conflict", "Four times on main")
    resolved = ws_text(ws, "guide.md").replace("four times", "three or four times")
    story.merge("resolved", "fix", "Merge the fix", {"guide.md": resolved})
    ws.write("guide.md", resolved.replace("three or four times", "five times"))
    ws.write("news.md", "# News\n\nThe app opens faster.\n")
    story.commit("news", "News, and five times")
    for branch in ("main", "feature", "fix"):
        git(ws.work, "push", "-q", "origin", f"{branch}:refs/heads/{branch}")
    git(ws.work, "push", "-q", "origin", "--tags")
    return story


def ws_text(ws: Workspace, path: str) -> str:
    return (ws.work / path).read_text(encoding="utf-8")
