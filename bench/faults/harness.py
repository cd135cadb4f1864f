"""What the fault scenarios share: a small real corpus, a bounded query client against a
`docdex serve` on 127.0.0.1, the CLI, verification, and the one comparison of two indexes."""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import msgspec
import numpy as np
import tantivy

from docdex.demo import shipped_docs
from docdex.index_format.config import Config, Settings, SourceConfig, save_config
from docdex.index_format.layout import DataDir, IndexFormatError
from docdex.index_format.store import load_current, load_pages, load_segment
from docdex.serverproc import ServeProcess

from .rows import Row
from bench.common import bench_git, percentile, work_repo

QUERIES = [
    "how is a version published atomically",
    "post-receive hook queue worker",
    "segment compaction tombstones",
    "kill -9 crash recovery",
    "search_docs max_chars budget",
    "page table chunk refs",
    "tantivy text index copy-on-write",
    "garbage collection keep_versions",
]


def docs_corpus(max_bytes: int, max_file_bytes: int = 24_000) -> dict[str, bytes]:
    """Markdown that ships with docdex (a real, varied corpus), files of at most
    `max_file_bytes`, in path order, until `max_bytes` in all: small enough that a run from
    scratch embeds in seconds."""
    out: dict[str, bytes] = {}
    total = 0
    for path, content in sorted(shipped_docs().items()):
        if len(content) > max_file_bytes or total + len(content) > max_bytes:
            continue
        out[path] = content
        total += len(content)
    return out


def pushed_docs(where: Path, corpus_bytes: int) -> tuple[Path, Path]:
    """(clone, bare): a bare repository (where/origin.git) whose first push holds
    docs_corpus(corpus_bytes), and the clone it came from."""
    clone = work_repo(where, docs_corpus(corpus_bytes))
    bench_git(clone, "push", "-q", "origin", "main")
    return clone, where / "origin.git"


def hook_installed(data: DataDir, bare: Path) -> None:
    """`docdex hook install BARE --source docs`: pushes to `bare` are indexed into `data`."""
    done = docdex_cli(data, "hook", "install", str(bare), "--source", "docs")
    if done.returncode != 0:
        raise RuntimeError(f"docdex hook install failed: {done.stderr.strip()}")


def write_config(data: DataDir, sources: dict[str, Path], **settings) -> Config:
    """A data directory indexing each bare repository of `sources` (name -> path)."""
    config = Config(
        settings=Settings(**settings),
        sources=[SourceConfig(name=n, location=str(p)) for n, p in sources.items()],
    )
    data.ensure()
    save_config(data, config)
    return config


def docdex_cli(data: DataDir, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """The real CLI in its own process; never raises on a non-zero exit."""
    return subprocess.run(
        [sys.executable, "-m", "docdex.cli", "--data", str(data.root), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


# --- the comparison ------------------------------------------------------------------------


class ChunkContent(msgspec.Struct, array_like=True):
    text: str
    start_line: int
    end_line: int
    headings: list[str]


class PageContent(msgspec.Struct):
    blob: str
    title: str
    chunks: list[ChunkContent]


class SourceContent(msgspec.Struct):
    commit: str
    pages: dict[str, PageContent]  # path -> page


class IndexContent(msgspec.Struct):
    sources: dict[str, SourceContent]
    text_docs: int  # documents the version's Tantivy index holds
    live_chunks: int  # what the manifest says


def index_content(data: DataDir) -> IndexContent | None:
    """What the current version holds, read through the store API: per source its commit
    and pages, per page its blob, title and chunks (text, line span, breadcrumb), and the
    text index's document count. None when nothing is published."""
    manifest = load_current(data)
    if manifest is None:
        return None
    chunk_lists: dict[str, list] = {}
    sources = {}
    for name, state in manifest.sources.items():
        pages = {}
        for page in load_pages(data, state.pages_file) if state.pages_file else []:
            chunks = []
            for ref in page.chunks:
                if ref.segment not in chunk_lists:
                    segment = load_segment(data, ref.segment, manifest.embedder.dim)
                    chunk_lists[ref.segment] = segment.chunks[:]
                c = chunk_lists[ref.segment][ref.index]
                chunks.append(ChunkContent(c.text, c.start_line, c.end_line, list(c.headings)))
            pages[page.path] = PageContent(page.blob, page.title, chunks)
        sources[name] = SourceContent(state.commit, pages)
    text = tantivy.Index.open(str(data.text_index(manifest.text_index)))
    text.reload()
    return IndexContent(sources, text.searcher().num_docs, manifest.chunks)


def index_differences(
    left: IndexContent | None, right: IndexContent | None, limit: int = 5
) -> list[str]:
    """How two indexes (index_content of each) differ in what a reader gets: the same
    sources at the same commits, the same pages (blob, title), the same chunks (text, line
    span, breadcrumb) in the same order, and a text index holding one document per live
    chunk. Empty when they are equal; at most `limit` sentences otherwise."""
    if left is None or right is None:
        return [] if left == right else ["only one of the two has a published version"]
    out = []
    for name in sorted(left.sources.keys() | right.sources.keys()):
        x, y = left.sources.get(name), right.sources.get(name)
        if x is None or y is None:
            out.append(f"source {name} is in only one index")
            continue
        if x.commit != y.commit:
            out.append(f"source {name}: commit {x.commit[:12]} vs {y.commit[:12]}")
        for path in sorted(x.pages.keys() | y.pages.keys()):
            if x.pages.get(path) != y.pages.get(path):
                out.append(f"{name}:{path} differs (or is in only one index)")
    for index in (left, right):
        if index.text_docs != index.live_chunks:
            out.append(f"text index holds {index.text_docs} docs for {index.live_chunks} chunks")
    if left.live_chunks != right.live_chunks:
        out.append(f"live chunks {left.live_chunks} vs {right.live_chunks}")
    return out[:limit]


# --- verification --------------------------------------------------------------------------


def verify_problems(data: DataDir, version: int) -> list[str] | None:
    """`docdex verify`'s findings for one version, as sentences; None when this checkout has
    no verifier (docdex.index_format.verify) yet."""
    try:
        from docdex.index_format.verify import verify_version
    except ImportError:
        return None
    try:
        problems = verify_version(data.root, version)
    except (IndexFormatError, OSError) as exc:
        return [f"verify could not read version {version}: {exc}"]
    return [f"{p.file}: {p.kind}: {p.detail}" for p in problems]


# --- a query client ------------------------------------------------------------------------


class QueryLoad:
    """/api/search at a bounded rate from a thread, against a server on 127.0.0.1: counts
    failed requests (anything but 200), keeps latencies with their times and the versions
    the answers came from. Bounded: it stops at `stop()` or after `max_s` seconds."""

    def __init__(self, server: ServeProcess, rate: float = 10.0, max_s: float = 3600) -> None:
        self.server, self.period, self.max_s = server, 1.0 / rate, max_s
        self.requests = 0
        self.failures: list[str] = []
        self.samples: list[tuple[float, float]] = []  # (seconds since start, latency s)
        self.versions: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self.started = time.monotonic()

    def __enter__(self) -> QueryLoad:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=60)

    def _loop(self) -> None:
        deadline = self.started + self.max_s
        n = 0
        while not self._stop.is_set() and time.monotonic() < deadline:
            tick = time.monotonic()
            query = QUERIES[n % len(QUERIES)]
            status, body = self.server.get("/api/search", {"q": query, "n": 5})
            latency = time.monotonic() - tick
            self.requests += 1
            n += 1
            if status != 200 or body is None:
                self.failures.append(f"{status} at {tick - self.started:.1f} s")
            else:
                self.samples.append((tick - self.started, latency))
                self.versions.add(body["index_version"])
            self._stop.wait(max(0.0, self.period - latency))

    def p99_ms(self) -> float:
        return round(percentile([s for _t, s in self.samples], 0.99) * 1000, 1)

    def row(self, scenario: str, lost: int = 0, notes: str = "", **figures: float) -> Row:
        """The row of this client's requests: failed ones (and `lost`) count as lost."""
        rate = round(1 / self.period)
        return Row(
            scenario,
            f"queries during all of the above ({rate}/s, /api/search)",
            self.requests,
            len(self.failures) + lost,
            figures={"failed requests": len(self.failures), **figures, "p99 ms": self.p99_ms()},
            notes=notes,
        )


# --- indexes built from scratch, to compare with ----------------------------------------------


class CachingEmbedder:
    """The real embedder, remembering the vector of each window it embedded: a reference
    index built from scratch at every commit then embeds only the text it never saw (the
    model is deterministic, and the comparison reads no vectors anyway)."""

    def __init__(self, embedder) -> None:
        self._embedder = embedder
        self._seen: dict[tuple[int, ...], np.ndarray] = {}

    def __getattr__(self, name: str):
        return getattr(self._embedder, name)

    def embed_texts(self, texts: list[str], progress=None) -> tuple[np.ndarray, np.ndarray]:
        windows, owners = self._embedder.token_windows(texts)
        return self.embed_windows(windows, progress), owners

    def embed_windows(self, windows: list[list[int]], progress=None) -> np.ndarray:
        missing = list(dict.fromkeys(tuple(w) for w in windows if tuple(w) not in self._seen))
        if missing:
            vectors = self._embedder.embed_windows([list(w) for w in missing])
            self._seen.update(zip(missing, vectors, strict=True))
        out = np.empty((len(windows), self._embedder.info.dim), dtype=np.float32)
        for row, window in enumerate(windows):
            out[row] = self._seen[tuple(window)]
        return out


class References:
    """Per commit of one bare repository, what an index built from scratch holds (a new
    data directory, one run, with this process's model), built once per commit."""

    def __init__(self, work: Path, bare: Path, settings: dict) -> None:
        from docdex.indexer.run.passage_model import load_passage_model

        self.work, self.bare, self.settings = work, bare, settings
        self.embedder = CachingEmbedder(load_passage_model(Settings(**settings)))
        self.built: dict[str, IndexContent | None] = {}

    def at(self, commit: str) -> IndexContent | None:
        """The from-scratch content at `commit` (the bare repository's main is moved there
        in a scratch clone, so the repository itself is left alone)."""
        if commit not in self.built:
            from docdex.indexer.run.pipeline import index_sources

            where = self.work / f"ref-{len(self.built)}"
            repo = where / "repo.git"
            subprocess.run(
                ["git", "clone", "-q", "--bare", "--no-tags", str(self.bare), str(repo)],
                check=True,
                capture_output=True,
            )
            subprocess.run(
                ["git", "update-ref", "refs/heads/main", commit],
                cwd=repo,
                check=True,
                capture_output=True,
            )
            data = DataDir(where / "data")
            config = write_config(data, {"docs": repo}, **self.settings)
            index_sources(data, config, embedder=self.embedder)
            self.built[commit] = index_content(data)
            shutil.rmtree(where, ignore_errors=True)
        return self.built[commit]
