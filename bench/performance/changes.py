"""What changed in the docs, asked of their history: PowerShell-Docs (3,000 pages; its
md-linear branch, 6,471 commits, has no tags).

A bare clone of the corpus gets two lightweight tags SPAN first-parent commits apart, in the
middle of its history; two ranges are asked: between the tags, and the last SPAN commits of
the branch. The call is the one the MCP tool makes: the range's first window of pages
(DEFAULT_LIMIT), each with its commits, lines and changed sections; its answer's size is
its JSON. Each range is asked ROUNDS times as a first question two ways: of the server's
`History` (kept for the server's life, its repository open; the range not known yet: the
figure with the target), and of a new `History` (the repository opened cold: a new
process's first call). Then asked again (the range kept), and its next window.

Beside it: `changed_paths` (the search filter's call), a page's text as of the older tag,
a page's own history (its whole history walked: the page is as old as the corpus), and
`docdex changes` run as a process over the tags, every page of the range printed as JSON
(Python's start-up included).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

from docdex.history import ChangeSet, History, SourceRepository
from docdex.index_format.config import Config, SourceConfig, save_config
from docdex.index_format.layout import DataDir

from bench.common import (
    Figure,
    bench_git,
    docdex,
    first_parent_commits,
    fresh_bare,
    median,
    percentile,
    say,
    write_results,
)

CORPUS = "powershell"
SPAN = 200  # commits between the two tags, and in the last range
ROUNDS = 15
FEW = 3  # rounds of the slow figures (a page's whole history, the CLI)
TARGET_MS = 200  # p50 of a first question over SPAN commits
TAGS = ("docs-old", "docs-new")


def bench_changes() -> list[Figure]:
    commits = first_parent_commits(CORPUS)
    middle = len(commits) // 2
    tagged = {TAGS[0]: commits[middle], TAGS[1]: commits[middle + SPAN]}
    with tempfile.TemporaryDirectory(prefix="docdex-bench-changes-") as tmp:
        data, source = _clone(Path(tmp), commits[-1], tagged)
        ranges = {
            "between two tags": (TAGS[0], TAGS[1]),
            f"last {SPAN} commits": (commits[-SPAN - 1], ""),
        }
        measured = {label: _range(source, *ends) for label, ends in ranges.items()}
        page = measured["between two tags"]["first"].pages[0].path
        others = {
            "changed_paths_ms": _fresh(lambda h: h.changed_paths(source, TAGS[0], TAGS[1])),
            "page_ms": _fresh(lambda h: h.page(source, page, at=TAGS[0])),
            "page_history_ms": _fresh(lambda h: h.page_history(source, page), FEW),
            "cli_s": [_cli(data) for _ in range(FEW)],
        }
    figures = [f for label, found in measured.items() for f in _figures(label, found)]
    figures += [
        _ms("changed paths", "between two tags, p50", others["changed_paths_ms"]),
        _ms("page text", "as of a tag, p50", others["page_ms"]),
        _ms(
            "page history", f"its whole history walked, median of {FEW}", others["page_history_ms"]
        ),
        Figure(
            "docdex changes",
            f"between two tags, every page, a process (median of {FEW})",
            round(median(others["cli_s"]), 2),
            "s",
        ),
    ]
    for found in measured.values():
        del found["first"]
    write_results("changes", figures, {"tags": tagged, "page": page, **measured, **others})
    return figures


def _clone(root: Path, head: str, tags: dict[str, str]) -> tuple[DataDir, SourceRepository]:
    bare = fresh_bare(CORPUS, head, root)
    for name, commit in tags.items():
        bench_git(bare, "tag", name, commit)
    data = DataDir(root / "data")
    data.ensure()
    config = SourceConfig(name=CORPUS, location=str(bare), branch="main")
    save_config(data, Config(sources=[config]))
    return data, SourceRepository.of(data, config)


def _range(source: SourceRepository, since: str, until: str) -> dict:
    say(f"[changes] {since[:12]}..{until[:12] or 'main'}: {ROUNDS} first questions ...")
    with History(cached_ranges=0) as server:  # keeps its repository open, no range
        server.changes(source, since, until)
        first_ms = _timed(lambda: server.changes(source, since, until))
    new_process_ms = _fresh(lambda h: h.changes(source, since, until))
    with History() as kept:
        first = kept.changes(source, since, until)
        again_ms = _timed(lambda: kept.changes(source, since, until))
    next_ms = []
    for _ in range(ROUNDS):
        with History() as history:
            history.changes(source, since, until)
            next_ms += _timed(
                lambda h=history: h.changes(source, since, until, offset=len(first.pages)), 1
            )
    return {
        "first": first,
        "first_ms": first_ms,
        "new_process_ms": new_process_ms,
        "again_ms": again_ms,
        "next_window_ms": next_ms,
        "answer_chars": len(msgspec.json.encode(first)),
        "complete": first.complete,
    }


def _figures(label: str, found: dict) -> list[Figure]:
    first: ChangeSet = found["first"]
    p50 = round(median(found["first_ms"]), 1)
    return [
        Figure(label, "first question, p50", p50, "ms", f"< {TARGET_MS}", p50 < TARGET_MS),
        Figure(label, "first question, p95", round(percentile(found["first_ms"], 0.95), 1), "ms"),
        _ms(label, "first question of a new process, p50", found["new_process_ms"]),
        Figure(
            label,
            "first question of a new process, p95",
            round(percentile(found["new_process_ms"], 0.95), 1),
            "ms",
        ),
        _ms(label, "asked again, p50", found["again_ms"]),
        _ms(label, "its next window, p50", found["next_window_ms"]),
        Figure(label, "pages changed", first.total, ""),
        Figure(label, "commits", first.commits_walked, ""),
        Figure(label, f"answer: first {len(first.pages)} pages", found["answer_chars"], "chars"),
    ]


def _ms(group: str, name: str, spent: list[float]) -> Figure:
    return Figure(group, name, round(median(spent), 1), "ms")


def _fresh(call: Callable[[History], object], rounds: int = ROUNDS) -> list[float]:
    """`call` timed of a new History each round (its repository opened cold)."""
    spent = []
    for _ in range(rounds):
        with History() as history:
            spent += _timed(lambda: call(history), 1)
    return spent


def _timed(call: Callable[[], object], rounds: int = ROUNDS) -> list[float]:
    spent = []
    for _ in range(rounds):
        started = time.perf_counter()
        call()
        spent.append((time.perf_counter() - started) * 1000)
    return spent


def _cli(data: DataDir) -> float:
    started = time.perf_counter()
    answer = docdex(data.root, "changes", CORPUS, "--since", TAGS[0], "--until", TAGS[1])
    seconds = time.perf_counter() - started
    assert len(answer["pages"]) == answer["total"]
    return seconds
