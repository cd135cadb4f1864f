"""Crash anywhere: kill -9 the indexer at random instants and at aimed points, with a
`docdex serve` and a query client running throughout.

The repository is docdex's own markdown in a bare repository; the data directory has small
segments (`segment_chunks` 24, `max_segments` 2) so that pushes write, merge and rewrite
segments all the time. Each step makes a small push (edits, new pages, deletions, renames)
or asks for a full re-read, runs the indexing cycle (`python -m docdex.indexer.triggers.cycle`, the
process the worker runs) and kill -9s it: after a random delay, or where bench/faults/
stopper.py stopped it (before a segment, the text index, a page table, the manifest or
CURRENT is renamed into place, just after CURRENT is, inside a compaction, inside garbage
collection). Then the cycle runs again, as the worker's retry does. After the kill and
after the recovery the version CURRENT names must pass `docdex verify`; after the recovery
the index must equal one built from scratch at the same commit (harness.index_differences).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from docdex.index_format.layout import DataDir
from docdex.index_format.store import current_version
from docdex.serverproc import ServeProcess

from .harness import (
    QueryLoad,
    References,
    index_content,
    index_differences,
    pushed_docs,
    verify_problems,
    write_config,
)
from .rows import Row
from bench.common import bench_git, git, median, say

SETTINGS = {"segment_chunks": 24, "max_segments": 2, "keep_versions": 2}
CORPUS_BYTES = 30_000
STOP_WAIT_S = 120
BUDGET_S, BUDGET_QUICK_S = 2400, 600  # a loaded machine cuts the plan short, and says so

# (operation, kill point, full count, quick count); "random" = after a random delay
PLAN = [
    ("push", "random", 24, 2),
    ("full", "random", 14, 1),
    ("push", "segment", 8, 1),
    ("full", "text", 6, 1),
    ("push", "pages", 6, 1),
    ("push", "manifest", 8, 1),
    ("push", "current", 8, 1),
    ("push", "published", 6, 1),
    ("push", "compaction", 10, 2),
    ("gc", "gc", 10, 1),
]
WHAT = {
    ("push", "random"): "kill -9 at a random instant of a push's cycle",
    ("full", "random"): "kill -9 at a random instant of a full re-read (--full)",
    ("push", "segment"): "kill -9 with a new segment written, before its rename",
    ("full", "text"): "kill -9 with the text index committed, before its rename",
    ("push", "pages"): "kill -9 with a page table written, before its rename",
    ("push", "manifest"): "kill -9 with the manifest written, before its rename",
    ("push", "current"): "kill -9 with all published but CURRENT",
    ("push", "published"): "kill -9 just after CURRENT is renamed (before gc)",
    ("push", "compaction"): "kill -9 inside a compaction (merging segments)",
    ("gc", "gc"): "kill -9 inside `docdex gc` (debris of a killed run)",
}


class WriterFailed(RuntimeError):
    """An indexing run failed by itself (not killed)."""


@dataclass
class Tally:
    kills: int = 0
    lost: int = 0
    not_reached: int = 0
    notes: list[str] = field(default_factory=list)


class Campaign:
    def __init__(self, work: Path, quick: bool) -> None:
        self.work, self.quick = work, quick
        self.rng = random.Random(16)
        self.clone, self.bare = pushed_docs(work / "repo", CORPUS_BYTES)
        self.data = DataDir(work / "data")
        write_config(self.data, {"docs": self.bare}, **SETTINGS)
        self.references = References(work, self.bare, SETTINGS)
        self.durations: dict[str, list[float]] = {"push": [], "full": [], "gc": []}
        self.edits = 0
        self.unverified: set[int] = set()  # versions that were CURRENT and failed verify
        self.checked: set[int] = set()
        self.cut = ""  # why the plan stopped early, if it did

    # --- what the steps run -----------------------------------------------------------------

    def command(self, operation: str, point: str) -> list[str]:
        if operation == "gc":
            writer = ["cli", "--data", str(self.data.root), "gc"]
        else:
            writer = ["--data", str(self.data.root)] + (["--full"] if operation == "full" else [])
        if point == "random":
            if writer[0] == "cli":
                return [sys.executable, "-m", "docdex.cli", *writer[1:]]
            return [sys.executable, "-m", "docdex.indexer.triggers.cycle", *writer]
        return [sys.executable, "-m", "bench.faults.stopper", point, "0", "--", *writer]

    def run_whole(self, operation: str) -> None:
        """The operation without a kill (set-up, and the recovery after each kill)."""
        started = time.monotonic()
        done = subprocess.run(self.command(operation, "random"), capture_output=True, text=True)
        if done.returncode != 0:
            raise WriterFailed(f"{operation} failed: {done.stderr.strip()[-300:]}")
        self.durations[operation].append(time.monotonic() - started)

    def kill_run(self, operation: str, point: str) -> bool:
        """Start the operation and kill -9 it at `point`; False when it never got there."""
        log = self.work / "killed.log"
        with open(log, "wb") as err:
            proc = subprocess.Popen(
                self.command(operation, point), stdout=subprocess.DEVNULL, stderr=err
            )
        if point == "random":
            typical = median(self.durations[operation][-5:]) or 2.0
            reached = _wait_exit(proc, self.rng.uniform(0.05, typical)) is None
        else:
            reached = _wait_stopped(proc, STOP_WAIT_S)
        if reached:
            os.kill(proc.pid, signal.SIGKILL)
        if proc.wait() > 0:  # not killed, failed on its own: that is a finding too
            tail = log.read_text(errors="replace").strip().splitlines()[-1:]
            raise WriterFailed(f"{operation} exited with {proc.returncode}: {tail}")
        return reached

    # --- the changes pushed ----------------------------------------------------------------

    def push(self) -> None:
        for _ in range(self.rng.randint(1, 3)):
            self.edit()
        bench_git(self.clone, "add", "-A")
        # --allow-empty: a push may undo itself (a copy deleted again), still a commit to index
        bench_git(self.clone, "commit", "-q", "--allow-empty", "-m", f"chaos edit {self.edits}")
        bench_git(self.clone, "push", "-q", "origin", "main")

    def edit(self) -> None:
        """One change: new text (embedded), a copy of a page (its vectors are reused), or
        a deletion or rename of a copy."""
        self.edits += 1
        n = self.edits
        folder = self.clone / "chaos"
        ours = sorted(folder.glob("*.md")) if folder.is_dir() else []
        kind = self.rng.choice(["append", "copy", "copy", "delete", "rename"])
        if kind in ("delete", "rename") and not ours:
            kind = "copy"
        pages = sorted(p for p in self.clone.rglob("*.md") if ".git" not in p.parts)
        if kind == "append":
            with open(self.rng.choice(pages), "a", encoding="utf-8") as out:
                out.write(f"\n\n## Chaos note {n}\n\n{_words(self.rng, 40)}\n")
        elif kind == "copy":
            folder.mkdir(exist_ok=True)
            (folder / f"page-{n}.md").write_bytes(self.rng.choice(pages).read_bytes())
        elif kind == "delete":
            self.rng.choice(ours).unlink()
        else:
            old = self.rng.choice(ours)
            old.rename(old.with_name(f"renamed-{n}.md"))

    # --- the checks ------------------------------------------------------------------------

    def current_problems(self) -> list[str]:
        version = current_version(self.data)
        if version is None:
            return ["no version is current"]
        problems = verify_problems(self.data, version)
        if problems is None:
            return []  # no verifier in this checkout: the row says so
        self.checked.add(version)
        if problems:
            self.unverified.add(version)
        return problems

    def recovered_problems(self) -> list[str]:
        head = git("rev-parse", "main", cwd=self.bare)
        return index_differences(index_content(self.data), self.references.at(head))

    # --- one step ----------------------------------------------------------------------------

    def kill_at(self, operation: str, point: str, tally: Tally) -> bool:
        for _attempt in range(4):
            if self.kill_run(operation, point):
                tally.kills += 1
                return True
            tally.not_reached += 1  # e.g. this push compacted nothing: push again
            self.push()
        return False

    def step(self, operation: str, point: str, tally: Tally) -> None:
        if operation == "gc":  # debris first: a push killed with a segment written
            self.push()
            self.kill_run("push", "segment")
        elif operation == "push" or self.rng.random() < 0.5:
            self.push()
        try:
            if not self.kill_at(operation, point, tally):
                return
            problems = self.current_problems()
            self.run_whole("push" if operation == "gc" else operation)
        except WriterFailed as exc:
            problems = [str(exc)]
        problems += self.current_problems() + self.recovered_problems()
        if problems:
            tally.lost += 1
            tally.notes.append("; ".join(problems[:3]))
            say(f"[faults crash] {operation}/{point}: {problems[:3]}")


def run(quick: bool, work: Path) -> list[Row]:
    campaign = Campaign(work, quick)
    say("[faults crash] first index of docdex's docs ...")
    campaign.run_whole("full")
    campaign.run_whole("full")  # a --full on an index: the duration random kills aim into
    campaign.durations["full"].pop(0)  # the first embedded everything
    steps = [
        (op, point) for op, point, full, short in PLAN for _ in range(short if quick else full)
    ]
    campaign.rng.shuffle(steps)
    if os.environ.get("DOCDEX_CHAOS_FROM_END"):  # a second process, from the plan's other end
        steps.reverse()
        campaign.rng = random.Random(17)
    tallies = {key: Tally() for key in WHAT}
    with ServeProcess(campaign.data.root, work / "serve.log") as server:
        server.wait_serving(180)
        with QueryLoad(server, rate=10) as load:
            budget = float(os.environ.get("DOCDEX_CHAOS_BUDGET_S", BUDGET_S))
            deadline = time.monotonic() + (BUDGET_QUICK_S if quick else budget)
            for n, (operation, point) in enumerate(steps):
                if time.monotonic() > deadline:
                    campaign.cut = f"time budget spent after {n} of {len(steps)} steps"
                    break
                campaign.step(operation, point, tallies[(operation, point)])
                if n % 10 == 9:
                    say(f"[faults crash] {n + 1}/{len(steps)} steps")
            load.stop()
            server.check_alive()
    return _rows(campaign, tallies, load)


def _rows(campaign: Campaign, tallies: dict, load: QueryLoad) -> list[Row]:
    verifier = verify_problems(campaign.data, current_version(campaign.data) or 1) is not None
    rows = []
    for key, tally in tallies.items():
        notes = (
            [f"point not reached {tally.not_reached}x (pushed again)"] if tally.not_reached else []
        )
        rows.append(
            Row(
                "crash",
                WHAT[key],
                tally.kills,
                tally.lost,
                notes="; ".join(notes + tally.notes[:2]),
            )
        )
    served_bad = len(load.versions & campaign.unverified)
    notes = [campaign.cut] * bool(campaign.cut)
    notes += ["docdex verify is not in this checkout: nothing verified"] * (not verifier)
    rows.append(
        load.row(
            "crash",
            lost=served_bad,
            notes="; ".join(notes),
            **{
                "versions served": len(load.versions),
                "served versions failing verify": served_bad,
                "versions verified": len(campaign.checked),
            },
        )
    )
    return rows


def _wait_exit(proc: subprocess.Popen, seconds: float) -> int | None:
    try:
        return proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return None


def _wait_stopped(proc: subprocess.Popen, timeout: float) -> bool:
    """True once the process stopped itself (state T); False when it exited first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            state = Path(f"/proc/{proc.pid}/stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            return False
        if state == "T":
            return True
        time.sleep(0.005)
    return True  # stuck: kill it all the same


_VOCABULARY = [
    "index",
    "version",
    "segment",
    "chunk",
    "page",
    "table",
    "manifest",
    "current",
    "query",
    "server",
    "worker",
    "push",
    "commit",
    "branch",
    "vector",
    "text",
    "search",
    "recovery",
    "crash",
    "disk",
    "tombstone",
    "compaction",
    "merge",
]


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_VOCABULARY) for _ in range(n)) + "."
