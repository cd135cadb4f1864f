"""Several refs per source (adr/0017) on rustc-dev-guide: what each additional ref costs.

The corpus's branch PUSHES commits before its head is indexed as the source's default ref
(vectors seeded from the bench cache's rustc index when there is one: set-up, not
measured). Then TAGS annotated tags spread over the history before that commit (the last
one on it) are created one at a time, oldest first, each followed by one indexing run in
this process with the model loaded (as the worker's cycle runs it): its seconds, the bytes
the published version grew by, the chunks it embedded and reused, and the seconds its runs
spent parsing pages and dating them. Last, the last PUSHES commits are pushed to the branch
and indexed twice each, interleaved: into that data directory (1 + TAGS refs) and into a
copy of it taken before the tags, whose source has no `refs`: what the refs add to a push.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import msgspec

from docdex.index_format.config import Config, SourceConfig, save_config
from docdex.index_format.layout import DataDir
from docdex.index_format.store import directory_bytes, load_current
from docdex.indexer.run.pipeline import index_sources
from docdex.indexer.run.report import RunReport
from docdex.indexer.run.source_run import page_records
from docdex.indexer.sources import commit_changes
from docdex.model.embedder import Embedder

from .indexing import corpus_index
from bench.common import (
    CORPORA,
    Figure,
    bench_git,
    first_parent_commits,
    fresh_bare,
    git,
    median,
    say,
    seed_index,
    source_repo,
    write_results,
)

CORPUS = "rustc"
TAGS = 10
PUSHES = 20
NAME = f"refs {CORPUS}"


def bench_refs() -> list[Figure]:
    commits = first_parent_commits(CORPUS)
    start = len(commits) - PUSHES - 1
    tagged = [commits[start * i // TAGS] for i in range(1, TAGS + 1)]
    embedder = Embedder.load()
    with tempfile.TemporaryDirectory(
        prefix="docdex-bench-refs-", ignore_cleanup_errors=True
    ) as tmp:
        root = Path(tmp)
        bare = fresh_bare(CORPUS, commits[start], root)
        data, plain = DataDir(root / "data"), DataDir(root / "plain")
        say(f"[refs] indexing {CORPUS} at {commits[start][:10]} (not measured) ...")
        default = _index_default(data, bare, embedder)
        shutil.copytree(data.root, plain.root, ignore=shutil.ignore_patterns("state"))
        configure(data, bare, ["v*"])
        per_ref = [_add_tag(data, bare, n, commit, embedder) for n, commit in enumerate(tagged, 1)]
        say(f"[refs] {PUSHES} pushes, each indexed with and without the {TAGS} tags ...")
        pushes = _pushes(data, plain, bare, commits[-PUSHES:], embedder)
    figures = _figures(default, per_ref, pushes)
    details = {"default": default, "refs": per_ref, "pushes": pushes, "tags_at": tagged}
    write_results("refs", figures, details)
    return figures


def configure(data: DataDir, bare: Path, refs: list[str]) -> Config:
    config = Config(sources=[SourceConfig(name=CORPUS, location=str(bare), refs=refs)])
    data.ensure()
    save_config(data, config)
    return config


def version_bytes(data: DataDir) -> int:
    """What the published version takes on disk: segments, text index, page tables."""
    manifest = load_current(data)
    assert manifest is not None
    tables = sum(
        data.pages_file(s.pages_file).stat().st_size
        for s in manifest.sources.values()
        if s.pages_file
    )
    text = directory_bytes(data.text_index(manifest.text_index))
    return text + tables + sum(s.bytes for s in manifest.segments)


def _index_default(data: DataDir, bare: Path, embedder: Embedder) -> dict:
    if not seed_index(data.root, corpus_index(CORPUS)):
        say("[refs] no rustc index in the bench cache to seed from: embedding everything")
    index_sources(data, configure(data, bare, []), embedder=embedder)
    state = load_current(data).sources[CORPUS]
    return {"files": state.files, "chunks": state.chunks, "bytes": version_bytes(data)}


def _add_tag(data: DataDir, bare: Path, n: int, commit: str, embedder: Embedder) -> dict:
    name = f"v{n:02d}"
    bench_git(bare, "tag", "-a", "-m", f"release {name}", name, commit)
    head = git("rev-parse", "main", cwd=bare)
    differs = len(git("diff", "--name-only", commit, head, "--", "*.md", cwd=bare).split())
    before = version_bytes(data)
    parsing, dating = _timed(page_records, "parse_page"), _timed(commit_changes, "page_dates")
    with parsing as parse_s, dating as dates_s:
        started = time.perf_counter()
        report = index_sources(data, configure(data, bare, ["v*"]), embedder=embedder)
        seconds = time.perf_counter() - started
    [source] = [s for s in report.sources if s.name == f"{CORPUS}@{name}"]
    record = {
        "tag": name,
        "commit": commit,
        "files": load_current(data).sources[source.name].files,
        "files_differing_from_main": differs,
        "seconds": round(seconds, 3),
        "parse_s": round(parse_s(), 3),
        "dates_s": round(dates_s(), 3),
        "bytes": version_bytes(data) - before,
        "embedded": source.chunks_embedded,
        "reused": source.chunks_reused,
        "compacted": report.compacted,
    }
    say(f"[refs] {name}: {msgspec.json.encode(record).decode()}")
    return record


@contextmanager
def _timed(module, function: str) -> Iterator[Callable[[], float]]:
    """Seconds spent in module.function while the block runs (the run itself unchanged)."""
    original = getattr(module, function)
    spent = [0.0]

    def timed(*args, **kwargs):
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - started

    setattr(module, function, timed)
    try:
        yield lambda: spent[0]
    finally:
        setattr(module, function, original)


def _pushes(
    data: DataDir, plain: DataDir, bare: Path, commits: list[str], embedder: Embedder
) -> list[dict]:
    src = source_repo(CORPUS)
    configs = {"refs": configure(data, bare, ["v*"]), "plain": configure(plain, bare, [])}
    dirs = {"refs": data, "plain": plain}
    records = []
    for n, commit in enumerate(commits):
        git("push", "-q", "--force", str(bare), f"{commit}:refs/heads/main", cwd=src)
        record: dict[str, object] = {"commit": commit}
        for which in ("refs", "plain") if n % 2 == 0 else ("plain", "refs"):
            started = time.perf_counter()
            report = index_sources(dirs[which], configs[which], embedder=embedder)
            record[which] = round(time.perf_counter() - started, 3)
            record[f"{which}_status"] = _status(report)
        records.append(record)
    return records


def _status(report: RunReport) -> str:
    return next(s.status for s in report.sources if s.name == CORPUS)


def _figures(default: dict, per_ref: list[dict], pushes: list[dict]) -> list[Figure]:
    def mid(key: str, records: list[dict] = per_ref) -> float:
        return round(median([float(r[key]) for r in records]), 3)

    at_main = per_ref[-1]  # the last tag names the default ref's commit
    extra = [r["refs"] - r["plain"] for r in pushes]
    figures = [
        (f"default ref: files ({CORPORA[CORPUS][1]})", default["files"], ""),
        ("default ref: chunks", default["chunks"], ""),
        ("default ref: bytes on disk", default["bytes"], "B"),
        (f"seconds per additional ref (median of {TAGS})", mid("seconds"), "s"),
        ("seconds per additional ref (max)", max(r["seconds"] for r in per_ref), "s"),
        ("of which parsing pages (median)", mid("parse_s"), "s"),
        ("of which dating pages (median)", mid("dates_s"), "s"),
        ("bytes per additional ref (median)", mid("bytes"), "B"),
        ("bytes per additional ref / default ref's bytes", mid("bytes") / default["bytes"], "x"),
        ("chunks embedded per additional ref (median)", mid("embedded"), ""),
        ("chunks reused per additional ref (median)", mid("reused"), ""),
        ("a tag at the default ref's commit: seconds", at_main["seconds"], "s"),
        ("a tag at the default ref's commit: chunks embedded", at_main["embedded"], ""),
        ("a tag at the default ref's commit: bytes", at_main["bytes"], "B"),
        (f"push to main with {TAGS} tags indexed (median of {PUSHES})", mid("refs", pushes), "s"),
        (f"push to main without refs (median of {PUSHES})", mid("plain", pushes), "s"),
        ("push with refs - push without, same commit (median)", median(extra), "s"),
    ]
    return [Figure(NAME, name, round(value, 3), unit) for name, value, unit in figures]
