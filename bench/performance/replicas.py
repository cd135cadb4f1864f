"""Read replicas: several `docdex serve` processes on one data directory, and one on a copy
kept up to date file by file, under query load while the single writer publishes versions.

Three servers read the writer's data directory; a fourth reads a copy that a copier keeps
up to date beside the writer in the order docs/scaling.md gives (CURRENT read first,
immutable files, manifests, a completeness check, CURRENT written last, deletions after),
the way rsync or an object store would ship it to another host. A fifth reads a control
copy made in the naive order (CURRENT first). Every server answers a steady query load
throughout; the figures are failed requests, the versions each server answered from,
versions refused as damaged, and the p99 while versions are published against the p99
before.
"""

from __future__ import annotations

import os
import random
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from docdex.index_format.config import Config, SourceConfig, load_config, save_config
from docdex.index_format.layout import DataDir
from docdex.index_format.store import (
    CHUNKS_FILE,
    HNSW_FILE,
    OWNERS_FILE,
    VECTORS_FILE,
    load_manifest,
)
from docdex.indexer.run.pipeline import index_sources
from docdex.serverproc import ServeProcess

from bench.common import (
    CACHE,
    SEEDS,
    Figure,
    docdex,
    eval_queries,
    git,
    keep_seed,
    percentile,
    say,
    seed_index,
    source_repo,
    write_results,
)

WORK = CACHE / "replicas"
SHARED_READERS = 3
VERSIONS = 10
WARMUP_S = 10.0
STEADY_S = 8.0
PAUSE_S = 0.02  # between one client's requests: a bounded load, not a flood
MUTABLE = "state"  # never replicated: the writer's own run state
CURRENT = "CURRENT"
SEGMENT_FILES = (CHUNKS_FILE, VECTORS_FILE, OWNERS_FILE, HNSW_FILE)


# --- the copier -------------------------------------------------------------------------


def immutable_files(root: Path) -> list[Path]:
    """Every file of a version's directories (segments/, text/, pages/) under `root`,
    relative to it, temporary names left out; manifests are listed apart (they go last)."""
    out = []
    for top in ("segments", "text", "pages"):
        for dirpath, dirnames, files in os.walk(root / top):
            dirnames[:] = [d for d in dirnames if not d.startswith(".tmp-")]
            out += [Path(dirpath, f).relative_to(root) for f in files if _final(f)]
    return sorted(out)


def _final(name: str) -> bool:
    """A file of a version: every name but a temporary one or a Tantivy lock (Tantivy's own
    dotfiles, such as `.managed.json`, belong to the version)."""
    return not name.startswith((".tmp-", ".tantivy-"))


def manifests(root: Path) -> list[Path]:
    return sorted(p.relative_to(root) for p in (root / "versions").glob("*.json"))


def replicate(primary: Path, replica: Path) -> dict[str, int]:
    """One pass of the documented order. CURRENT is read first: everything the version it
    names needs was on disk before it was named, so the copy that follows finds it all,
    whatever the writer publishes meanwhile. Then new immutable files, new manifests,
    a check that the version is complete here, CURRENT (each under a temporary name,
    renamed), and last the deletion of what the primary no longer has. A file already in
    the replica is never copied again: it cannot have changed."""
    current = (primary / CURRENT).read_bytes()
    copied = 0
    present = {}  # inode in the primary -> its copy here (text/ versions share files)
    for rel in [*immutable_files(primary), *manifests(primary)]:
        try:
            inode = (primary / rel).stat().st_ino
            if not (replica / rel).exists():
                _copy_atomic(primary / rel, replica / rel, present.get(inode))
                copied += 1
        except FileNotFoundError:  # collected since the listing: no kept version needs it
            continue
        present.setdefault(inode, replica / rel)
    missing = _missing(replica, int(current))
    if missing:
        raise RuntimeError(f"version {int(current)} is incomplete in the copy: {missing[0]}")
    _write_atomic(replica / CURRENT, current)
    stale = _stale(primary, replica)
    for rel in stale:
        (replica / rel).unlink()
    _remove_empty_dirs(replica)
    return {"version": int(current), "copied": copied, "deleted": len(stale)}


def replicate_current_first(primary: Path, replica: Path) -> dict[str, int]:
    """The order a naive copier would take, kept as the control: CURRENT first, then the
    manifests, then the files they name. Its readers are offered versions whose files
    have not arrived yet."""
    current = (primary / CURRENT).read_bytes()
    _write_atomic(replica / CURRENT, current)
    copied = 0
    for rel in [*manifests(primary), *immutable_files(primary)]:
        try:
            if not (replica / rel).exists():
                _copy_atomic(primary / rel, replica / rel)
                copied += 1
        except FileNotFoundError:
            continue
    return {"version": int(current), "copied": copied, "deleted": 0}


def _missing(replica: Path, version: int) -> list[str]:
    """What the manifest of `version` names that the copy does not hold."""
    data = DataDir(replica)
    manifest = load_manifest(data, version)
    wanted = [data.segment(s.id) / name for s in manifest.segments for name in SEGMENT_FILES]
    wanted += [data.text_index(manifest.text_index) / "meta.json"]
    wanted += [data.pages_file(s.pages_file) for s in manifest.sources.values() if s.pages_file]
    return [str(p) for p in wanted if not p.exists()]


def _stale(primary: Path, replica: Path) -> list[Path]:
    """Files the primary's garbage collection removed (the copy keeps what it keeps)."""
    wanted = set(immutable_files(primary)) | set(manifests(primary))
    return [rel for rel in immutable_files(replica) + manifests(replica) if rel not in wanted]


def _remove_empty_dirs(replica: Path) -> None:
    for top in ("segments", "text"):
        for entry in (replica / top).iterdir():
            if entry.is_dir() and not any(entry.iterdir()):
                entry.rmdir()


def _write_atomic(dst: Path, data: bytes) -> None:
    tmp = dst.with_name(f".tmp-{dst.name}")
    tmp.write_bytes(data)
    tmp.rename(dst)


def _copy_atomic(src: Path, dst: Path, same: Path | None = None) -> None:
    """`src` to `dst` under a temporary name, renamed once complete; a hard link to `same`
    (the replica's copy of the same primary file) instead of a copy, as `rsync -H` does."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(f".tmp-{dst.name}")
    tmp.unlink(missing_ok=True)
    if same is not None:
        os.link(same, tmp)
    else:
        shutil.copy2(src, tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
    tmp.rename(dst)


# --- the load ---------------------------------------------------------------------------


@dataclass
class Client:
    """One server's steady load: latencies and versions by phase, and failures."""

    server: ServeProcess
    queries: list[str]
    phase: str = "steady"
    latencies: dict[str, list[float]] = field(default_factory=dict)
    versions: set[int] = field(default_factory=set)
    failures: list[str] = field(default_factory=list)
    requests: int = 0

    def run(self, stop: threading.Event) -> None:
        rng = random.Random(self.server.port)
        while not stop.is_set():
            query = rng.choice(self.queries)
            started = time.perf_counter()
            status, body = self.server.get("/api/search", {"q": query, "n": 5})
            took = time.perf_counter() - started
            self.requests += 1
            self.latencies.setdefault(self.phase, []).append(took)
            if status != 200 or not body or "index_version" not in body:
                self.failures.append(f"{status}: {str(body)[:200]}")
            else:
                self.versions.add(body["index_version"])
            time.sleep(PAUSE_S)


CopyPass = Callable[[Path, Path], dict[str, int]] | None


class Copier:
    """`replicate` in a loop beside the writer, as a cron'd rsync on another host would run:
    its passes overlap publishes, which the order has to make harmless."""

    def __init__(self, primary: Path, replica: Path, copy: CopyPass = None) -> None:
        self.primary, self.replica = primary, replica
        self.copy = copy or replicate
        self.passes: list[dict[str, int]] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        if self._thread.is_alive():
            self._stop.set()
            self._thread.join()

    def _run(self) -> None:
        while True:
            last = self._stop.is_set()
            try:
                self.passes.append(self.copy(self.primary, self.replica))
            except (OSError, RuntimeError) as exc:
                self.errors.append(str(exc))
            if last:
                return
            time.sleep(0.2)


# --- the run ----------------------------------------------------------------------------


def primary_index() -> tuple[Path, Path]:
    """(data directory, work clone) of apm-docs, indexed; the index is seeded from the
    cache so set-up embeds only what changed since."""
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    bare, work, data = WORK / "apm.git", WORK / "work", WORK / "primary"
    git("clone", "-q", "--bare", str(source_repo("apm")), str(bare))
    git("clone", "-q", str(bare), str(work))
    seed = SEEDS / "replicas-apm"
    seed_index(data, seed)
    save_config(DataDir(data), Config(sources=[SourceConfig(name="apm", location=str(bare))]))
    say("[replicas] indexing apm-docs ...")
    index_sources(DataDir(data), load_config(DataDir(data)))
    keep_seed(data, seed)
    return data, work


def publish(data: Path, work: Path, n: int) -> int:
    """A push changing one page, then `docdex index`: the version it published."""
    page = work / "README.md"
    page.write_text(page.read_text() + f"\n\nReplica marker {n}, {time.time_ns()}.\n")
    env = "-c", "user.name=bench", "-c", "user.email=bench@docdex.invalid"
    git(*env, "commit", "-q", "-am", f"replica version {n}", cwd=work)
    git("push", "-q", "origin", "HEAD", cwd=work)
    return docdex(data, "index")["version"]


def bench_replicas() -> list[Figure]:
    primary, work = primary_index()
    copies = {"replica": WORK / "replica", "current-first": WORK / "current-first"}
    for copy in copies.values():
        for once in ("DOCDEX", "docdex.toml"):  # the marker and the configuration: once
            _copy_atomic(primary / once, copy / once)
        replicate(primary, copy)
    queries = [r["query"] for r in eval_queries("apm")]
    logs = WORK / "logs"
    logs.mkdir()
    servers = {
        f"primary {i + 1}": ServeProcess(primary, logs / f"primary-{i}.log")
        for i in range(SHARED_READERS)
    }
    servers |= {name: ServeProcess(path, logs / f"{name}.log") for name, path in copies.items()}
    try:
        for server in servers.values():
            server.wait_serving(timeout=300)
        copiers = [
            Copier(primary, copies["replica"]),
            Copier(primary, copies["current-first"], replicate_current_first),
        ]
        details = _under_load(servers, queries, primary, work, copiers)
    finally:
        for server in servers.values():
            server.stop()
    figures = _figures(details)
    write_results("replicas", figures, details)
    return figures


def _under_load(
    servers: dict[str, ServeProcess],
    queries: list[str],
    primary: Path,
    work: Path,
    copiers: list[Copier],
) -> dict:
    clients = {name: Client(server, queries, phase="warm-up") for name, server in servers.items()}
    stop = threading.Event()
    threads = [threading.Thread(target=c.run, args=(stop,)) for c in clients.values()]
    for t in threads:
        t.start()
    published = []
    try:
        _enter(clients, "steady", after=WARMUP_S)  # the servers' MCP import and first searches
        _enter(clients, "publishing", after=STEADY_S)
        say(f"[replicas] publishing {VERSIONS} versions under load ...")
        for copier in copiers:
            copier.start()
        for n in range(VERSIONS):
            published.append(publish(primary, work, n))
        for copier in copiers:
            copier.stop()  # its last pass starts after the last publish
        _enter(clients, "after", after=3.0)  # the servers' next look at CURRENT
        time.sleep(2.0)
    finally:
        for copier in copiers:
            copier.stop()
        stop.set()
        for t in threads:
            t.join()
    return {
        "published": published,
        "copiers": [
            {
                "passes": len(c.passes),
                "copied": [p for p in c.passes if p["copied"]],
                "errors": c.errors,
            }
            for c in copiers
        ],
        "servers": {name: _server_row(c) for name, c in clients.items()},
    }


def _enter(clients: dict[str, Client], phase: str, after: float) -> None:
    time.sleep(after)
    for c in clients.values():
        c.phase = phase


def _server_row(c: Client) -> dict:
    log = c.server.output()
    return {
        "requests": c.requests,
        "failures": c.failures,
        "versions": sorted(c.versions),
        "p99_ms": {k: round(percentile(v, 0.99) * 1000, 2) for k, v in c.latencies.items()},
        "refused_loads": log.count("refused version"),
    }


def _figures(details: dict) -> list[Figure]:
    servers = details["servers"]
    ordered = {k: v for k, v in servers.items() if k != "current-first"}
    failed = sum(len(s["failures"]) for s in ordered.values())
    requests = sum(s["requests"] for s in ordered.values())
    documented, naive = details["copiers"]
    last = details["published"][-1]
    name = "replicas"
    figures = [
        Figure(name, f"failed requests of {requests}, 4 servers", failed, "", "== 0", failed == 0),
        Figure(name, "versions published under load", len(details["published"]), ""),
        Figure(name, "copier passes beside the writer", documented["passes"], ""),
        Figure(
            name,
            "copier passes that found a version incomplete",
            len(documented["errors"]),
            "",
            "== 0",
            not documented["errors"],
        ),
    ]
    for label, s in ordered.items():
        saw_last = bool(s["versions"]) and s["versions"][-1] == last
        seen = len(s["versions"])
        figures += [
            Figure(
                name, f"{label}: versions answered from", seen, "", "ends at the last", saw_last
            ),
            Figure(
                name, f"{label}: p99 while publishing", s["p99_ms"].get("publishing", 0.0), "ms"
            ),
            Figure(
                name,
                f"{label}: p99 publishing / steady",
                _ratio(s["p99_ms"].get("publishing", 0.0), s["p99_ms"].get("steady", 0.0)),
                "x",
            ),
            Figure(
                name,
                f"{label}: versions refused as damaged",
                s["refused_loads"],
                "",
                "== 0",
                s["refused_loads"] == 0,
            ),
        ]
    control = servers["current-first"]
    figures += [
        Figure(
            name, "control, CURRENT copied first: versions refused", control["refused_loads"], ""
        ),
        Figure(
            name, "control, CURRENT copied first: failed requests", len(control["failures"]), ""
        ),
    ]
    return figures


def _ratio(a: float, b: float) -> float:
    return round(a / b, 2) if b else float("nan")
