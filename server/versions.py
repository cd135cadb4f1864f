"""Which index version the server answers from, and swapping it without stopping searches.

    CURRENT ──poll──> load in the background ──> swap one reference ──> old one closes when
                      (refuse what we can't serve)                      its last search ends

A search takes a lease on the version that is current when it starts (`acquire()`), so it
reads one version from start to end however many swaps happen meanwhile. A version the
server cannot serve (another format major, another embedder, missing or damaged files) is
refused: the previous version keeps serving and the refusal shows in `stats()` until
CURRENT moves on. Before a version is loaded its files are checked against the sizes and
checksums its manifest records (index-format/verify.py); at a cold start only the small
files are hashed before the first answer and the big ones right after, in the watching
thread. With nothing served yet, a refused or unreadable CURRENT falls back to the newest
intact version kept on disk.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, Protocol, TypeVar

import msgspec

from docdex.errors import DocdexError
from docdex.index_format.layout import DamagedIndex, DataDir, IndexFormatError
from docdex.index_format.store import current_version, list_versions, load_manifest
from docdex.index_format.verify import (
    CHECKSUMS_MINOR,
    NamedFile,
    Problem,
    check_files,
    describe,
    manifest_problems,
    named_files,
)
from docdex.runtime.times import iso_utc

log = logging.getLogger("docdex.server")

POLL_INTERVAL_S = 0.25
RETRY_AFTER_S = 10.0  # a load that failed for a reason other than the index format
# At a cold start, files up to this size are hashed before the first answer, bigger ones
# right after it (adr/0019); a swap hashes every file before it happens.
START_HASH_BYTES = 64 << 10


class Servable(Protocol):
    """What the holder needs of a loaded version (the server's is an `Engine`)."""

    @property
    def version(self) -> int: ...

    def close(self) -> None: ...


S = TypeVar("S", bound=Servable)


class NoVersion(DocdexError):
    """No version can be served (nothing published yet, or nothing loadable)."""


class DamagedVersion(DamagedIndex):
    """A version's files are not what its manifest records."""

    def __init__(self, version: int, problems: list[Problem]) -> None:
        super().__init__(
            f"version {version} is damaged: {describe(problems)}; "
            "`docdex index --full` publishes a repaired version"
        )
        self.problems = problems


class Refusal(msgspec.Struct, frozen=True):
    version: int | None  # None: CURRENT itself cannot be read
    error: str
    at: str  # ISO 8601 UTC


class VersionStats(msgspec.Struct, frozen=True):
    serving: int | None  # the version new searches use
    serving_since: str | None
    load_ms: float | None  # how long loading the serving version took
    swaps: int  # versions installed since start
    held_old: list[int]  # replaced versions still held by a running search
    closed: int  # replaced versions closed so far
    refused_version: Refusal | None  # the version CURRENT names, when it cannot be served
    error: str | None  # why nothing is served (when serving is None)


class _Entry(Generic[S]):
    """One loaded version and the number of searches holding it."""

    __slots__ = ("snapshot", "leases", "retired", "since", "load_ms")

    def __init__(self, snapshot: S, load_ms: float) -> None:
        self.snapshot = snapshot
        self.leases = 0
        self.retired = False
        self.since = iso_utc()
        self.load_ms = load_ms


class VersionHolder(Generic[S]):
    """The served version, swapped atomically; old versions close when no search holds them."""

    def __init__(
        self, data: DataDir, load: Callable[[int], S], poll_interval: float = POLL_INTERVAL_S
    ):
        self.data = data
        self._load = load
        self._poll_interval = poll_interval
        self._lock = threading.Lock()
        self._entry: _Entry[S] | None = None
        self._held_old: list[_Entry[S]] = []
        self._swaps = 0
        self._closed = 0
        self._refused: Refusal | None = None
        self._retry_at: dict[int, float] = {}  # version -> monotonic time to try again
        self._error: str | None = "not started"
        self._unhashed: tuple[int, list[NamedFile]] | None = None  # left from a cold start
        self._hashed: frozenset[NamedFile] = frozenset()  # checked files of the served version
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._on_swap: list[Callable[[S | None, S], None]] = []
        # what is being done about there being nothing to serve ("" = nothing): a first index
        self.explain_absence: Callable[[], str] = lambda: ""

    # --- reading ---------------------------------------------------------------------------

    @contextmanager
    def acquire(self) -> Iterator[S]:
        """Lease the current version for the duration of the `with` block."""
        with self._lock:
            entry = self._entry
            if entry is None:
                under_way = self.explain_absence()
                raise NoVersion(under_way or self._error or "no index version is loaded")
            entry.leases += 1
        try:
            yield entry.snapshot
        finally:
            self._release(entry)

    def _release(self, entry: _Entry[S]) -> None:
        with self._lock:
            entry.leases -= 1
            done = entry.retired and entry.leases == 0
            if done:
                self._held_old.remove(entry)
        if done:
            self._close(entry, "its last search ended")

    def stats(self) -> VersionStats:
        with self._lock:
            entry = self._entry
            return VersionStats(
                serving=entry.snapshot.version if entry else None,
                serving_since=entry.since if entry else None,
                load_ms=entry.load_ms if entry else None,
                swaps=self._swaps,
                held_old=[e.snapshot.version for e in self._held_old],
                closed=self._closed,
                refused_version=self._refused,
                error=None if entry else self._error,
            )

    @property
    def serving(self) -> int | None:
        entry = self._entry
        return entry.snapshot.version if entry else None

    # --- changing --------------------------------------------------------------------------

    def on_swap(self, listener: Callable[[S | None, S], None]) -> None:
        """Call `listener(old, new)` at each swap, in the swapping thread, while the old
        version is still open (None: nothing was served before)."""
        self._on_swap.append(listener)

    def swap(self, snapshot: S, load_ms: float = 0.0) -> None:
        """Serve `snapshot` from now on; the old version closes once no search holds it."""
        new: _Entry[S] = _Entry(snapshot, load_ms)
        with self._lock:
            old, self._entry = self._entry, new
            self._swaps += 1
            self._error = None
            close_now = old is not None and self._retire(old)
        previous = f" (was {old.snapshot.version})" if old else ""
        log.info("serving version %d%s, loaded in %.0f ms", snapshot.version, previous, load_ms)
        for listener in self._on_swap:
            try:
                listener(old.snapshot if old else None, snapshot)
            except Exception:  # noqa: BLE001 - a listener must not stop the swap
                log.exception("a listener of version swaps failed")
        if close_now and old is not None:
            self._close(old, "no search holds it")

    def _retire(self, entry: _Entry[S]) -> bool:
        """Under the lock: `entry` is served no more; True when no search holds it, so the
        caller closes it now, else the last search to release it does."""
        entry.retired = True
        if entry.leases:
            self._held_old.append(entry)
        return not entry.leases

    def refresh(self) -> None:
        """Follow CURRENT once: load and swap in the version it names, if it is new."""
        try:
            version = current_version(self.data)
        except IndexFormatError as exc:
            self._current_unreadable(exc)
            return
        if version is None:
            self._nothing_to_follow(self._why_no_version())
            return
        if version == self.serving:
            self._refused = None  # CURRENT came back to the served version
            return
        if time.monotonic() < self._retry_at.get(version, 0.0):
            return
        failure = self._try_load(version)
        if isinstance(failure, DamagedIndex) and self._entry is None:
            self._fall_back(below=version)

    def _try_load(self, version: int) -> Exception | None:
        """Check, load and swap in `version`; the exception that refused it, if any."""
        started = time.perf_counter()
        try:
            hashed = self._check(version)
            snapshot = self._load(version)
        except Exception as exc:  # noqa: BLE001 - any failure must leave the old version serving
            self._load_failed(version, exc)
            return exc
        load_ms = (time.perf_counter() - started) * 1000
        self._refused = None
        self._retry_at.clear()
        self._hashed = hashed
        self.swap(snapshot, load_ms)
        return None

    def _check(self, version: int) -> frozenset[NamedFile]:
        """Raise DamagedVersion unless the files of `version` have the sizes and checksums
        its manifest records; return the files hashed. A file the served version shares
        (segments, linked text files) was hashed when that version was loaded: it is
        measured only. With nothing served yet (a cold start), files over START_HASH_BYTES
        are only measured here and hashed by `check_unhashed`."""
        manifest = load_manifest(self.data, version)
        if manifest.format_minor < CHECKSUMS_MINOR:
            return frozenset()  # older format: loading it decodes what it can
        cold = self._entry is None
        files = named_files(manifest)
        limit = START_HASH_BYTES if cold else None
        problems, later = check_files(self.data, files, limit, () if cold else self._hashed)
        problems = manifest_problems(self.data, manifest) + problems
        if problems:
            raise DamagedVersion(version, problems)
        if cold:
            self._unhashed = (version, later) if later else None
        return frozenset(files) - set(later)

    def check_unhashed(self) -> None:
        """Hash what a cold start left unhashed; if it is damaged, serve the newest intact
        older version instead (or nothing: a damaged version is never served knowingly)."""
        pending, self._unhashed = self._unhashed, None
        if pending is None or pending[0] != self.serving:
            return
        version, files = pending
        problems, _ = check_files(self.data, files)
        if not problems:
            self._hashed |= set(files)
            return
        self._load_failed(version, DamagedVersion(version, problems), current_only=False)
        with self._lock:
            damaged, self._entry = self._entry, None
            self._error = self._refused.error if self._refused else "damaged"
            close_now = damaged is not None and self._retire(damaged)
        if close_now and damaged is not None:
            self._close(damaged, "its files are damaged")
        self._fall_back(below=version)

    def _fall_back(self, below: int | None) -> None:
        """Nothing is served and the version CURRENT names cannot be: serve the newest
        version below it (any, when CURRENT is unreadable) that checks and loads."""
        older = [v for v in reversed(list_versions(self.data)) if below is None or v < below]
        for version in older:
            try:
                hashed = self._check(version)
                snapshot = self._load(version)
            except Exception as exc:  # noqa: BLE001 - try the next older one
                log.warning("version %d cannot be served either: %s", version, exc)
                continue
            self._hashed = hashed
            self.swap(snapshot)
            log.warning("serving version %d, the newest intact one kept on disk", version)
            return

    def _current_unreadable(self, exc: IndexFormatError) -> None:
        """CURRENT names no version: keep serving (or, if damaged, fall back once) and say
        why."""
        why = str(exc)
        if self._refused is not None and self._refused.error == why:
            return
        self._refused = Refusal(version=None, error=why, at=iso_utc())
        serving = self.serving
        log.error("%s; %s", why, f"still serving version {serving}" if serving else "")
        if self._entry is None:
            self._error = why
            if isinstance(exc, DamagedIndex):
                self._fall_back(below=None)

    def _load_failed(self, version: int, exc: Exception, current_only: bool = True) -> None:
        if current_only and self._current_moved_from(version):
            log.info("version %d was replaced while loading; following CURRENT", version)
            return
        permanent = isinstance(exc, IndexFormatError)  # versions are immutable: no retry
        self._retry_at[version] = float("inf") if permanent else time.monotonic() + RETRY_AFTER_S
        error = str(exc) if permanent else f"{type(exc).__name__}: {exc}"
        self._refused = Refusal(version=version, error=error, at=iso_utc())
        serving = self.serving
        keep = f"still serving version {serving}" if serving else "nothing to serve"
        log.error("refused version %d: %s; %s", version, error, keep)
        if serving is None:
            self._error = f"version {version} cannot be served: {error}"

    def _current_moved_from(self, version: int) -> bool:
        try:
            return current_version(self.data) != version
        except IndexFormatError:
            return False

    def _nothing_to_follow(self, why: str) -> None:
        if self._entry is None and self._error != why:
            log.warning("no index to serve yet: %s", why)
            self._error = why

    def _why_no_version(self) -> str:
        if not self.data.marker.exists():
            return (
                f"{self.data.root} is not a docdex data directory yet; "
                "add a source and run `docdex index`"
            )
        return f"{self.data.root} has no published version yet; run `docdex index`"

    def _close(self, entry: _Entry[S], why: str) -> None:
        entry.snapshot.close()
        with self._lock:
            self._closed += 1
        log.info("closed version %d (%s)", entry.snapshot.version, why)

    # --- watching --------------------------------------------------------------------------

    def start(self) -> None:
        """Poll CURRENT in a background thread (the first refresh is the caller's)."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._watch, name="docdex-versions", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while True:
            try:
                self.check_unhashed()
            except Exception:  # noqa: BLE001 - the watcher must outlive a failed check
                log.exception("checking the served version's files failed")
            if self._stop.wait(self._poll_interval):
                return
            try:
                self.refresh()
            except Exception:  # noqa: BLE001 - the watcher must outlive any one bad poll
                log.exception("watching %s failed; retrying", self.data.current)

    def stop(self) -> None:
        """Stop watching and close the served version (call after the last search)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        with self._lock:
            entry, self._entry = self._entry, None
            self._error = "server stopped"
            if entry is not None:
                entry.retired = True
                if entry.leases:
                    self._held_old.append(entry)  # the last search closes it
        if entry is not None and not entry.leases:
            self._close(entry, "server stopped")
