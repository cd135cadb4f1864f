"""Damaged files: truncate or flip bytes in each kind of file of a published version of the
apm-docs index, with a `docdex serve` and a query client running throughout.

Each case builds a new version in a staging copy of the live data directory (a small push),
damages one of that version's own files there (truncated to a random length, or 1 to 3
bytes at random offsets inverted), installs the version into the live directory and points
CURRENT at it; a damaged CURRENT is damaged in place. Then `docdex verify` must exit 1 and
name the file, the server must keep answering from the last good version (never the
damaged one, no failed query) while /health names the file, and `docdex index --full`
must publish a version that verifies, which the server then serves. `lost` counts every
damage not found, every query that failed or came from the damaged version, and every
recovery that did not verify.

`python -m bench.faults.damage costs` measures what checksums cost instead: a small push
with and without them, and a cold start with and without checking the files first
(adr/0019).
"""

from __future__ import annotations

import random
import shutil
import statistics
import sys
import time
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

import msgspec

from docdex.index_format.config import Config, load_config, save_config
from docdex.index_format.layout import DataDir
from docdex.index_format.store import current_version, load_manifest, point_current
from docdex.index_format.verify import check_files, named_files, verify_data
from docdex.serverproc import ServeProcess

from .harness import QueryLoad, docdex_cli
from .rows import Row
from bench.common import CACHE, bench_git, git, say, source_repo

KINDS = {  # kind -> what it is, in words
    "vectors": "a segment's vectors.npy",
    "chunks": "a segment's chunks.msgpack",
    "hnsw": "a segment's hnsw.bin",
    "tantivy": "a file of the version's Tantivy index",
    "pages": "a page table",
    "manifest": "the version's manifest",
    "CURRENT": "CURRENT",
}
DAMAGES = ("truncate", "flip")
PER_KIND = {True: 1, False: 3}  # quick -> cases per kind and damage (quick: one damage each)
WAIT_S = 60


@dataclass
class Tally:
    count: int = 0
    undetected: int = 0
    served_damaged: int = 0  # the server answered from the damaged version, or not at all
    health_named: int = 0  # /health named the damaged file (or CURRENT)
    not_recovered: int = 0


class Damages:
    """The live data directory, its staging copy, the repository pushed to, the server."""

    def __init__(self, work: Path, quick: bool) -> None:
        self.work, self.quick = work, quick
        self.rng = random.Random(19)
        self.bare = work / "apm.git"
        git("clone", "-q", "--bare", str(source_repo("apm")), str(self.bare))
        self.clone = work / "clone"
        git("clone", "-q", str(self.bare), str(self.clone))
        self.live = DataDir(work / "live")
        self.live.ensure()
        # default settings: token vectors (late_interaction) would make each repair several
        # times slower; their files are checked like every other file of a segment
        save_config(self.live, Config(sources=[_source(self.bare)]))
        self.edits = 0

    def stage(self) -> tuple[DataDir, int, int]:
        """A staging copy of the live directory with one more version: (copy, the live
        version it was built on, the new version)."""
        from docdex.indexer.run.pipeline import index_sources

        staged = DataDir(self.work / "stage")
        shutil.rmtree(staged.root, ignore_errors=True)
        shutil.copytree(self.live.root, staged.root, ignore=shutil.ignore_patterns("state"))
        self.push()
        good = current_version(staged)
        report = index_sources(staged, load_config(staged), embedder=self.embedder)
        assert report.published, report
        return staged, good, report.version

    def push(self) -> None:
        self.edits += 1
        page = self.clone / "chaos" / f"damage-{self.edits}.md"
        page.parent.mkdir(exist_ok=True)
        page.write_text(f"# Damage case {self.edits}\n\nA page pushed before case {self.edits}.\n")
        bench_git(self.clone, "add", "-A")
        bench_git(self.clone, "commit", "-q", "-m", f"damage case {self.edits}")
        bench_git(self.clone, "push", "-q", "origin", "HEAD")

    def install(self, staged: DataDir, paths: list[str], version: int) -> None:
        """Copy the files and folders the live directory lacks, then make `version` current."""
        for path in paths:
            if (self.live.root / path).exists():
                continue
            if (staged.root / path).is_dir():
                shutil.copytree(staged.root / path, self.live.root / path)
            else:
                shutil.copy2(staged.root / path, self.live.root / path)
        point_current(self.live, version)

    def damage(self, path: Path, how: str) -> None:
        size = path.stat().st_size
        if how == "truncate":
            with open(path, "r+b") as f:
                f.truncate(self.rng.randrange(size))
            return
        with open(path, "r+b") as f:
            for _ in range(self.rng.randint(1, 3)):
                at = self.rng.randrange(size)
                f.seek(at)
                byte = f.read(1)[0]
                f.seek(at)
                f.write(bytes([byte ^ 0xFF]))

    def case(self, server: ServeProcess, load: QueryLoad, kind: str, how: str, tally: Tally):
        tally.count += 1
        failures_before = len(load.failures)
        if kind == "CURRENT":
            good = damaged = current_version(self.live)
            target = "CURRENT"
            self.damage(self.live.current, how)
        else:
            staged, good, damaged = self.stage()
            target = own_file(staged, good, damaged, kind, self.rng)
            paths = version_paths(staged, damaged)  # read before the manifest may be damaged
            self.damage(staged.root / target, how)
            self.install(staged, paths, damaged)
        health = _health_after(server, damaged if kind != "CURRENT" else None)
        kept_serving = health.get("index_version") == good
        refused = (health.get("refused_version") or {}).get("error", "")
        if Path(target).name in refused:
            tally.health_named += 1
        checked = docdex_cli(self.live, "verify", "--json")
        found = _problem_files(checked.stdout)
        if checked.returncode != 1 or target not in found:
            tally.undetected += 1
            say(f"[faults damage] {how} {target}: not found by verify ({checked.returncode})")
        repaired = docdex_cli(self.live, "index", "--full")
        recovered = repaired.returncode == 0 and verify_data(self.live.root).ok
        version = current_version(self.live) if recovered else None
        if not recovered or not _serves(server, version):
            tally.not_recovered += 1
            say(f"[faults damage] {how} {target}: not recovered: {repaired.stderr[-300:]}")
        answered_damaged = kind != "CURRENT" and damaged in load.versions
        failed = len(load.failures) - failures_before
        tally.served_damaged += bool(failed or answered_damaged or not kept_serving)

    @property
    def embedder(self):
        if not hasattr(self, "_embedder"):
            from docdex.model.embedder import Embedder

            self._embedder = Embedder.load()
        return self._embedder


def own_file(data: DataDir, old: int, new: int, kind: str, rng: random.Random) -> str:
    """A file of version `new` that `old` does not name, of `kind` (relative to the root)."""
    before, after = load_manifest(data, old), load_manifest(data, new)
    if kind == "manifest":
        return f"versions/{data.manifest(new).name}"
    if kind == "pages":
        return f"pages/{rng.choice([s.pages_file for s in after.sources.values()])}"
    if kind == "tantivy":
        shared = {(f.name, f.size, f.sha256) for f in before.text_files}
        own = [f.name for f in after.text_files if (f.name, f.size, f.sha256) not in shared]
        return f"text/{after.text_index}/{rng.choice(sorted(own))}"
    old_ids = {s.id for s in before.segments}
    segment = rng.choice([s.id for s in after.segments if s.id not in old_ids])
    name = {"vectors": "vectors.npy", "chunks": "chunks.msgpack", "hnsw": "hnsw.bin"}[kind]
    return f"segments/{segment}/{name}"


def version_paths(data: DataDir, version: int) -> list[str]:
    """What `version` names: its segment and text folders, page tables and manifest."""
    manifest = load_manifest(data, version)
    paths = [f"segments/{s.id}" for s in manifest.segments]
    paths.append(f"text/{manifest.text_index}")
    paths += [f"pages/{s.pages_file}" for s in manifest.sources.values() if s.pages_file]
    return [*paths, f"versions/{data.manifest(version).name}"]


def _source(bare: Path):
    from docdex.index_format.config import SourceConfig

    return SourceConfig(name="apm", location=str(bare))


def _health_after(server: ServeProcess, refused: int | None) -> dict:
    """/health once the server has seen the damage: the version refused, or (CURRENT) a
    few polls later."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        health = server.health() or {}
        if refused is None or (health.get("refused_version") or {}).get("version") == refused:
            if refused is None:
                time.sleep(1.0)
                health = server.health() or {}
            return health
        time.sleep(0.1)
    return server.health() or {}


def _serves(server: ServeProcess, version: int | None) -> bool:
    deadline = time.monotonic() + WAIT_S
    while version is not None and time.monotonic() < deadline:
        health = server.health() or {}
        if health.get("index_version") == version and health.get("status") == "ok":
            return True
        time.sleep(0.1)
    return False


def _problem_files(out: str) -> set[str]:
    try:
        report = msgspec.json.decode(out)
    except msgspec.DecodeError:
        return set()
    problems = report["problems"] + [p for v in report["versions"] for p in v["problems"]]
    return {p["file"] for p in problems}


def run(quick: bool, work: Path) -> list[Row]:
    damages = Damages(work, quick)
    say("[faults damage] first index of apm-docs (reusing the bench cache's vectors) ...")
    _seed(damages.live)
    first = docdex_cli(damages.live, "index", "--full")
    assert first.returncode == 0, first.stderr
    cases = [(k, d) for k in KINDS for d in DAMAGES for _ in range(PER_KIND[quick])]
    if quick:
        cases = [(k, DAMAGES[n % 2]) for n, k in enumerate(KINDS)]
    tallies = {kind: Tally() for kind in KINDS}
    with ServeProcess(damages.live.root, work / "serve.log") as server:
        server.wait_serving(180)
        with QueryLoad(server, rate=5) as load:
            for n, (kind, how) in enumerate(cases):
                damages.case(server, load, kind, how, tallies[kind])
                say(f"[faults damage] {n + 1}/{len(cases)} cases")
            load.stop()
            server.check_alive()
    return _rows(tallies, load)


def _seed(live: DataDir) -> None:
    """Start from the bench cache's apm index, when there is one: its vectors are reused."""
    from bench.performance.queries import apm_index

    cached = apm_index().root
    for folder in ("versions", "segments", "text", "pages"):
        shutil.rmtree(live.root / folder, ignore_errors=True)
        shutil.copytree(cached / folder, live.root / folder)
    shutil.copy2(cached / "CURRENT", live.current)


def _rows(tallies: dict[str, Tally], load: QueryLoad) -> list[Row]:
    rows = []
    for kind, t in tallies.items():
        lost = t.undetected + t.served_damaged + t.not_recovered
        rows.append(
            Row(
                "damage",
                f"{KINDS[kind]} truncated or bytes flipped",
                t.count,
                lost,
                figures={
                    "detected by verify": t.count - t.undetected,
                    "refused, last good served": t.count - t.served_damaged,
                    "/health named the file": t.health_named,
                    "recovered by index --full": t.count - t.not_recovered,
                },
            )
        )
    rows.append(
        Row(
            "damage",
            "queries during all of the above (5/s, /api/search)",
            load.requests,
            len(load.failures),
            figures={"failed requests": len(load.failures), "p99 ms": load.p99_ms()},
        )
    )
    return rows


# --- what checksums cost -------------------------------------------------------------------


def costs(work: Path, pushes: int = 10, starts: int = 30) -> dict[str, float]:
    """Side by side, interleaved: a small push into apm-docs with and without checksums,
    and opening the served version at a cold start with and without checking its files."""
    damages = Damages(work, quick=True)
    _seed(damages.live)
    docdex_cli(damages.live, "index", "--full")
    push = _push_costs(damages, pushes)
    start = _start_costs(damages, starts)
    return {**push, **start}


def _push_costs(damages: Damages, pushes: int) -> dict[str, float]:
    from docdex.index_format import store
    from docdex.indexer.run import publishing
    from docdex.indexer.run.pipeline import index_sources
    from docdex.indexer.run.storage import segments

    def no_sums(path, *_args):
        return []

    def unsummed_pages(data, name, pages):
        store.write_atomic(data.pages_file(name), msgspec.msgpack.encode(pages))

    timed: dict[bool, list[float]] = {True: [], False: []}
    real, real_pages = store.directory_sums, store.write_pages
    hashing: list[float] = []  # seconds in directory_sums, per push with checksums

    def timed_sums(*args):
        started = time.perf_counter()
        try:
            return real(*args)
        finally:
            hashing[-1] += time.perf_counter() - started

    damages.push()  # the first push after a full run also pays for the model's first use
    index_sources(damages.live, load_config(damages.live), embedder=damages.embedder)
    for n in range(2 * pushes):
        with_sums = n % 2 == 0
        segments.directory_sums = publishing.directory_sums = timed_sums if with_sums else no_sums
        hashing.append(0.0)
        publishing.write_pages = real_pages if with_sums else unsummed_pages
        damages.push()
        started = time.perf_counter()
        report = index_sources(damages.live, load_config(damages.live), embedder=damages.embedder)
        timed[with_sums].append(time.perf_counter() - started)
        assert report.published
    segments.directory_sums = publishing.directory_sums = real
    publishing.write_pages = real_pages
    on, off = statistics.median(timed[True]), statistics.median(timed[False])
    sums = statistics.median(hashing[0::2])
    return {
        "push_s_with": on,
        "push_s_without": off,
        "push_ratio": on / off,
        "sums_ms_per_push": sums * 1000,
        "sums_share_of_push": sums / on,
    }


def _start_costs(damages: Damages, starts: int) -> dict[str, float]:
    from docdex.server import versions
    from docdex.server.boot import Boot, open_docs

    model: Future = Future()
    model.set_result(damages.embedder)
    timed: dict[bool, list[float]] = {True: [], False: []}
    real = versions.VersionHolder._check
    for n in range(2 * starts):
        checked = n % 2 == 0
        versions.VersionHolder._check = real if checked else (lambda self, version: None)
        started = time.perf_counter()
        docs = open_docs(damages.live, Boot(), model)
        docs.search("install the agent", 3)
        timed[checked].append(time.perf_counter() - started)
        docs.holder.check_unhashed()
        docs.holder.stop()
    versions.VersionHolder._check = real
    on, off = statistics.median(timed[True]), statistics.median(timed[False])
    added = [a - b for a, b in zip(timed[True], timed[False], strict=True)]  # adjacent pairs
    return {
        "start_s_with": on,
        "start_s_without": off,
        "start_ms_added": statistics.median(added) * 1000,
        **_check_costs(damages.live, versions.START_HASH_BYTES),
    }


def _check_costs(data: DataDir, limit: int, runs: int = 15) -> dict[str, float]:
    """The check alone (page cache warm): what a cold start does before its first answer,
    and hashing every file, as a swap does when no file is shared with the served version."""
    files = named_files(load_manifest(data, current_version(data)))
    out = {"files": len(files), "bytes": sum(f.sum.size for f in files if f.sum)}
    for name, hash_up_to in (("check_ms_at_start", limit), ("check_ms_everything", None)):
        timed = []
        for _ in range(runs):
            started = time.perf_counter()
            check_files(data, files, hash_up_to)
            timed.append(time.perf_counter() - started)
        out[name] = statistics.median(timed) * 1000
    return out


if __name__ == "__main__" and sys.argv[1:] == ["costs"]:
    import json
    import tempfile

    with tempfile.TemporaryDirectory(dir=CACHE) as scratch:
        print(json.dumps(costs(Path(scratch)), indent=2))
