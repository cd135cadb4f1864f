"""`just bench first-search`: from a push of a whole corpus to its first search.

Each corpus is pushed, at its head, into an empty bare repository with the post-receive
hook installed and `docdex serve` (with its worker) running; the bench polls /api/search
and /health and notes the seconds from the push to the first version served (any page: a
first index publishes what it has read every `partial_every_s` seconds), to the first hit
by keywords of the probe on its page (a heading of a page near the middle of the corpus,
searched with that page's path as path_prefix), to every page searchable by keywords (the
version that holds the whole corpus, keywords first), to the first hit by meaning (a hit
dense retrieval found) and to fully embedded (no chunk waits for vectors), with the
windows embedded a second over that last stretch and the worker's peak RSS. Once with the
float32 passage graph (`embedder = "minilm"`), once with the int8 one (`minilm-int8`), in
the same run; beside them the indexer of commit OLD_COMMIT (the float32 graph, one version
when all is embedded), checked out with `git worktree add` into the bench cache and run on
the same bare repository, so the ratios are measured side by side. Also timed: the
indexer's tree diff with rename detection over the corpus's last DIFF_COMMITS commits,
which a big push pays before anything is searchable.

`first-search` runs apm-docs, mkdocs-docs and PowerShell-Docs; `first-search-quick` the two
small ones; `first-search-powershell` PowerShell-Docs' keyword target alone (int8, up to the
first hit by meaning).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from docdex.hooks.installer import install_hook
from docdex.index_format.config import Config, Settings, SourceConfig, save_config
from docdex.index_format.layout import DataDir
from docdex.index_format.run_progress import read_progress
from docdex.index_format.store import load_current
from docdex.indexer.triggers.worker import worker_pid
from docdex.serverproc import ServeProcess

from bench.common import (
    CACHE,
    Figure,
    first_parent_commits,
    git,
    say,
    source_repo,
    write_results,
)

OLD_COMMIT = "fd86a70"
VARIANTS = {"float32": "minilm", "int8": "minilm-int8"}  # name -> the `embedder` setting
FULL = ["apm", "mkdocs", "powershell"]
QUICK = ["apm", "mkdocs"]
POLL_S = 0.25
WAIT_S = 7200
DIFF_COMMITS = 200
KEYWORDS_TARGET_S = 60  # PowerShell-Docs searchable by keywords within a minute of the push
SPEEDUP_TARGET = 1.7  # fully embedded (int8, keywords first) against OLD_COMMIT's float32


def bench_first_search() -> list[Figure]:
    return _bench("first-search", FULL)


def bench_first_search_quick() -> list[Figure]:
    return _bench("first-search-quick", QUICK)


def _bench(name: str, corpora: list[str]) -> list[Figure]:
    started = time.monotonic()
    figures: list[Figure] = []
    details: dict[str, dict] = {}
    CACHE.mkdir(parents=True, exist_ok=True)
    old = _old_checkout()
    for corpus in corpora:
        with tempfile.TemporaryDirectory(
            prefix=f"first-search-{corpus}-", dir=CACHE, ignore_cleanup_errors=True
        ) as tmp:
            corpus_figures, details[corpus] = _corpus(corpus, Path(tmp), old)
        figures += corpus_figures
    details["loadavg_end"] = {"1-5-15 min": list(os.getloadavg()), "cpus": os.cpu_count()}
    write_results(name, figures, details, seconds=time.monotonic() - started)
    return figures


def _corpus(corpus: str, root: Path, old: Path) -> tuple[list[Figure], dict]:
    head = first_parent_commits(corpus)[-1]
    probe = _probe(corpus, head)
    group = f"first search {corpus}"
    figures, raw = [Figure(group, "tree diff of the last 200 commits", _diff_s(corpus), "s")], {}
    for variant, embedder in VARIANTS.items():
        say(f"[first-search] {corpus}: pushing with embedder {embedder!r} ...")
        raw[variant] = times = _served_push(corpus, head, root / variant, embedder, probe)
        target = f"<= {KEYWORDS_TARGET_S}" if corpus == "powershell" and variant == "int8" else ""
        keywords_met = times["keywords_s"] <= KEYWORDS_TARGET_S if target else None
        figures += [
            Figure(
                group,
                f"{variant}: push to a keyword hit",
                times["keywords_s"],
                "s",
                target,
                keywords_met,
            ),
            *_reading_figures(group, variant, times),
            Figure(group, f"{variant}: push to a hit by meaning", times["meaning_s"], "s"),
            Figure(group, f"{variant}: push to fully embedded", times["full_s"], "s"),
            Figure(group, f"{variant}: windows/s", times["windows_per_s"], "1/s"),
            Figure(group, f"{variant}: peak RSS", times["peak_rss_mb"], "MB"),
        ]
    say(f"[first-search] {corpus}: indexing with the indexer of {OLD_COMMIT} ...")
    raw["old"] = before = _old_index(corpus, head, root / "old", old)
    speedup = round(before["full_s"] / raw["int8"]["full_s"], 2)
    figures += [
        Figure(group, f"{OLD_COMMIT} float32: index to searchable", before["full_s"], "s"),
        Figure(group, f"{OLD_COMMIT} float32: windows/s", before["windows_per_s"], "1/s"),
        Figure(group, f"{OLD_COMMIT} float32: peak RSS", before["peak_rss_mb"], "MB"),
        Figure(
            group,
            f"fully embedded, int8 over {OLD_COMMIT} float32",
            speedup,
            "x",
            f">= {SPEEDUP_TARGET}",
            speedup >= SPEEDUP_TARGET,
        ),
    ]
    return figures, {"head": head, "probe": probe._asdict(), **raw}


# --- the current code, through the hook and `docdex serve` ---------------------------------


def _served_push(
    corpus: str, head: str, root: Path, embedder: str, probe: Probe, to_the_end: bool = True
) -> dict:
    """The push and its stages' seconds; without `to_the_end`, only until a hit by meaning."""
    data = DataDir(root / "data")
    bare = _empty_bare(root)
    data.ensure()
    settings = Settings(embedder=embedder)
    save_config(data, Config(settings=settings, sources=[SourceConfig(corpus, str(bare))]))
    install_hook(data, bare, corpus)
    log = root / "serve.log"
    logs = [log, data.state / "worker.log"]  # the hook's worker's, when it took the queue
    with ServeProcess(data.root, log, worker=True) as server:
        server.wait_ready(300)
        partial: set[int] = set()  # versions seen holding part of the corpus
        stages = {
            "first_version_s": lambda: _serving(server),
            "keywords_s": lambda: _hits(server, probe),
            "all_keywords_s": lambda: _read_whole(server, partial),
            "meaning_s": lambda: _by_meaning(server, probe),
        }
        if to_the_end:
            stages["full_s"] = lambda: _fully_embedded(server)
        pushed = time.monotonic()
        git("push", "-q", str(bare), f"{head}:refs/heads/main", cwd=source_repo(corpus))
        push_s = round(time.monotonic() - pushed, 1)  # git's own transfer, the hook included
        times: dict = {"push_s": push_s, **_first_times(stages, pushed)}
        if to_the_end:
            _until(lambda: _peak_rss(logs) > 0 and read_progress(data) is None, pushed)
    _stop_worker(data)  # the one the hook started, if it outlived the server's
    times["peak_rss_mb"] = _peak_rss(logs)
    times["partial_versions_seen"] = len(partial)
    if to_the_end:
        manifest = load_current(data)
        assert manifest is not None
        embedding_s = max(times["full_s"] - times["all_keywords_s"], 1e-3)
        times.update(
            windows=manifest.windows, windows_per_s=round(manifest.windows / embedding_s, 1)
        )
    return times


def _first_times(stages: dict[str, Callable[[], bool]], pushed: float) -> dict[str, float]:
    """Seconds from `pushed` to the first poll at which each stage's predicate held."""
    times: dict[str, float] = {}
    while len(times) < len(stages):
        for name, reached in stages.items():
            if name not in times and reached():
                times[name] = round(time.monotonic() - pushed, 1)
        if time.monotonic() - pushed > WAIT_S:
            raise RuntimeError(f"nothing after {WAIT_S} s")
        time.sleep(POLL_S)
    return times


def bench_first_keywords_powershell() -> list[Figure]:
    """PowerShell-Docs' keyword target alone: the push to its first keyword hit and first
    hit by meaning with the int8 graph, without waiting for the rest of its vectors."""
    started = time.monotonic()
    corpus, group = "powershell", "first search powershell"
    head = first_parent_commits(corpus)[-1]
    probe = _probe(corpus, head)
    with tempfile.TemporaryDirectory(
        prefix="first-search-powershell-", dir=CACHE, ignore_cleanup_errors=True
    ) as tmp:
        times = _served_push(corpus, head, Path(tmp), VARIANTS["int8"], probe, to_the_end=False)
    met = times["keywords_s"] <= KEYWORDS_TARGET_S
    figures = [
        Figure(group, "tree diff of the last 200 commits", _diff_s(corpus), "s"),
        Figure(
            group,
            "int8: push to a keyword hit",
            times["keywords_s"],
            "s",
            f"<= {KEYWORDS_TARGET_S}",
            met,
        ),
        *_reading_figures(group, "int8", times),
        Figure(group, "int8: push to a hit by meaning", times["meaning_s"], "s"),
    ]
    details = {"head": head, "probe": probe._asdict(), "int8": times}
    write_results("first-search-powershell", figures, details, time.monotonic() - started)
    return figures


def _reading_figures(group: str, variant: str, times: dict) -> list[Figure]:
    """The git push's own seconds (git packs and sends the whole history; the hook only
    queues), the push to the first version served (any page: published while the corpus is
    read), and to the version holding every page, all searchable by keywords."""
    return [
        Figure(group, f"{variant}: the git push itself", times["push_s"], "s"),
        Figure(group, f"{variant}: push to a first version", times["first_version_s"], "s"),
        Figure(group, f"{variant}: push to every page by keywords", times["all_keywords_s"], "s"),
    ]


def _stop_worker(data: DataDir) -> None:
    pid = worker_pid(data)
    if pid is not None:
        os.kill(pid, signal.SIGTERM)
        _until(lambda: not Path(f"/proc/{pid}").exists(), time.monotonic())


def _until(predicate, since: float) -> float:
    while not predicate():
        if time.monotonic() - since > WAIT_S:
            raise RuntimeError(f"nothing after {WAIT_S} s")
        time.sleep(POLL_S)
    return time.monotonic()


def _results(server: ServeProcess, probe: Probe, on_its_page: bool = False) -> list[dict]:
    params = {"q": probe.query, "n": 10} | ({"path_prefix": probe.path} if on_its_page else {})
    code, answer = server.get("/api/search", params)
    return (answer or {}).get("results", []) if code == 200 else []


def _hits(server: ServeProcess, probe: Probe) -> bool:
    """The probe finds its own page (searched alone: its title may be another page's too)."""
    return any(hit["path"] == probe.path for hit in _results(server, probe, on_its_page=True))


def _by_meaning(server: ServeProcess, probe: Probe) -> bool:
    return any(hit["match"] in ("dense", "both") for hit in _results(server, probe))


def _serving(server: ServeProcess) -> bool:
    """Any version is served: the first published, whatever pages it holds."""
    return (server.health() or {}).get("index_version") is not None


def _read_whole(server: ServeProcess, partial: set[int]) -> bool:
    """The served version holds every page (no entry is being read): all by keywords. The
    versions served before, holding part of the corpus, are added to `partial`."""
    health = server.health() or {}
    sources = health.get("sources") or {}
    if any(entry.get("reading") is not None for entry in sources.values()):
        partial.add(health["index_version"])
    return bool(sources) and all(entry.get("reading") is None for entry in sources.values())


def _fully_embedded(server: ServeProcess) -> bool:
    health = server.health() or {}
    return (
        health.get("index_version") is not None
        and health.get("embedding") is None
        and (health.get("indexing") is None)
    )


_PEAK = re.compile(r"peak RSS (\d+) MB")


def _peak_rss(logs: list[Path]) -> float:
    """The largest peak RSS the worker logged for a cycle."""
    found = [
        int(m)
        for log in logs
        if log.is_file()
        for m in _PEAK.findall(log.read_text(errors="replace"))
    ]
    return float(max(found, default=0))


class Probe(NamedTuple):
    """A question whose words the corpus holds, and the page it is a heading of."""

    query: str
    path: str


def _probe(corpus: str, head: str) -> Probe:
    """A heading of a page near the middle of the corpus, and the page: a version published
    while the corpus is read holds it once about half the pages are read."""
    repo = source_repo(corpus)
    paths = sorted(
        p for p in git("ls-tree", "-r", "--name-only", head, cwd=repo).split() if p.endswith(".md")
    )
    path = paths[len(paths) // 2]
    text = git("show", f"{head}:{path}", cwd=repo)
    titles = [line.lstrip("# ").strip() for line in text.splitlines() if line.startswith("#")]
    query = next((t for t in titles if len(t.split()) >= 2), titles[0] if titles else path)
    return Probe(query, path)


def _diff_s(corpus: str) -> float:
    """The indexer's tree diff (rename detection included) over the last DIFF_COMMITS."""
    from dulwich.repo import Repo

    from docdex.indexer.git.diffs import diff_commits

    commits = first_parent_commits(corpus)
    old, new = commits[max(0, len(commits) - 1 - DIFF_COMMITS)], commits[-1]
    source = SourceConfig(corpus, str(source_repo(corpus)))
    with Repo(str(source_repo(corpus))) as repo:
        started = time.perf_counter()
        diff_commits(repo, old, new, source.include, source.exclude)
        return round(time.perf_counter() - started, 2)


def _empty_bare(root: Path) -> Path:
    bare = root / "repo.git"
    git("init", "-q", "--bare", "--initial-branch=main", str(bare))
    return bare


# --- the indexer of OLD_COMMIT --------------------------------------------------------------

_RUN_OLD = """
import importlib.util, sys
from importlib.machinery import PathFinder
root, mapping = sys.argv[1], dict(pair.split("=") for pair in sys.argv[2].split(","))
class Old:
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name in mapping:
            where = f"{root}/{mapping[name]}"
            return importlib.util.spec_from_file_location(
                name, f"{where}/__init__.py", submodule_search_locations=[where])
        parent, _, _child = name.rpartition(".")
        if parent in mapping:
            return PathFinder.find_spec(name, [f"{root}/{mapping[parent]}"])
        return None
sys.meta_path.insert(0, Old)
from docdex.cli import main
sys.exit(main(sys.argv[3:]))
"""


def _old_checkout() -> Path:
    where = CACHE / f"worktree-{OLD_COMMIT}"
    if not (where / "pyproject.toml").is_file():
        main = Path(__file__).resolve().parents[2]
        git("worktree", "add", "--detach", str(where), OLD_COMMIT, cwd=main)
    return where


def _old_mapping(old: Path) -> str:
    import tomllib

    project = tomllib.loads((old / "pyproject.toml").read_text())
    dirs = project["tool"]["setuptools"]["package-dir"]
    return ",".join(f"{name}={folder}" for name, folder in dirs.items())


def _old_index(corpus: str, head: str, root: Path, old: Path) -> dict:
    """OLD_COMMIT's `docdex index` of the corpus, timed in a process of its own."""
    root.mkdir(parents=True)
    bare = _empty_bare(root)
    git("push", "-q", str(bare), f"{head}:refs/heads/main", cwd=source_repo(corpus))
    data = root / "data"
    cli = [sys.executable, "-c", _RUN_OLD, str(old), _old_mapping(old), "--data", str(data)]
    subprocess.run([*cli, "source", "add", corpus, str(bare)], check=True, capture_output=True)
    started = time.monotonic()
    proc = subprocess.Popen([*cli, "index"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _pid, status, usage = os.wait4(proc.pid, 0)
    took = time.monotonic() - started
    if status != 0:
        raise RuntimeError(f"{OLD_COMMIT}'s index failed: {proc.stderr.read().decode()[-500:]}")
    windows = load_current(DataDir(data)).windows
    return {
        "full_s": round(took, 1),
        "windows": windows,
        "windows_per_s": round(windows / took, 1),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
    }


if __name__ == "__main__":
    from .__main__ import print_table

    print_table(bench_first_search_quick())
