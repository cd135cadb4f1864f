"""A documentation repository with several refs, each answering one question differently:
the default port is 8080 on main and another on each release branch and tag (adr/0017)."""

from __future__ import annotations

from pathlib import Path

from fixtures import API, FAQ, pushed_workspace
from gitrepo import Workspace, git

QUESTION = "which port does the server listen on by default"
PORTS = {"docs": 8080, "docs@release/1.0": 7010, "docs@release/2.0": 7020, "docs@v2.1": 7021}
NOTES = ["notes/a.md", "notes/b.md", "notes/c.md"]


def install_page(version: str, port: int) -> str:
    return (
        "# Install\n\nInstall docdex with pip into a fresh virtual environment.\n\n"
        f"## Default port\n\nVersion {version}: the server listens on port {port} by default; "
        "set --port to change it.\n"
    )


def note(name: str, version: str) -> str:
    return f"# Note {name}\n\nRelease {version} brings note {name}: a change to {name}-handling.\n"


def commit_on(ws: Workspace, start: str, files: dict[str, str], message: str = "change") -> str:
    """A commit on top of `start` (not on any branch yet) that writes `files`."""
    git(ws.work, "checkout", "-q", "--detach", start)
    for path, text in files.items():
        ws.write(path, text)
    return ws.commit(message)


def push_ref(ws: Workspace, sha: str, ref: str) -> None:
    git(ws.work, "push", "-q", "--force", "origin", f"{sha}:{ref}")


def tag(ws: Workspace, name: str, sha: str) -> None:
    """An annotated tag (moved if it exists), pushed."""
    git(ws.work, "tag", "-f", "-a", "-m", f"release {name}", name, sha)
    git(ws.work, "push", "-q", "--force", "origin", f"refs/tags/{name}")


def workspace_with_refs(root: Path) -> Workspace:
    """main, release/1.0, release/2.0 and the annotated tag v2.1 (on a commit after
    release/2.0's): the default port differs on each. Tags none of them indexes: release/2.0
    (a branch has that name), v2.tree (a tree, not a commit), v2.a@b (no '@' in keys)."""
    files = {"guide/install.md": install_page("main", 8080), "faq.md": FAQ}
    files |= {"reference/api.md": API} | {path: note(path[6], "2.0") for path in NOTES}
    ws = pushed_workspace(root, files)
    main_sha = git(ws.work, "rev-parse", "HEAD")
    for version in ("1.0", "2.0"):
        port = PORTS[f"docs@release/{version}"]
        sha = commit_on(ws, main_sha, {"guide/install.md": install_page(version, port)})
        push_ref(ws, sha, f"refs/heads/release/{version}")
    tag(ws, "release/2.0", main_sha)
    git(ws.work, "tag", "v2.tree", f"{main_sha}^{{tree}}")
    git(ws.work, "tag", "v2.a@b", main_sha)
    git(ws.work, "push", "-q", "origin", "refs/tags/v2.tree", "refs/tags/v2.a@b")
    v21 = commit_on(ws, sha, {"guide/install.md": install_page("2.1", PORTS["docs@v2.1"])})
    tag(ws, "v2.1", v21)
    git(ws.work, "checkout", "-q", "main")
    return ws
