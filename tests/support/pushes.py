"""`git push` as a user runs it, its outcome kept: the exit status, and the `remote:` lines
the post-receive hook prints back to the pusher."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from gitrepo import GIT_ENV


def push(work: Path, *refspec: str) -> subprocess.CompletedProcess:
    """`git push origin ...` (not quiet: the hook's remote: lines are part of the result)."""
    return subprocess.run(
        ["git", "push", "origin", *(refspec or ["HEAD:refs/heads/main"])],
        cwd=work,
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        text=True,
        check=False,
    )


def remote_lines(result: subprocess.CompletedProcess) -> list[str]:
    """The hook's own lines of a push's output, `remote: docdex: ...`."""
    return [ln.strip() for ln in result.stderr.splitlines() if ln.startswith("remote: docdex:")]
