"""`docdex watch`: keep the index of checkouts' working trees current as files are saved.

    watchfiles (inotify) ─ batches ─> dirty paths per source ─ quiet for a moment, or
                                      waiting too long ─> index_sources(worktree=True, dirty)

One process, the embedder loaded once. Each cycle is an ordinary indexing run (it takes
the writer lock, so a worker or a hook run waits or interleaves safely) that looks only
at the dirty paths. watchfiles can deliver one burst of writes in several batches and a
rename as delete + add, so paths collect in our own set until the tree has been quiet for
`quiet_ms` (or for at most `max_latency_ms` while events keep coming).

Events inside .git only matter when a ref moves (commit, checkout, pull): the cycle then
also re-dates the paths the new HEAD changed. If another writer indexes a watched
checkout from its branch head (`docdex index`, the worker), the next idle check sees a
state without "+worktree" and indexes the working tree again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import watchfiles

from docdex.errors import DocdexError
from docdex.index_format.config import Config, SourceConfig, SourceError, load_config, source_kind
from docdex.index_format.layout import DataDir
from docdex.index_format.store import current_version, load_current
from docdex.indexer.run.context import Dirty
from docdex.indexer.run.lock import watch_lock
from docdex.indexer.run.passage_model import load_passage_model
from docdex.indexer.run.pipeline import index_sources
from docdex.indexer.run.report import RunReport
from docdex.indexer.sources.worktree import WORKTREE_SUFFIX, is_editor_temp
from docdex.model.model_environment import UNCONFIGURED, ModelEnvironment
from docdex.model.protocol import TextEmbedder
from docdex.runtime.logs import log_event

from .threads import in_background

log = logging.getLogger("docdex.watch")

QUIET_MS = 200
MAX_LATENCY_MS = 1000
STEP_MS = 50  # watchfiles: a batch ends after this long without events
CHECK_INTERVAL_S = 2.0  # idle: how often to look whether another writer replaced our state
RETRY_AFTER_S = 2.0  # after a failed cycle


class WatchError(DocdexError):
    """Nothing can be watched (no checkout source, a named source is not a checkout)."""


class WatchBusy(WatchError):
    """Another process already follows this data directory's checkouts."""

    def __init__(self, pid: str) -> None:
        super().__init__(
            f"another docdex process (pid {pid or '?'}) already watches this data directory's "
            "checkouts"
        )


@dataclass(frozen=True)
class Watched:
    name: str
    root: Path  # resolved work tree


def watched_sources(config: Config, names: list[str] | None) -> list[Watched]:
    """The checkout sources to watch: the named ones (each must be a checkout), else all."""
    if names:
        sources = [config.source(name) for name in names]
        for source in sources:
            kind = _kind(source)
            if kind != "checkout":
                raise WatchError(
                    f"source {source.name!r} is a {kind} repository, not a checkout: watch "
                    "follows working trees (pushes reach the index through the hook)"
                )
    else:
        sources = [s for s in config.sources if _kind(s) == "checkout"]
    if not sources:
        raise WatchError(
            "no checkout source to watch; add one with `docdex source add NAME /path/to/checkout`"
        )
    return [Watched(s.name, Path(s.location).expanduser().resolve()) for s in sources]


def _kind(source: SourceConfig) -> str:
    try:
        return source_kind(source.location)
    except SourceError:
        return "missing"


# --- which events count ----------------------------------------------------------------------


def _is_ref_change(parts: tuple[str, ...]) -> bool:
    """Inside .git: HEAD, a branch ref or packed-refs was written (not a lock file)."""
    if parts[-1].endswith(".lock"):
        return False
    return parts in (("HEAD",), ("packed-refs",)) or parts[:2] == ("refs", "heads")


class EventFilter:
    """watchfiles' filter: editor temp files, the data directory and .git (but for ref
    moves) never wake the loop."""

    def __init__(self, watched: list[Watched], data_root: Path) -> None:
        self.roots = [w.root for w in watched]
        self.data_root = data_root.resolve()

    def __call__(self, _change: watchfiles.Change, raw: str) -> bool:
        path = Path(raw)
        if path == self.data_root or path.is_relative_to(self.data_root):
            return False
        if is_editor_temp(path.name):
            return False
        for root in self.roots:
            if path.is_relative_to(root):
                parts = path.relative_to(root).parts
                if ".git" in parts:
                    git_at = parts.index(".git")
                    return git_at == 0 and _is_ref_change(parts[1:])
                return True
        return False


# Rules that can change how every file below compares: which files count, and what blob
# id git's line-ending conversion gives them.
_WHOLE_TREE_FILES = (".gitignore", ".gitattributes")


@dataclass
class Pending:
    """Dirty paths collected across batches until the tree has been quiet for a while;
    None for a source means "look at everything" (its ignore or attribute rules changed)."""

    paths: Dirty = field(default_factory=dict)
    since: float | None = None  # monotonic time of the first event not yet indexed

    def add(self, watched: list[Watched], batch: set[tuple[watchfiles.Change, str]]) -> None:
        for _change, raw in batch:
            path = Path(raw)
            for w in watched:
                if path.is_relative_to(w.root):
                    self._add(w.name, path.relative_to(w.root))
        self._started()

    def _add(self, name: str, rel: Path) -> None:
        if rel.name in _WHOLE_TREE_FILES:
            self.paths[name] = None
            return
        dirty = self.paths.setdefault(name, set())
        if dirty is not None and rel.parts and rel.parts[0] != ".git":  # a ref move: no path
            dirty.add(rel.as_posix())

    def take(self) -> Dirty:
        paths, self.paths, self.since = self.paths, {}, None
        return paths

    def merge(self, paths: Dirty) -> None:
        for name, dirty in paths.items():
            if dirty is None:
                self.paths[name] = None
            else:
                self._add_all(name, dirty)
        self._started()

    def _add_all(self, name: str, dirty: set[str]) -> None:
        known = self.paths.setdefault(name, set())
        if known is not None:
            known.update(dirty)

    def _started(self) -> None:
        if self.paths and self.since is None:
            self.since = time.monotonic()


# --- the loop --------------------------------------------------------------------------------


class WatchLoop:
    def __init__(
        self,
        data: DataDir,
        names: list[str] | None = None,
        embedder: TextEmbedder | None = None,
        quiet_ms: int = QUIET_MS,
        max_latency_ms: int = MAX_LATENCY_MS,
        on_cycle: Callable[[RunReport], None] | None = None,
        model_environment: ModelEnvironment = UNCONFIGURED,
    ) -> None:
        self.data = data
        config = load_config(data)
        self.watched = watched_sources(config, names)
        self.embedder = embedder or load_passage_model(
            config.settings, config.embedder_spec(), model_environment=model_environment
        )
        self.quiet_ms = quiet_ms
        self.max_latency_s = max_latency_ms / 1000
        self.on_cycle = on_cycle
        self.pending = Pending()
        self.seen_version: int | None = None
        self.retry_at = 0.0

    def run(self, stop: threading.Event) -> None:
        """Index every watched working tree, then follow changes until `stop` is set."""
        events = watchfiles.watch(
            *[w.root for w in self.watched],
            watch_filter=EventFilter(self.watched, self.data.root),
            debounce=int(self.max_latency_s * 1000),
            step=STEP_MS,
            rust_timeout=self.quiet_ms,
            yield_on_timeout=True,
            stop_event=stop,
        )
        for w in self.watched:
            log_event(log, "watching", source=w.name, root=str(w.root))
        started = False
        next_check = 0.0
        for batch in events:
            if not started:  # the watcher is live now: whatever changed from here on is seen
                started = True
                self._cycle(None, [w.name for w in self.watched])
                continue
            self.pending.add(self.watched, batch)
            now = time.monotonic()
            if self._due(batch, now):
                self._cycle(self.pending.take())
            elif not self.pending.paths and now >= next_check:
                next_check = now + CHECK_INTERVAL_S
                try:
                    self._heal()
                except Exception as exc:  # e.g. a version this process cannot read
                    log_event(log, "check-failed", logging.WARNING, error=str(exc))
        log_event(log, "stopped", sources=[w.name for w in self.watched])

    def _due(self, batch: set, now: float) -> bool:
        if not self.pending.paths or now < self.retry_at:
            return False
        assert self.pending.since is not None
        return not batch or now - self.pending.since >= self.max_latency_s

    def _cycle(self, dirty: Dirty | None, names: list[str] | None = None) -> None:
        """One indexing run; on failure the paths wait for the next try."""
        names = names or sorted(dirty or {})
        try:
            config = load_config(self.data)
            report = index_sources(
                self.data, config, names, embedder=self.embedder, worktree=True, dirty=dirty
            )
        except Exception as exc:  # keep watching: a later cycle may succeed
            log_event(log, "cycle-failed", logging.ERROR, sources=names, error=str(exc))
            self.retry_at = time.monotonic() + RETRY_AFTER_S
            self.pending.merge(dirty or {n: set() for n in names})
            return
        self.seen_version = report.version
        if self.on_cycle:
            self.on_cycle(report)

    def _heal(self) -> None:
        """Index a working tree again if another writer replaced its state since."""
        version = current_version(self.data)
        if version is None or version == self.seen_version:
            return
        self.seen_version = version
        manifest = load_current(self.data)
        states = manifest.sources if manifest else {}
        stale = [
            w.name
            for w in self.watched
            if w.name not in states or not states[w.name].commit.endswith(WORKTREE_SUFFIX)
        ]
        if stale:
            log_event(log, "reindex-worktree", sources=stale, version=version)
            self._cycle(None, stale)


def watch(
    data: DataDir,
    names: list[str] | None = None,
    stop: threading.Event | None = None,
    **options,
) -> None:
    """Run the watch loop in this thread until `stop` is set (or KeyboardInterrupt); one
    process per data directory watches (WatchBusy otherwise). WatchError when the
    checkouts cannot be watched (e.g. past inotify's limit on watches)."""
    with watch_lock(data) as holder:
        if holder is not None:
            raise WatchBusy(holder)
        try:
            WatchLoop(data, names, **options).run(stop or threading.Event())
        except OSError as exc:
            raise WatchError(f"cannot watch: {exc} (see fs.inotify.max_user_watches)") from exc


def watching_in_background(data: DataDir, model_environment: ModelEnvironment):
    """A context manager: while its block runs (`docdex mcp --watch`), a thread indexes the
    checkouts as `watch` does, unless another process already watches them, in which case
    this process only reads."""
    return in_background(
        "docdex-watch", lambda stop: _watch_unless_watched(data, stop, model_environment), 10
    )


def _watch_unless_watched(
    data: DataDir, stop: threading.Event, model_environment: ModelEnvironment
) -> None:
    try:
        watch(data, None, stop, model_environment=model_environment)
    except WatchBusy as exc:
        log_event(log, "watch-skipped", reason=f"{exc}; this process only reads")
    except (WatchError, OSError) as exc:  # no checkout source; inotify's limit; the lock
        log_event(log, "watch-failed", logging.WARNING, error=str(exc))
