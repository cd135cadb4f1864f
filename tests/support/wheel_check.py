"""The built wheel, installed as a user installs it, does docdex's whole job.

`python tests/support/wheel_check.py` (`just wheel-check`, run by .ci/run): builds the wheel
from this checkout, installs it with one plain `pip install` into a new virtual environment (no
`--no-deps`, no extra package: what `pipx install` or `uv tool install` would do), then, with
that environment's python and nothing from the checkout on its path, indexes a new git
repository, searches it from the CLI, serves it and answers one MCP call. Exit status 0 when
all of it worked; each failing step says what it ran and what it printed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = "# Rotating keys\n\nRun `keyctl rotate --grace 7d` to rotate the signing key.\n"


def run(*command: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(part) for part in command], cwd=cwd, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        shown = " ".join(str(part) for part in command)
        raise SystemExit(f"wheel check: `{shown}` failed:\n{done.stdout}{done.stderr}")
    return done.stdout


def build_and_install(work: Path) -> Path:
    """The new environment's python, with the wheel built from this checkout installed (from
    a copy of its files, so that the build leaves nothing in the checkout)."""
    source, wheels = work / "source", work / "wheels"
    listed = run("git", "-C", ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", wheels, source)
    (wheel,) = wheels.glob("docdex-*.whl")
    run(sys.executable, "-m", "venv", work / "venv")
    python = work / "venv" / "bin" / "python"
    run(python, "-m", "pip", "install", "-q", wheel)
    return python


def inside(work: Path) -> None:
    """Run by the new environment's python: the installed docdex, end to end."""
    import asyncio

    import docdex
    from docdex.serverproc import ServeProcess

    assert str(work) in docdex.__file__, f"docdex came from {docdex.__file__}"
    docdex_bin = Path(sys.executable).parent / "docdex"
    print(run(docdex_bin, "--version").strip())
    repo, data = work / "docs", work / "data"
    repo.mkdir()
    (repo / "keys.md").write_text(PAGE)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    run("git", "init", "-q", "-b", "main", repo)
    run("git", "-C", repo, "add", ".", env=env)
    run("git", "-C", repo, "commit", "-q", "-m", "keys", env=env)
    run(docdex_bin, "--data", data, "source", "add", "docs", repo)
    print(run(docdex_bin, "--data", data, "index").strip())
    found = run(docdex_bin, "--data", data, "search", "how do I rotate the signing key")
    assert "keys.md" in found, found
    with ServeProcess(data, work / "serve.log") as server:
        server.wait_serving()
        answer = asyncio.run(_one_mcp_call(server.mcp_url))
    assert "keyctl rotate" in answer, answer
    print("wheel check: installed, indexed, searched, served one MCP call")


async def _one_mcp_call(url: str) -> str:
    from mcp import Client

    async with Client(url) as client:
        result = await client.call_tool("search_docs", {"query": "rotate the signing key"})
    return str(result.structured_content)


def main() -> int:
    if sys.argv[1:2] == ["--inside"]:
        inside(Path(sys.argv[2]))
        return 0
    with tempfile.TemporaryDirectory(prefix="docdex-wheel-") as tmp:
        work = Path(tmp)
        python = build_and_install(work)
        script = work / "wheel_check.py"
        script.write_bytes(Path(__file__).read_bytes())  # nothing of the checkout on its path
        clean = {k: v for k, v in os.environ.items() if not k.startswith(("DOCDEX_", "PYTHON"))}
        done = subprocess.run([python, script, "--inside", work], cwd=work, env=clean)
        return done.returncode


if __name__ == "__main__":
    sys.exit(main())
