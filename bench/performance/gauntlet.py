"""`just bench gauntlet`: every corpus of ../shared/corpora indexed from each history shape
a real repository comes in, then read back page by page.

Per corpus, four bare repositories of its branch: the full history; a shallow clone; a
partial clone that has its head's blobs and none of the history's (the `.git` of a
`--filter=blob:none` clone, whose checkout fetched the head's blobs in one batch); and a
partial clone missing every blob over 4 KB, head included (a mirror that leaves large files
out). They are four sources of one data directory, indexed one after the other by the real
CLI in its own process; the shapes after the first copy the first's vectors (the same
texts), so the full history's row holds the cost of embedding. For each shape:

- crashes: the run ended by a signal, printed a traceback, or printed no report;
- problems: per-file problems and source errors the run reported, in sentences;
- pages, served exactly: the pages indexed, and those whose whole text `get_document`
  serves is the file's at the head (`served_text`), read back through the answers the
  server gives; the page view is rendered for each page too (a failure counts as a crash);
- residue: titles and breadcrumb headings that still carry a dialect's markup;
- time and peak RSS of the run, and the windows it embedded.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path

import msgspec

from docdex.index_format.config import Config, SourceConfig, save_config
from docdex.index_format.layout import DataDir
from docdex.index_format.reassembly import served_text
from docdex.indexer.git.blobs import decode_markdown
from docdex.server.answers.budget import MAX_MAX_CHARS
from docdex.server.answers.docs import Docs
from docdex.server.boot import Boot, open_docs

from bench.common import (
    CACHE,
    CORPORA,
    SHARED,
    Figure,
    blobs_at_head,
    first_differing_line,
    git,
    say,
    write_results,
)
from bench.residue import MARKUP_RESIDUE

SHAPES = ("full", "shallow", "partial", "limited")
SHALLOW_DEPTH = 300  # as CI mirrors clone
BLOB_LIMIT = "4k"  # the limited clone lacks every blob larger than this
_NO_SIZE_LIMIT = 1 << 40
_QUIET_GIT = ("-c", "gc.auto=0", "-c", "advice.detachedHead=false")


class IndexRun(msgspec.Struct):
    """What one `docdex index` process did: its report's figures and its time."""

    crashed: str  # "" or why the run counts as a crash
    problems: list[str]
    windows: int
    seconds: float
    peak_rss_mb: float


class Readback(msgspec.Struct):
    pages: int
    exact: int
    residue: list[str]
    crashes: list[str]  # pages whose text or view could not be served
    differences: list[str]  # pages served with a line that differs from the file


# --- the repositories -----------------------------------------------------------------------


def _clone(root: Path, shape: str, full: Path, branch: str) -> Path:
    target = root / f"{shape}.git"
    origin = f"file://{full}"
    if shape == "partial":  # a clone's checkout fetches the head's blobs in one batch
        work = root / "checkout"
        git(
            *_QUIET_GIT,
            "clone",
            "-q",
            "--no-local",
            "--filter=blob:none",
            "-b",
            branch,
            origin,
            str(work),
        )
        (work / ".git").rename(target)
        git(f"--git-dir={target}", "config", "core.bare", "true")
        shutil.rmtree(work)
    else:
        options = (
            ["--depth", str(SHALLOW_DEPTH)]
            if shape == "shallow"
            else [f"--filter=blob:limit={BLOB_LIMIT}"]
        )
        git(
            *_QUIET_GIT,
            "clone",
            "-q",
            "--bare",
            "--no-local",
            "-b",
            branch,
            *options,
            origin,
            str(target),
        )
    if shape in ("partial", "limited"):
        git("-C", str(target), "remote", "remove", "origin")  # what is missing stays missing
    return target


def repositories(corpus: str, root: Path) -> dict[str, Path]:
    bundle, branch = CORPORA[corpus]
    full = root / "full.git"
    git("clone", "-q", "--bare", "-b", branch, str(SHARED / "corpora" / bundle), str(full))
    git("-C", str(full), "config", "uploadpack.allowFilter", "true")
    return {"full": full, **{s: _clone(root, s, full, branch) for s in SHAPES[1:]}}


def head_pages(repo: Path) -> dict[str, str]:
    """path -> the text `get_document` must serve, for each file the head has that the
    indexer decodes as a page."""
    pages = {}
    for path, data in blobs_at_head(repo).items():
        text = decode_markdown(path, data, _NO_SIZE_LIMIT)
        if isinstance(text, str):
            pages[path] = served_text(text)
    return pages


# --- one run --------------------------------------------------------------------------------


def index_once(data: Path, source: str) -> IndexRun:
    """`docdex index SOURCE --json` in a process of its own: its report, its time, and its
    peak RSS as it reports it (its own, model included)."""
    started = time.monotonic()
    command = [sys.executable, "-m", "docdex.cli", "--data", str(data), "index", source, "--json"]
    proc = subprocess.run(command, capture_output=True)
    seconds = time.monotonic() - started
    report, crashed = _report_or_crash(proc.returncode, proc.stdout, proc.stderr)
    if report is None:
        return IndexRun(crashed, [], 0, seconds, float("nan"))
    problems = []
    for entry in report["sources"]:
        problems += [f"{p['path']}: {p['problem']}" for p in entry.get("problems", [])]
        problems += [f"source {entry['name']}: {entry['error']}"] if entry.get("error") else []
    return IndexRun("", problems, report["windows_embedded"], seconds, report["peak_rss_mb"])


def _report_or_crash(status: int, stdout: bytes, stderr: bytes) -> tuple[dict | None, str]:
    """The run's report, or None and why the run counts as a crash."""
    if status < 0:
        return None, f"killed by signal {-status}"
    if b"Traceback (most recent call last)" in stderr:
        return None, "a traceback: " + stderr.decode(errors="replace").strip().splitlines()[-1]
    try:
        return msgspec.json.decode(stdout), ""
    except msgspec.DecodeError:
        return None, f"exit status {status} and no report: {stderr.decode(errors='replace')[-300:]}"


# --- reading back ---------------------------------------------------------------------------


def read_back(docs: Docs, source: str, expected: dict[str, str]) -> Readback:
    """Every page of `source` served whole (cursor after cursor) and viewed; its title and
    breadcrumbs checked for markup."""
    with docs.holder.acquire() as engine:
        index = engine.index
        pages = {k: p for k, p in index.pages.items() if p.source == source}
        headings = {
            doc_id: {page.title, *(h for c in index.page_chunks(page) for h in c.headings)}
            for doc_id, page in pages.items()
        }
    result = Readback(len(pages), 0, [], [], [])
    for doc_id, page in sorted(pages.items()):
        result.residue += [f"{doc_id}: {h}" for h in headings[doc_id] if MARKUP_RESIDUE.search(h)]
        try:
            text = whole_text(docs, doc_id)
            docs.page_view(doc_id)
        except Exception as error:  # a page the server cannot serve: the gauntlet's finding
            result.crashes.append(f"{doc_id}: {traceback.format_exception_only(error)[-1]}")
            continue
        if text == expected.get(page.path):
            result.exact += 1
        else:
            result.differences.append(
                f"{doc_id}: {_first_difference(text, expected.get(page.path))}"
            )
    return result


def whole_text(docs: Docs, doc_id: str) -> str:
    parts, cursor = [], ""
    while True:
        document = docs.get_document(doc_id, cursor=cursor, max_chars=MAX_MAX_CHARS)
        parts.append(document.text)
        if not document.next_cursor:
            return "".join(parts)
        cursor = document.next_cursor


def _first_difference(served: str, expected: str | None) -> str:
    if expected is None:
        return "no such page at the head"
    return f"line {first_differing_line(served, expected)} differs"


# --- the bench ------------------------------------------------------------------------------


def gauntlet_corpus(corpus: str, root: Path) -> list[Figure]:
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    repos = repositories(corpus, root)
    data = root / "data"
    sources = [SourceConfig(name=shape, location=str(repo)) for shape, repo in repos.items()]
    save_config(DataDir(data), Config(sources=sources))
    runs = {}
    for shape in SHAPES:
        say(f"[gauntlet] {corpus} {shape}: indexing")
        runs[shape] = index_once(data, shape)
    docs = open_docs(DataDir(data), Boot())
    figures = []
    try:
        for shape in SHAPES:
            back = read_back(docs, shape, head_pages(repos[shape]))
            figures += _figures(f"{corpus} {shape}", runs[shape], back)
            _say_findings(corpus, shape, runs[shape], back)
    finally:
        docs.holder.stop()
    return figures


def _figures(group: str, run: IndexRun, back: Readback) -> list[Figure]:
    crashes = int(bool(run.crashed)) + len(back.crashes)
    served = 100.0 * back.exact / back.pages if back.pages else float("nan")
    return [
        Figure(group, "crashes", crashes, "", "0", crashes == 0),
        Figure(group, "problems", len(run.problems), ""),
        Figure(group, "pages", back.pages, ""),
        Figure(group, "served exactly", round(served, 2), "%", "100", back.exact == back.pages),
        Figure(group, "residue", len(back.residue), "", "0", not back.residue),
        Figure(group, "time", round(run.seconds, 1), "s"),
        Figure(group, "peak RSS", round(run.peak_rss_mb), "MB"),
        Figure(group, "windows embedded", run.windows, ""),
    ]


def _say_findings(corpus: str, shape: str, run: IndexRun, back: Readback) -> None:
    say(
        f"[gauntlet] {corpus} {shape}: {back.exact}/{back.pages} pages served exactly, "
        f"{len(run.problems)} problems, {run.windows} windows, {run.seconds:.1f} s, "
        f"{run.peak_rss_mb:.0f} MB"
    )
    for line in [run.crashed, *back.crashes, *back.differences, *back.residue][:20]:
        if line:
            say(f"[gauntlet]   {line}")
    for problem in run.problems[:5]:
        say(f"[gauntlet]   problem: {problem}")


# smallest first, so that a run's first rows come in minutes
ORDER = ("mkdocs", "vite", "apm", "rustc", "rustbook", "hugo", "msmarco", "powershell")


def bench_gauntlet(corpora: list[str] | None = None) -> list[Figure]:
    chosen = corpora or [c for c in ORDER if (SHARED / "corpora" / CORPORA[c][0]).exists()]
    started = time.monotonic()
    figures = []
    for corpus in chosen:
        figures += gauntlet_corpus(corpus, CACHE / "gauntlet" / corpus)
    write_results("gauntlet", figures, {"corpora": chosen}, time.monotonic() - started)
    return figures
