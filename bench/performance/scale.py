"""The cost curve: index size, version load, query latency, server RSS and small-push cost
of one source grown from 50k to 1M chunks.

The corpus is real text recombined: every page is a fresh title over sections cut from the
shipped corpora's pages, committed with `git fast-import` into one bare repository that
grows size by size (a size's pages are a prefix of the next one's). It is indexed by the
real pipeline (chunking, HNSW, Tantivy, page tables, compaction) with one cheap seam: the
embedder passed to `index_sources` tokenises and windows for real but gives each window a
real window vector of the shipped corpora (embedded once, cached) with a small random
perturbation instead of running the model. Pushes and queries then use the real model.

Each size's data directory is kept in the bench cache (a hard-linked copy of the previous
size grown by one run), so a rerun measures without building. `python -m bench.performance.scale
build SIZE...`, `measure SIZE` and `report` run the steps apart.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import shutil
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import msgspec
import numpy as np

from docdex.index_format.config import Config, Settings, SourceConfig, load_config, save_config
from docdex.index_format.layout import DataDir
from docdex.index_format.store import current_version, list_versions, load_manifest
from docdex.indexer.chunking.page_parser import parse_page
from docdex.indexer.run.pipeline import index_sources
from docdex.model.embedder import Embedder
from docdex.model.files import load_tokenizer, model_info
from docdex.serverproc import ServeProcess

from .stage_times import time_stages
from bench.common import (
    CACHE,
    CORPORA,
    GIT_ENV,
    ROOT,
    Figure,
    children_cpu,
    docdex,
    eval_queries,
    git,
    median,
    percentile,
    say,
    source_repo,
    theil_sen,
    write_results,
)

SIZES = (50_000, 100_000, 200_000, 500_000, 1_000_000)
QUICK_SIZES = (50_000,)
WORK = CACHE / "scale"
BARE = WORK / "corpus.git"
SOURCE = "scale"
PAGES_DIR = 1000  # pages per directory of the generated tree (tree diffs stay small)
REAL_SECTIONS = 800  # sections embedded with the real model once: the vectors reused
NOISE = 0.03  # per-dimension sigma: a copy keeps a cosine of about 0.85 to its real vector
QUERIES = 200
SERVER_QUERIES = 100
PUSHES = 3
PUSH_PAGES = 3
LOADS = 3
PLOT = ROOT / "docs" / "img" / "scale.png"


# --- real text --------------------------------------------------------------------------


_HEADING = re.compile(r"^(#{1,3})\s+(\S.*)$")
_FENCE = re.compile(r"^\s*(```|~~~)")


def sections_of(text: str) -> Iterator[tuple[str, str]]:
    """(heading, body) of each h1-h3 section of a markdown page, front matter dropped,
    headings inside code fences ignored."""
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        text = text[end + 4 :] if end > 0 else text
    heading, lines, fenced = "", [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        match = None if fenced else _HEADING.match(line)
        if match:
            if lines:
                yield heading, "\n".join(lines).strip()
            heading, lines = match.group(2).strip(), []
        else:
            lines.append(line)
    if lines:
        yield heading, "\n".join(lines).strip()


def corpus_pages(corpus: str) -> Iterator[tuple[str, str]]:
    """(path, text) of every markdown file at the head of a shipped corpus."""
    repo, branch = source_repo(corpus), CORPORA[corpus][1]
    listing = git("ls-tree", "-r", branch, cwd=repo).splitlines()
    entries = [line.split(None, 3) for line in listing]
    blobs = [(e[3], e[2]) for e in entries if e[1] == "blob" and e[3].endswith(".md")]
    with subprocess.Popen(
        ["git", "cat-file", "--batch"], cwd=repo, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    ) as proc:
        requests = "".join(f"{sha}\n" for _, sha in blobs).encode()
        writer = threading.Thread(target=_write_all, args=(proc.stdin, requests))
        writer.start()  # cat-file answers while it reads: write and read at once
        for path, _sha in blobs:
            size = int(proc.stdout.readline().split()[2])
            data = proc.stdout.read(size + 1)[:-1]
            yield path, data.decode("utf-8", "replace")
        writer.join()


def _write_all(stream, data: bytes) -> None:
    stream.write(data)
    stream.close()


POOL_CORPORA = ("apm", "rustc", "powershell", "msmarco")  # what every scale run drew from


def section_pool() -> list[tuple[str, str]]:
    """Every usable section of the four corpora, in a fixed order."""
    pool = []
    for corpus in POOL_CORPORA:
        for path, text in corpus_pages(corpus):
            fallback = Path(path).stem.replace("-", " ")
            for heading, body in sections_of(text):
                if 80 <= len(body) <= 6000:
                    pool.append((heading or fallback, body))
    return pool


def page_text(pool: list[tuple[str, str]], number: int) -> str:
    """Page `number` of the scale corpus: a unique title over 4-14 real sections."""
    rng = random.Random(number)
    picks = [pool[rng.randrange(len(pool))] for _ in range(rng.randint(4, 14))]
    lines = [f"# {picks[0][0]} (part {number})", ""]
    for heading, body in picks:
        lines += [f"## {heading}", "", body, ""]
    return "\n".join(lines)


def page_path(number: int) -> str:
    return f"pages/{number // PAGES_DIR:04d}/page-{number:07d}.md"


class Plan(msgspec.Struct):
    chunks_per_page: float  # measured with the real chunker on a sample of pages

    def pages(self, chunks: int) -> int:
        return int(round(chunks / self.chunks_per_page))


def load_plan(pool: list[tuple[str, str]]) -> Plan:
    path = WORK / "plan.json"
    if path.exists():
        return msgspec.json.decode(path.read_bytes(), type=Plan)
    sample = [parse_page(page_text(pool, n), page_path(n)) for n in range(500)]
    plan = Plan(chunks_per_page=sum(len(p.chunks) for p in sample) / len(sample))
    path.write_bytes(msgspec.json.encode(plan))
    return plan


# --- the repository ---------------------------------------------------------------------


def fast_import(files: Iterator[tuple[str, str]], message: str, parent: str | None) -> str:
    """Commit `files` (path -> text, added or replaced) on main of BARE; the new sha."""
    env = {**os.environ, **GIT_ENV}
    proc = subprocess.Popen(
        ["git", "fast-import", "--quiet", "--force"], cwd=BARE, stdin=subprocess.PIPE, env=env
    )
    out = proc.stdin
    msg = message.encode()
    out.write(b"commit refs/heads/main\n")
    out.write(f"committer bench <bench@docdex.invalid> {int(time.time())} +0000\n".encode())
    out.write(b"data %d\n%s\n" % (len(msg), msg))
    if parent:
        out.write(f"from {parent}\n".encode())
    for path, text in files:
        data = text.encode()
        out.write(f"M 100644 inline {path}\n".encode())
        out.write(b"data %d\n%s\n" % (len(data), data))
    out.close()
    if proc.wait() != 0:
        raise RuntimeError("git fast-import failed")
    return git("rev-parse", "refs/heads/main", cwd=BARE)


def tag_of(size: int) -> str:
    return f"refs/tags/size-{size}"


def grown_commit(pool: list[tuple[str, str]], plan: Plan, size: int, previous: int) -> str:
    """The commit holding the pages of `size` chunks (made on top of `previous`'s)."""
    try:
        return git("rev-parse", "--verify", "-q", tag_of(size), cwd=BARE)
    except subprocess.CalledProcessError:
        pass
    start = plan.pages(previous) if previous else 0
    parent = git("rev-parse", tag_of(previous), cwd=BARE) if previous else None
    pages = ((page_path(n), page_text(pool, n)) for n in range(start, plan.pages(size)))
    sha = fast_import(pages, f"grow to {size} chunks", parent)
    git("update-ref", tag_of(size), sha, cwd=BARE)
    return sha


def point_main(sha: str) -> None:
    git("update-ref", "refs/heads/main", sha, cwd=BARE)


# --- the cheap embedder -----------------------------------------------------------------


class PerturbedEmbedder(Embedder):
    """Real tokens and windows; each window's vector is one of `base` (real window vectors)
    picked by a hash of its tokens, plus Gaussian noise, normalised. No model runs."""

    def __init__(self, base: np.ndarray) -> None:
        super().__init__(None, load_tokenizer(), model_info())
        self.base = base.astype(np.float32)

    def embed_windows(self, windows, progress=None) -> np.ndarray:
        seeds = [zlib.crc32(np.asarray(w, dtype=np.int32).tobytes()) for w in windows]
        picks = self.base[[s % len(self.base) for s in seeds]]
        rng = np.random.default_rng(seeds[:64])
        out = picks + rng.normal(0.0, NOISE, picks.shape).astype(np.float32)
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        if progress is not None:
            progress(len(windows))
        return out


def real_vectors(pool: list[tuple[str, str]]) -> np.ndarray:
    """Window vectors of REAL_SECTIONS real sections, embedded once by the real model."""
    path = WORK / "real-vectors.npy"
    if not path.exists():
        say(f"[scale] embedding {REAL_SECTIONS} real sections once (cached) ...")
        texts = [f"{h}\n{b}" for h, b in random.Random(11).sample(pool, REAL_SECTIONS)]
        vectors, _owners = Embedder.load().embed_texts(texts)
        np.save(path, vectors.astype(np.float32))
    return np.load(path)


# --- building each size -----------------------------------------------------------------


class Build(msgspec.Struct):
    size: int  # the target
    grown_from: int  # 0: built from nothing
    chunks: int
    windows: int
    pages: int
    segments: int
    build_s: float  # the indexing run that grew it (not the corpus generation)
    commit: str


def data_dir(size: int) -> Path:
    return WORK / f"data-{size}"


def linked_copy(src: Path, dst: Path) -> None:
    """A copy of a data directory whose immutable files are hard links (state/ is copied)."""
    shutil.rmtree(dst, ignore_errors=True)
    subprocess.run(["cp", "-al", str(src), str(dst)], check=True)
    if (src / "state").exists():
        shutil.rmtree(dst / "state")
        shutil.copytree(src / "state", dst / "state", ignore=shutil.ignore_patterns("*.lock"))


def load_build(size: int) -> Build | None:
    path = data_dir(size) / "scale-build.json"
    return msgspec.json.decode(path.read_bytes(), type=Build) if path.exists() else None


def build_sizes(sizes: tuple[int, ...]) -> list[Build]:
    WORK.mkdir(parents=True, exist_ok=True)
    if not BARE.exists():
        git("init", "-q", "--bare", "--initial-branch=main", str(BARE))
    say("[scale] reading the corpora's sections ...")
    pool = section_pool()
    plan = load_plan(pool)
    embedder: PerturbedEmbedder | None = None
    builds, previous = [], 0
    for size in sizes:
        build = load_build(size)
        if build is None:
            embedder = embedder or PerturbedEmbedder(real_vectors(pool))
            build = build_one(pool, plan, size, previous, embedder)
        builds.append(build)
        previous = size
    return builds


def build_one(
    pool: list[tuple[str, str]], plan: Plan, size: int, previous: int, embedder: Embedder
) -> Build:
    say(f"[scale] generating the corpus up to {size} chunks ...")
    commit = grown_commit(pool, plan, size, previous)
    point_main(commit)
    tmp = WORK / f".tmp-data-{size}"
    if previous:
        linked_copy(data_dir(previous), tmp)
        (tmp / "scale-build.json").unlink()
    else:
        shutil.rmtree(tmp, ignore_errors=True)
        source = SourceConfig(name=SOURCE, location=str(BARE), branch="main")
        save_config(DataDir(tmp), Config(settings=Settings(), sources=[source]))
    say(f"[scale] indexing {size} chunks ...")
    started = time.monotonic()
    report = index_sources(DataDir(tmp), load_config(DataDir(tmp)), embedder=embedder)
    took = time.monotonic() - started
    manifest = load_manifest(DataDir(tmp), report.version)
    build = Build(
        size=size,
        grown_from=previous,
        chunks=manifest.chunks,
        windows=manifest.windows,
        pages=manifest.sources[SOURCE].files,
        segments=len(manifest.segments),
        build_s=round(took, 1),
        commit=commit,
    )
    (tmp / "scale-build.json").write_bytes(msgspec.json.encode(build))
    shutil.rmtree(data_dir(size), ignore_errors=True)
    tmp.rename(data_dir(size))
    say(f"[scale] {size}: {build.chunks} chunks, {build.segments} segments in {took:.0f} s")
    return build


# --- measuring one size -----------------------------------------------------------------


class Measured(msgspec.Struct):
    build: Build
    bytes: dict[str, int]  # by kind of file, of the files the version names
    load_s: list[float]  # a version opened and warmed, in process, files in the page cache
    query_ms: list[float]  # Engine.search, in process, the real query model
    stage_ms: dict[str, float]  # p50 of each part of a query
    serve_ready_s: float  # `docdex serve` start to serving the version
    server_rss_mb: float  # after SERVER_QUERIES /api/search queries
    push_s: list[float]  # `docdex index` run after a push of PUSH_PAGES changed pages
    push_wall_s: list[float]  # the same, the whole process (start-up and model load too)
    load_cpu_s: list[float] = []  # CPU time of the loads (every thread of the process)
    query_cpu_ms: list[float] = []  # CPU time of each search
    stage_cpu_ms: dict[str, float] = {}  # p50 CPU time of each part of a query
    push_cpu_s: list[float] = []  # CPU time of each `docdex index` process (every thread)
    swap_s: list[float] = []  # each pushed version opened beside the one before (adr/0028)
    swap_cpu_s: list[float] = []  # CPU time of the same
    query_one_thread_ms: list[float] = []  # Engine.search with no helper thread (adr/0029)
    query_one_thread_cpu_ms: list[float] = []


def version_bytes(data: DataDir) -> dict[str, int]:
    manifest = load_manifest(data, current_version(data))
    out: dict[str, int] = {}
    for ref in manifest.segments:
        for entry in os.scandir(data.segment(ref.id)):
            kind = entry.name.split(".")[0]
            out[kind] = out.get(kind, 0) + entry.stat().st_size
    text = data.text_index(manifest.text_index)
    out["text"] = sum(e.stat().st_size for e in os.scandir(text) if e.is_file())
    out["pages"] = sum(
        data.pages_file(s.pages_file).stat().st_size for s in manifest.sources.values()
    )
    out["manifest"] = data.manifest(manifest.version).stat().st_size
    out["total"] = sum(out.values())
    return out


def scale_queries() -> list[str]:
    """Real queries of the shipped eval sets (their corpora's text is in the scale corpus)."""
    rows = [r for corpus in ("rustc", "apm", "msmarco") for r in eval_queries(corpus)]
    return [r["query"] for r in random.Random(5).sample(rows, QUERIES)]


class Clock:
    """Wall and CPU time (this process, every thread) of what runs inside it, appended to
    two lists: on a machine shared with other jobs, CPU time is what the work costs and
    wall time what it took."""

    def __init__(self, wall: list[float], cpu: list[float]) -> None:
        self.wall, self.cpu = wall, cpu

    def __enter__(self) -> None:
        self._wall, self._cpu = time.perf_counter(), time.process_time()

    def __exit__(self, *exc: object) -> None:
        self.wall.append(time.perf_counter() - self._wall)
        self.cpu.append(time.process_time() - self._cpu)


def in_process(data: DataDir, embedder: Embedder, queries: list[str]) -> dict:
    """Version loads, then every query once through `search`, then the parts of each."""
    from docdex.server.boot import engine_loader
    from docdex.server.engine import DEFAULT_SETTINGS

    version = current_version(data)
    loads, load_cpu = [], []
    for _ in range(LOADS):
        with Clock(loads, load_cpu):  # what `docdex serve` runs at a start: open, warm
            engine = engine_loader(data, embedder)(version)
        if len(loads) < LOADS:
            engine.close()
            del engine
    stages = load_parts(data, embedder)
    for query in queries[:5]:  # warm-up: the first searches of a version page its files in
        engine.search(query)
    one_thread = engine.with_settings(msgspec.structs.replace(DEFAULT_SETTINGS, helpers=0))
    times, cpu, single, single_cpu = [], [], [], []
    parts = {k: ([], []) for k in ("embed", "bm25", "dense")}
    for n, query in enumerate(queries):
        # Beside the same search on one thread (adr/0029), each first every other query: a
        # query's first search analyses its candidates' headings, the second finds them kept.
        runs = [(times, cpu, engine), (single, single_cpu, one_thread)]
        for wall, used, searcher in runs if n % 2 == 0 else runs[::-1]:
            with Clock(wall, used):
                searcher.search(query)
        took = time_stages(engine, query)
        for name, (wall_s, cpu_s) in msgspec.structs.asdict(took).items():
            parts[name][0].append(wall_s)
            parts[name][1].append(cpu_s)
    stages |= {k: round(median(wall) * 1000, 2) for k, (wall, _cpu) in parts.items()}
    stage_cpu = {k: round(median(c) * 1000, 2) for k, (_wall, c) in parts.items()}
    segments = engine.index.segments()
    stage_cpu["dense_per_segment"] = round(stage_cpu["dense"] / max(1, len(segments)), 3)
    stages["segments"] = len(segments)
    stages["hnsw_segments"] = sum(1 for s in segments if not s.exact)
    engine.close()
    one_thread_ms, one_thread_cpu = single, single_cpu
    return {
        "load_s": loads,
        "load_cpu_s": load_cpu,
        "query_ms": [t * 1000 for t in times],
        "query_cpu_ms": [t * 1000 for t in cpu],
        "query_one_thread_ms": [t * 1000 for t in one_thread_ms],
        "query_one_thread_cpu_ms": [t * 1000 for t in one_thread_cpu],
        "stage_ms": stages,
        "stage_cpu_ms": stage_cpu,
    }


LOAD_PARTS = {  # function name in server/engine/loaded.py -> what it is
    "_load_segment": "load_segments_ms",  # chunk-record offsets, owners, live masks
    "_load_hnsw": "load_hnsw_ms",
    "_page_tables": "load_pages_ms",
    "_open_text_index": "load_text_ms",
    "warm": "warm_ms",  # the graphs (loaded at first use) and one search
}


def load_parts(data: DataDir, embedder: Embedder) -> dict[str, float]:
    """Where one more version load spends its time (cProfile, cumulative per function)."""
    import cProfile
    import pstats

    from docdex.server.boot import engine_loader

    profile = cProfile.Profile()
    engine = profile.runcall(engine_loader(data, embedder), current_version(data))
    engine.close()
    stats = pstats.Stats(profile).stats
    out = {label: 0.0 for label in LOAD_PARTS.values()}
    for (_file, _line, name), (_cc, _nc, _tt, cumulative, _callers) in stats.items():
        if name in LOAD_PARTS:
            out[LOAD_PARTS[name]] += round(cumulative * 1000, 1)
    return out


def served(data: Path, queries: list[str]) -> tuple[float, float]:
    """(seconds to serving, RSS in MB after the queries) of a real `docdex serve`."""
    with ServeProcess(data, WORK / "serve.log") as server:
        server.wait_serving(timeout=900)
        ready = time.monotonic() - server.started
        for query in queries[:SERVER_QUERIES]:
            server.api_search(query)
        return ready, server.rss_mb()


def pushes(pool: list[tuple[str, str]], plan: Plan, data: Path, build: Build) -> dict:
    """PUSHES pushes of PUSH_PAGES changed pages each, every one indexed by `docdex index`."""
    head = build.commit  # each push on the one before (main may be moved by a build)
    rng = random.Random(build.size)
    took, wall, cpu = [], [], []
    for push in range(PUSHES):
        numbers = rng.sample(range(plan.pages(build.size)), PUSH_PAGES)
        edit = f"\n## Edit {push}\n\nPush {push} changed this page: {time.time_ns()}.\n"
        files = ((page_path(n), page_text(pool, n) + edit) for n in numbers)
        head = fast_import(files, f"push {push}", head)
        started, cpu_before = time.monotonic(), children_cpu()
        report = docdex(data, "index")
        wall.append(time.monotonic() - started)
        cpu.append(children_cpu() - cpu_before)
        took.append(report["took_s"])
    return {"push_s": took, "push_wall_s": wall, "push_cpu_s": cpu}


def swaps(data: Path, embedder: Embedder) -> dict:
    """The versions the pushes left on disk, opened in order, each beside the one before
    (adr/0028), as `docdex serve` takes them: the oldest cold, the others timed."""
    from docdex.server.boot import engine_loader

    load = engine_loader(DataDir(data), embedder)
    first, *later = list_versions(DataDir(data))
    serving = load(first)
    wall, cpu = [], []
    for version in later:
        with Clock(wall, cpu):
            pushed = load(version)
        serving.close()
        serving = pushed
    serving.close()
    return {"swap_s": wall, "swap_cpu_s": cpu}


def measure(pool, plan, build: Build, embedder: Embedder, queries: list[str]) -> Measured:
    cached = data_dir(build.size) / "scale-measured.json"
    if cached.exists():  # measured; parts measured before CPU times were, again
        old = msgspec.json.decode(cached.read_bytes(), type=Measured)
        if not old.query_one_thread_ms:
            old = remeasure(old, in_process(DataDir(data_dir(build.size)), embedder, queries))
        if not old.swap_cpu_s or not old.push_cpu_s:
            with scratch_copy(build.size) as scratch:
                pushed = pushes(pool, plan, scratch, build)  # and the versions to swap in
                found = swaps(scratch, embedder)
                old = remeasure(old, found if old.push_cpu_s else pushed | found)
        return old
    with scratch_copy(build.size) as scratch:
        say(f"[scale] {build.size}: loads and queries in process ...")
        found = in_process(DataDir(scratch), embedder, queries)
        say(f"[scale] {build.size}: docdex serve ...")
        ready, rss = served(scratch, queries)
        say(f"[scale] {build.size}: small pushes ...")
        pushed = pushes(pool, plan, scratch, build) | swaps(scratch, embedder)
    result = Measured(
        build=build,
        bytes=version_bytes(DataDir(data_dir(build.size))),
        serve_ready_s=round(ready, 2),
        server_rss_mb=round(rss, 1),
        **found,
        **pushed,
    )
    cached.write_bytes(msgspec.json.encode(result))
    return result


@contextlib.contextmanager
def scratch_copy(size: int) -> Iterator[Path]:
    """A hard-linked copy of a size's data directory to serve and push into, then gone."""
    scratch = WORK / f"scratch-{size}"
    linked_copy(data_dir(size), scratch)
    try:
        yield scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def remeasure(old: Measured, found: dict) -> Measured:
    result = msgspec.structs.replace(old, **found)
    (data_dir(old.build.size) / "scale-measured.json").write_bytes(msgspec.json.encode(result))
    return result


# --- the figures, the table, the plot ---------------------------------------------------


def bench_scale(sizes: tuple[int, ...] = SIZES) -> list[Figure]:
    builds = build_sizes(sizes)
    try:
        rows = measure_sizes(builds)
    finally:
        point_main(builds[-1].commit)
    return report(rows)


def measure_sizes(builds: list[Build]) -> list[Measured]:
    from docdex.server.query_model import load_query_model

    pool = section_pool()
    plan = load_plan(pool)
    queries = scale_queries()
    embedder = load_query_model(DataDir(data_dir(builds[0].size)))
    return [measure(pool, plan, b, embedder, queries) for b in builds]


def report(rows: list[Measured]) -> list[Figure]:
    """Figures, summary (the table of docs/benchmarks.md) and, for the whole curve, the plot
    in docs/img; the measured rows stay in the bench cache."""
    figures = scale_figures(rows)
    write_results("scale", figures, {"rows": msgspec.to_builtins(rows)})
    if len(rows) > 1:
        plot(rows)
    return figures


def bench_scale_quick() -> list[Figure]:
    """50k alone: the bench end to end, without the hours of the larger sizes. It keeps no
    summary: its measurement, cached, is the 50k column of the next `scale` report."""
    return scale_figures(measure_sizes(build_sizes(QUICK_SIZES)))


def summary(row: Measured, smallest: Measured) -> dict[str, float]:
    """The figures of one size (FIGURES' keys); `smallest` is the size a push is compared
    with."""
    q, cpu = row.query_ms, row.query_cpu_ms or row.query_ms
    loads = row.load_cpu_s or row.load_s
    push_cpu = median(row.push_cpu_s or row.push_s)
    stages = row.stage_cpu_ms
    values = {
        "chunks": row.build.chunks,
        "windows": row.build.windows,
        "pages": row.build.pages,
        "segments": row.build.segments,
        "gb": row.bytes["total"] / 1e9,
        **{f"{kind}_mb": row.bytes.get(kind, 0) / 1e6 for kind in BYTE_KINDS},
        "build_s": row.build.build_s,
        "load_s": median(row.load_s[1:] or row.load_s),
        "load_cpu_s": median(loads[1:] or loads),
        "swap_cpu_s": median(row.swap_cpu_s or [float("nan")]),
        "swap_s": median(row.swap_s or [float("nan")]),
        "p50_ms": median(q),
        "p99_ms": percentile(q, 0.99),
        "p50_cpu_ms": median(cpu),
        "p99_cpu_ms": percentile(cpu, 0.99),
        "p50_one_thread_ms": median(row.query_one_thread_ms or q),
        "p50_one_thread_cpu_ms": median(row.query_one_thread_cpu_ms or cpu),
        **{f"{part}_cpu_ms": stages.get(part, float("nan")) for part in QUERY_PARTS},
        "rss_mb": row.server_rss_mb,
        "ready_s": row.serve_ready_s,
        "push_s": median(row.push_s),
        "push_process_s": median(row.push_wall_s),
        "push_cpu_s": push_cpu,
        "push_ratio": push_cpu / median(smallest.push_cpu_s or smallest.push_s),
    }
    values["cores_ratio"] = values["p50_ms"] / values["p50_one_thread_ms"]
    return values


BYTE_KINDS = ("hnsw", "vectors", "chunks", "text", "pages")  # version_bytes' kinds
QUERY_PARTS = ("embed", "bm25", "dense", "dense_per_segment")  # in_process's stages


AT = 1_000_000
LIMITS = {  # summary key -> the line it must stay within at AT chunks
    "load_cpu_s": 2.0,
    "swap_cpu_s": 2.0,
    "p50_ms": 30.0,  # in process, on every core (adr/0029)
    "rss_mb": 1536.0,
    "push_ratio": 2.0,  # a small push's CPU time against the smallest size's
}
# Projected on the plot; wall times on a shared machine are not.
PROJECTED = {"gb", "rss_mb", "push_cpu_s", *LIMITS}


def projected(rows: list[Measured], key: str) -> float:
    """The value at AT chunks of a line through the measured sizes (Theil-Sen)."""
    points = [summary(r, rows[0]) for r in rows]
    intercept, slope = theil_sen([p["chunks"] for p in points], [p[key] for p in points])
    return intercept + slope * AT


FIGURES = (  # summary key, figure name, unit, decimals: one row of the table, a column a size
    ("chunks", "chunks", "", 0),
    ("windows", "windows", "", 0),
    ("pages", "pages", "", 0),
    ("segments", "segments", "", 0),
    ("gb", "index on disk", "GB", 2),
    ("hnsw_mb", "of which HNSW graphs", "MB", 0),
    ("vectors_mb", "of which vectors", "MB", 0),
    ("chunks_mb", "of which chunk records", "MB", 0),
    ("text_mb", "of which text index", "MB", 0),
    ("pages_mb", "of which page tables", "MB", 0),
    ("build_s", "build (grow) run", "s", 1),
    ("load_s", "version load, wall", "s", 2),
    ("load_cpu_s", "version load, CPU", "s", 2),
    ("swap_cpu_s", "version swap after a small push, CPU", "s", 2),
    ("swap_s", "version swap after a small push, wall", "s", 2),
    ("p50_ms", "query p50 (in process, wall)", "ms", 1),
    ("p99_ms", "query p99 (in process, wall)", "ms", 1),
    ("p50_cpu_ms", "query p50, CPU", "ms", 1),
    ("p99_cpu_ms", "query p99, CPU", "ms", 1),
    ("p50_one_thread_ms", "query p50, one thread, wall", "ms", 1),
    ("p50_one_thread_cpu_ms", "query p50, one thread, CPU", "ms", 1),
    ("cores_ratio", "query p50, wall: every core / one thread", "x", 2),
    ("embed_cpu_ms", "query part p50, CPU: embedding", "ms", 1),
    ("bm25_cpu_ms", "query part p50, CPU: BM25", "ms", 1),
    ("dense_cpu_ms", "query part p50, CPU: dense", "ms", 1),
    ("dense_per_segment_cpu_ms", "query part p50, CPU: dense, per segment", "ms", 2),
    ("rss_mb", "server RSS after queries", "MB", 0),
    ("ready_s", "`docdex serve` start to serving", "s", 1),
    ("push_s", "small push, index run", "s", 2),
    ("push_process_s", "small push, whole `docdex index` process", "s", 1),
    ("push_cpu_s", "small push, CPU", "s", 2),
    ("push_ratio", "small push, CPU / at the smallest size", "x", 2),
)


def scale_figures(rows: list[Measured]) -> list[Figure]:
    """A group of figures a size; at AT chunks (or, short of it, projected there from two
    sizes or more) the figures of LIMITS carry their targets."""
    figures = []
    for row in rows:
        at_limit = row.build.chunks >= AT * 0.95
        figures += size_figures(f"scale {row.build.size // 1000}k", summary(row, rows[0]), at_limit)
    if len(rows) > 1 and not any(r.build.chunks >= AT * 0.95 for r in rows):
        points = {key: projected(rows, key) for key in LIMITS}
        group = f"scale projected to {AT // 1000}k ({len(rows)} sizes)"
        figures += size_figures(group, points, True)
    return figures


def size_figures(group: str, values: dict[str, float], at_limit: bool) -> list[Figure]:
    figures = []
    for key, name, unit, decimals in FIGURES:
        if key not in values:
            continue
        value = round(values[key], decimals) if decimals else round(values[key])
        limit = LIMITS.get(key) if at_limit else None
        if limit is None:
            figures.append(Figure(group, name, value, unit))
        else:
            target = f"<= {limit:g} at {AT // 1_000_000}M"
            figures.append(Figure(group, name, value, unit, target, values[key] <= limit))
    return figures


def plot(rows: list[Measured]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = [summary(r, rows[0]) for r in rows]
    x = [p["chunks"] / 1e6 for p in points]
    panels = [
        ("index on disk (GB)", [("total", "gb")], None),
        ("server RSS (MB)", [("after queries", "rss_mb")], 1536),
        (
            "version load (s)",
            [("cold, wall", "load_s"), ("cold, CPU", "load_cpu_s"), ("swap, CPU", "swap_cpu_s")],
            2,
        ),
        (
            "query, in process (ms)",
            [("p50 wall", "p50_ms"), ("CPU", "p50_cpu_ms"), ("one thread", "p50_one_thread_ms")],
            30,
        ),
        (
            "small push (s)",
            [("CPU", "push_cpu_s"), ("index run, wall", "push_s")],
            2 * points[0]["push_cpu_s"],
        ),
    ]
    fig, axes = plt.subplots(1, len(panels), figsize=(18, 3.8))
    for ax, (title, series, target) in zip(axes, panels, strict=True):
        for label, key in series:
            line = ax.plot(x, [p[key] for p in points], marker="o", label=label)[0]
            if x[-1] < AT / 1e6 and len(rows) > 1 and key in PROJECTED:
                ax.plot(
                    [x[-1], AT / 1e6],
                    [points[-1][key], projected(rows, key)],
                    linestyle=":",
                    color=line.get_color(),
                )
        if target is not None:
            ax.axhline(target, color="tab:red", linestyle="--", linewidth=1, label="target at 1M")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("million chunks (dotted: projected, CPU)")
        ax.set_xlim(0, AT / 1e6 * 1.05)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    PLOT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(PLOT, dpi=110)
    plt.close(fig)


def main(argv: list[str]) -> None:
    """`build SIZE...` (grow through these sizes), `measure SIZE`, `report` (the figures,
    summary and plot of every measured size): the steps of `bench_scale`, run apart."""
    from .__main__ import print_table

    command, *args = argv
    if command == "build":
        build_sizes(tuple(int(a) for a in args))
    elif command == "measure":
        measure_sizes([b for b in [load_build(int(args[0]))] if b is not None])
    elif command == "report":
        found = WORK.glob("data-*/scale-measured.json")
        rows = [msgspec.json.decode(p.read_bytes(), type=Measured) for p in found]
        rows.sort(key=lambda r: r.build.size)
        print_table(report(rows))


if __name__ == "__main__":
    main(sys.argv[1:])
