"""Concurrent writers: 4 clones push 100 commits in all (quick: 20) to one bare repository
through the real post-receive hook (`docdex hook install`), while the worker the hook
starts indexes them. A push rejected as non-fast-forward is fetched, rebased and pushed
again, as people do. Each clone adds, edits, renames and deletes pages in its own folder.

At the end the index must equal one built from scratch at the final commit (the same
pages with the same chunks, nothing extra: harness.index_differences), and no request
may be lost: every push the hook acknowledged is taken by a cycle (the worker's log counts
them), and none is left in the queue or dropped.
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

from docdex.index_format.layout import DataDir
from docdex.index_format.queue import pending_requests
from docdex.index_format.store import load_current
from docdex.indexer.triggers.worker import worker_pid

from .harness import References, hook_installed, index_content, index_differences, pushed_docs
from .rows import Row
from bench.common import GIT_ENV, bench_git, git, say

CLONES = 4
SETTLE_S = 600  # the worker's time to catch up after the last push
_TAKEN = re.compile(r"indexing .* \((\d+) request\(s\)\)")


class Clone:
    """One person's clone: commits in its own folder, pushes, rebases when rejected."""

    def __init__(self, bare: Path, where: Path, k: int, seed: int) -> None:
        bench_git(where.parent, "clone", "-q", str(bare), str(where))
        self.work, self.k, self.rng = where, k, random.Random(seed)
        self.pushes = self.rejected = self.queued = 0
        self.failures: list[str] = []

    def commit(self, n: int) -> None:
        folder = self.work / f"team-{self.k}"
        folder.mkdir(exist_ok=True)
        pages = sorted(folder.glob("*.md"))
        kind = self.rng.choice(["add", "add", "edit", "edit", "rename", "delete"])
        token = f"zq{self.k}x{n}"
        if kind in ("edit", "rename", "delete") and not pages:
            kind = "add"
        if kind == "add":
            body = f"# Team {self.k} page {n}\n\nThe token {token} is here.\n"
            (folder / f"page-{n}.md").write_text(body + f"\n## Notes\n\nMore about {token}.\n")
        elif kind == "edit":
            with open(self.rng.choice(pages), "a", encoding="utf-8") as out:
                out.write(f"\n## Change {n}\n\nThe token {token} was added.\n")
        elif kind == "rename":
            old = self.rng.choice(pages)
            old.rename(folder / f"renamed-{n}.md")
        else:
            self.rng.choice(pages).unlink()
        bench_git(self.work, "add", "-A")
        bench_git(self.work, "commit", "-q", "-m", f"team {self.k}: {kind} ({token})")

    def push(self) -> None:
        for _attempt in range(30):
            done = subprocess.run(
                ["git", "push", "origin", "main"],
                cwd=self.work,
                env={**os.environ, **GIT_ENV},
                capture_output=True,
                text=True,
            )
            if done.returncode == 0:
                self.pushes += 1
                self.queued += done.stderr.count("docdex: queued for indexing:")
                return
            self.rejected += 1  # someone pushed first: fetch, rebase, try again
            bench_git(self.work, "pull", "-q", "--rebase", "origin", "main")
            time.sleep(self.rng.uniform(0, 0.2))
        self.failures.append(f"clone {self.k}: push kept failing: {done.stderr[-200:]}")

    def run(self, commits: range) -> None:
        for n in commits:
            self.commit(n)
            self.push()
            time.sleep(self.rng.uniform(0, 0.6))


def run(quick: bool, work: Path) -> list[Row]:
    total = 20 if quick else 100
    _first, bare = pushed_docs(work / "seed", 15_000)
    data = DataDir(work / "data")
    hook_installed(data, bare)
    clones = [Clone(bare, work / f"clone-{k}", k, seed=k) for k in range(CLONES)]
    share = total // CLONES
    threads = [
        threading.Thread(target=c.run, args=(range(k * share, (k + 1) * share),))
        for k, c in enumerate(clones)
    ]
    say(f"[faults concurrent] {CLONES} clones pushing {total} commits through the hook ...")
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    pushing_s = time.monotonic() - started
    head = git("rev-parse", "main", cwd=bare)
    settled = _settle(data, head)
    _stop_worker(data)
    say("[faults concurrent] building the reference index from scratch ...")
    content = index_content(data)
    differences = index_differences(content, References(work, bare, {}).at(head), limit=10)
    pages = len(content.sources["docs"].pages) if content and "docs" in content.sources else 0
    log = (data.state / "worker.log").read_text(errors="replace")
    taken = sum(int(n) for n in _TAKEN.findall(log))
    filed = sum(c.queued for c in clones)
    dropped = len(re.findall(r"giving up|dropping", log))
    left = len(pending_requests(data))
    problems = [f for c in clones for f in c.failures] + differences
    if not settled:
        problems.append(f"the index did not reach {head[:12]} within {SETTLE_S} s")
    lost_requests = max(0, filed - taken) + dropped + left
    return [
        Row(
            "concurrent",
            f"{CLONES} clones pushing {total} commits through the hook",
            total,
            len(problems),
            figures={
                "pushes rejected (rebased)": sum(c.rejected for c in clones),
                "pages": pages,
                "push seconds": round(pushing_s, 1),
            },
            notes="; ".join(problems[:3]),
        ),
        Row(
            "concurrent",
            "requests filed by the hook, taken by the worker",
            filed,
            lost_requests,
            figures={
                "taken": taken,
                "cycles": len(_TAKEN.findall(log)),
                "dropped": dropped,
                "left": left,
            },
        ),
    ]


def _settle(data: DataDir, head: str) -> bool:
    """Wait until the queue is empty and the index is at `head`."""
    deadline = time.monotonic() + SETTLE_S
    while time.monotonic() < deadline:
        manifest = load_current(data)
        at = manifest.sources["docs"].commit if manifest and "docs" in manifest.sources else ""
        if at == head and not pending_requests(data):
            return True
        time.sleep(0.5)
    return False


def _stop_worker(data: DataDir) -> None:
    pid = worker_pid(data)
    if pid is None:
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
