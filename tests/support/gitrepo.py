"""Real git repositories for tests: a bare repo and a work tree that pushes to it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "author@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(
    cwd: Path, *args: str, env: dict[str, str] | None = None, input: bytes | None = None
) -> str:
    result = subprocess.run(
        ["git", *args],
        cwd=cwd,
        env={**os.environ, **GIT_ENV, **(env or {})},
        input=input,
        capture_output=True,
        check=False,
    )
    if result.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {result.stderr.decode()}")
    return result.stdout.decode().strip()


class Workspace:
    """A bare repository plus a clone to edit, commit and push from."""

    def __init__(self, root: Path, branch: str = "main") -> None:
        self.bare = root / "docs.git"
        self.work = root / "work"
        self.branch = branch
        self.clock = 1_700_000_000
        root.mkdir(parents=True, exist_ok=True)
        git(root, "init", "-q", "--bare", f"--initial-branch={branch}", str(self.bare))
        git(root, "init", "-q", f"--initial-branch={branch}", str(self.work))
        git(self.work, "remote", "add", "origin", str(self.bare))

    def write(self, path: str, content: str | bytes) -> Path:
        target = self.work / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
        return target

    def remove(self, path: str) -> None:
        git(self.work, "rm", "-q", path)

    def move(self, old: str, new: str) -> None:
        (self.work / new).parent.mkdir(parents=True, exist_ok=True)
        git(self.work, "mv", old, new)

    def commit(self, message: str = "change") -> str:
        self.clock += 3600
        stamp = f"{self.clock} +0000"
        git(self.work, "add", "-A")
        git(
            self.work,
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            message,
            env={"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp},
        )
        return git(self.work, "rev-parse", "HEAD")

    def push(self, force: bool = False) -> None:
        git(
            self.work,
            "push",
            "-q",
            *(["--force"] if force else []),
            "origin",
            f"HEAD:refs/heads/{self.branch}",
        )

    def commit_and_push(self, message: str = "change") -> str:
        sha = self.commit(message)
        self.push()
        return sha

    def tracked_markdown(self) -> set[str]:
        files = git(self.bare, "ls-tree", "-r", "--name-only", self.branch).splitlines()
        return {f for f in files if f.endswith((".md", ".markdown"))}
