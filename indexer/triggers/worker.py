"""The indexing worker: the one process that drains the queue.

    state/queue/*.json ──> worker (state/worker.lock) ──> python -m docdex.indexer.triggers.cycle
                                                        (one subprocess per cycle, niced)

It merges every pending request into one cycle (one version for many pushes), runs the cycle
in a subprocess with a time limit, records its metrics or its failure for /health, and only
then removes the requests the cycle covered. While the current version holds chunks without
vectors (published keywords first) and no request waits, it runs cycles that embed them. A
worker killed at any moment loses nothing: the next one does the work again. Only one
worker runs per data directory (a flock the kernel drops when its holder dies). This module
stays light (no pipeline import): the post-receive hook's worker pays for the heavy imports
only inside the cycle process.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from docdex.errors import DocdexError
from docdex.index_format.config import ConfigError, Settings, load_config
from docdex.index_format.layout import DataDir
from docdex.index_format.metrics import record_failure
from docdex.index_format.queue import IndexRequest, pending_requests, remove_requests
from docdex.index_format.run_progress import waiting_chunks
from docdex.index_format.store import current_version, load_manifest
from docdex.runtime.logs import DEFAULT_LOGS, LogSettings

from .cycle import EXIT_INVALID

log = logging.getLogger("docdex.worker")

LOCK_FILE = "worker.lock"
POLL_S = 0.5
MAX_ATTEMPTS = 3  # failed cycles for one request before it is dropped
BACKOFF_S = 5.0  # first retry delay; doubles with each attempt
LOCK_RETRIES = 3  # a busy lock may be a hook's probe (flock -n ... true): look again
STOP_GRACE_S = 5.0
MAX_LOG_BYTES = 1_000_000


# --- what a cycle reports (the fields of RunReport the worker reads) -------------------------


class SourceOutcome(msgspec.Struct):
    name: str
    status: str = "unchanged"
    error: str = ""
    chunks_embedded: int = 0


class CycleReport(msgspec.Struct):
    version: int | None = None
    published: bool = False
    sources: list[SourceOutcome] = []
    chunks: int = 0
    took_s: float = 0.0
    peak_rss_mb: float = 0.0
    embedded_versions: list[int] = []
    waiting_chunks: int = 0  # still without vectors: the worker runs another cycle for them


@dataclass
class CycleResult:
    status: str  # ok | invalid (will never work) | failed | timeout | stopped
    duration_s: float
    report: CycleReport | None = None
    error: str = ""


# --- the lock ------------------------------------------------------------------------------


def lock_path(data: DataDir) -> Path:
    return data.state / LOCK_FILE


def try_lock(data: DataDir) -> int | None:
    """The worker lock's descriptor, or None when another worker holds it."""
    data.state.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path(data), os.O_RDWR | os.O_CREAT, 0o644)  # not inherited by children
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    os.ftruncate(fd, 0)
    with contextlib.suppress(OSError):  # the pid is for worker_pid only, not worth stopping for
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def worker_pid(data: DataDir) -> int | None:
    """The pid written by the last worker that took the lock, if that process still lives.
    (It does not probe the lock: a probe could make a starting worker think it is taken.)"""
    try:
        pid = int(lock_path(data).read_text().strip() or 0)
    except (OSError, ValueError):
        return None
    if pid <= 0:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return pid


# --- one cycle -----------------------------------------------------------------------------


def run_cycle(
    data: DataDir,
    names: list[str] | None,
    settings: Settings,
    stop,
    logs: LogSettings = DEFAULT_LOGS,
    embed_only: bool = False,
) -> CycleResult:
    """Run `python -m docdex.indexer.triggers.cycle` for `names` (None = every source) and wait
    for it, killing it past settings.cycle_timeout_s or when stop() turns true. It logs as
    `logs` says; its log lines pass through to ours as they come; its report comes on stdout."""
    command = [sys.executable, "-m", "docdex.indexer.triggers.cycle", "--data", str(data.root)]
    command += ["--nice", str(settings.nice), *logs.flags()]
    for name in names or []:
        command += ["--source", name]
    if embed_only:
        command.append("--embed-only")
    started = time.monotonic()
    deadline = started + settings.cycle_timeout_s
    proc = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stderr is not None  # both are pipes
    stdout = proc.stdout
    out: list[bytes] = []
    tail: deque[str] = deque(maxlen=20)
    readers = [
        threading.Thread(target=lambda: out.append(stdout.read()), daemon=True),
        threading.Thread(target=_forward, args=(proc.stderr, tail), daemon=True),
    ]
    for reader in readers:
        reader.start()
    status, error = "", ""
    while True:
        try:  # wake at the deadline itself, not at the next poll after it
            proc.wait(timeout=max(0.0, min(POLL_S, deadline - time.monotonic())))
            break
        except subprocess.TimeoutExpired:
            if stop():
                status = "stopped"
            elif time.monotonic() >= deadline:
                status = "timeout"
                error = (
                    f"the indexing cycle ran longer than cycle_timeout_s "
                    f"({settings.cycle_timeout_s} s) and was killed"
                )
            if status:
                _end(proc)
                break
    if not status and stop():
        status = "stopped"  # e.g. Ctrl-C reached the cycle too: not the cycle's failure
    for reader in readers:
        reader.join(timeout=STOP_GRACE_S)
    duration = time.monotonic() - started
    if status:
        return CycleResult(status, duration, error=error)
    return _result(proc.returncode, b"".join(out), list(tail), duration)


def _forward(stream, tail: deque[str]) -> None:
    """Copy the cycle's stderr to ours line by line, keeping the last lines for errors."""
    for line in stream:
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.buffer.write(line)
            sys.stderr.flush()
        text = line.decode(errors="replace").rstrip()
        if text:
            tail.append(text)


def _end(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _result(code: int, out: bytes, tail: list[str], duration: float) -> CycleResult:
    last = tail[-1] if tail else ""
    if code == 0:
        try:
            report = msgspec.json.decode(out, type=CycleReport)
        except msgspec.DecodeError as exc:
            return CycleResult("failed", duration, error=f"unreadable cycle report: {exc}")
        return CycleResult("ok", duration, report)
    if code == EXIT_INVALID:
        return CycleResult("invalid", duration, error=last.removeprefix("docdex cycle: "))
    how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
    said = last.removeprefix("docdex cycle: ")
    return CycleResult("failed", duration, error=f"the indexing cycle {how}: {said}".rstrip(": "))


# --- the worker ----------------------------------------------------------------------------


@dataclass
class Worker:
    data: DataDir
    once: bool = False
    idle_exit_s: float | None = None  # None: run until stopped
    parent_pid: int | None = None  # exit when this process is no longer our parent
    logs: LogSettings = DEFAULT_LOGS  # how its cycles log
    poll_s: float = POLL_S
    stop_requested: bool = False  # set by a signal handler: a plain flag, no locks
    attempts: dict[str, int] = field(default_factory=dict)  # request id -> failed cycles
    not_before: float = 0.0  # retry backoff
    last_active: float = field(default_factory=time.monotonic)
    failed: bool = False
    embed_failures: int = 0  # embedding cycles failed in a row (given up at MAX_ATTEMPTS)
    checked_version: int | None = None  # the version `waiting` was read from
    waiting: int = 0  # chunks that version holds without vectors

    def run(self) -> int:
        """Serve the queue until idle (--idle-exit), drained (--once) or stopped."""
        while not self.should_stop():
            if not self.data.marker.exists():  # not a docdex data directory yet: write nothing
                if self.once:
                    log.info("%s is not a docdex data directory; nothing to do", self.data.root)
                    return 0
                time.sleep(self.poll_s)
                continue
            fd = self._take_lock()
            if fd is None:
                if self.once or self.idle_exit_s is not None:
                    log.info(
                        "another worker (pid %s) is running; leaving the queue to it",
                        worker_pid(self.data) or "?",
                    )
                    return 0
                time.sleep(self.poll_s)  # standby beside `docdex serve`
                continue
            try:
                self._serve_queue()
            finally:
                os.close(fd)
            # A hook that filed a request while we were stopping saw the lock still held and
            # started no worker: look at the queue once more after letting go of the lock.
            if self.once or self.interrupted() or not pending_requests(self.data):
                break
            self.last_active = time.monotonic()
        return 1 if self.failed else 0

    def should_stop(self) -> bool:
        idle = time.monotonic() - self.last_active
        return self.interrupted() or (self.idle_exit_s is not None and idle > self.idle_exit_s)

    def interrupted(self) -> bool:
        """Stop now, even mid-cycle: a signal, or the parent (`docdex serve`) is gone."""
        if self.parent_pid is not None and os.getppid() != self.parent_pid:
            return True
        return self.stop_requested

    def _take_lock(self) -> int | None:
        for attempt in range(LOCK_RETRIES):
            fd = try_lock(self.data)
            if fd is not None:
                return fd
            if attempt < LOCK_RETRIES - 1:
                time.sleep(0.2)
        return None

    def _serve_queue(self) -> None:
        log.info("worker %d serving the queue of %s", os.getpid(), self.data.root)
        while not self.should_stop():
            if time.monotonic() < self.not_before:
                time.sleep(self.poll_s)
                continue
            requests = pending_requests(self.data)
            if requests:
                done = self._handle(requests)
                self.last_active = time.monotonic()
                if self.once and not done:
                    return
                continue
            if self._vectors_wait():
                self._embed()
                self.last_active = time.monotonic()
                continue
            if self.once:
                return
            time.sleep(self.poll_s)

    def _vectors_wait(self) -> bool:
        """Whether the current version holds chunks without vectors (keywords first) that
        a cycle should embed: read again only when CURRENT names another version."""
        if self.embed_failures >= MAX_ATTEMPTS:
            return False
        try:
            version = current_version(self.data)
            if version != self.checked_version:
                manifest = load_manifest(self.data, version) if version is not None else None
                self.checked_version = version
                self.waiting = waiting_chunks(manifest)
        except DocdexError:
            return False  # a damaged version: the next run repairs it, not an embedding cycle
        return self.waiting > 0

    def _embed(self) -> None:
        """One cycle that embeds what waits for vectors, until a request comes."""
        try:
            settings = load_config(self.data).settings
        except ConfigError as exc:
            self._embed_failed(CycleResult("failed", 0.0, error=str(exc)))
            return
        log.info("embedding %d chunks published for keywords first", self.waiting)
        result = run_cycle(self.data, None, settings, self.interrupted, self.logs, embed_only=True)
        if result.status == "ok":
            self.embed_failures = 0
            self._record_report(result)
        elif result.status != "stopped":
            self._embed_failed(result)

    def _embed_failed(self, result: CycleResult) -> None:
        self.failed = True
        self.embed_failures += 1
        record_failure(self.data, result.error, result.duration_s or None)
        delay = BACKOFF_S * 2 ** (self.embed_failures - 1)
        log.error("embedding failed: %s; trying again in %.0f s", result.error, delay)
        self.not_before = time.monotonic() + delay

    def _handle(self, requests: list[IndexRequest]) -> bool:
        """One cycle for every pending request. False when it must be tried again later."""
        try:
            config = load_config(self.data)
        except ConfigError as exc:
            return self._retry(requests, CycleResult("failed", 0.0, error=str(exc)))
        configured = {s.name for s in config.sources}
        batch = self._drop_unknown(requests, configured)
        if not batch:
            return True
        names = None if any(not r.source for r in batch) else sorted({r.source for r in batch})
        if names is None and not configured:
            log.info("no sources are configured; dropping %d request(s)", len(batch))
            remove_requests(self.data, batch)
            return True
        log.info("indexing %s (%d request(s))", ", ".join(names or ["every source"]), len(batch))
        result = run_cycle(self.data, names, config.settings, self.interrupted, self.logs)
        return self._record(batch, names, result)

    def _drop_unknown(self, requests, configured: set[str]) -> list[IndexRequest]:
        unknown = [r for r in requests if r.source and r.source not in configured]
        if unknown:
            names = ", ".join(sorted({r.source for r in unknown}))
            log.warning("dropping %d request(s) for unknown source(s) %s", len(unknown), names)
            remove_requests(self.data, unknown)
        return [r for r in requests if r not in unknown]

    def _record(self, batch, names, result: CycleResult) -> bool:
        if result.status == "stopped":
            log.info("stopped mid-cycle; %d request(s) stay queued", len(batch))
            return False
        if result.status == "ok":
            self._record_report(result)
        elif result.status == "invalid":
            log.error("cannot index %s: %s", ", ".join(names or ["every source"]), result.error)
            record_failure(self.data, result.error, result.duration_s)
        else:
            return self._retry(batch, result)
        remove_requests(self.data, batch)
        for request in batch:
            self.attempts.pop(request.id, None)
        return True

    def _record_report(self, result: CycleResult) -> None:
        """Log what the cycle did: its run has left its metrics for /health itself."""
        report = result.report
        assert report is not None
        embedded = sum(s.chunks_embedded for s in report.sources)
        for source in report.sources:
            if source.status == "failed":
                log.error("source %s failed: %s", source.name, source.error)
        what = f"published version {report.version}" if report.published else "nothing changed"
        if report.waiting_chunks:
            what += f" ({report.waiting_chunks} chunks wait for vectors)"
        log.info(
            "%s (%s; %d chunks, %d embedded) in %.1f s, peak RSS %.0f MB",
            what,
            ", ".join(f"{s.name}: {s.status}" for s in report.sources) or "no sources",
            report.chunks,
            embedded,
            result.duration_s,
            report.peak_rss_mb,
        )

    def _retry(self, batch, result: CycleResult) -> bool:
        self.failed = True
        record_failure(self.data, result.error, result.duration_s or None)
        attempts = max((self.attempts.get(r.id, 0) for r in batch), default=0) + 1
        for request in batch:
            self.attempts[request.id] = attempts
        if attempts >= MAX_ATTEMPTS:
            log.error(
                "%s; giving up on %d request(s) after %d attempts",
                result.error,
                len(batch),
                attempts,
            )
            remove_requests(self.data, batch)
            return True
        delay = BACKOFF_S * 2 ** (attempts - 1)
        log.error("%s; trying again in %.0f s", result.error, delay)
        self.not_before = time.monotonic() + delay
        return False


# --- entry points --------------------------------------------------------------------------


def run_worker(
    data: DataDir,
    once: bool = False,
    idle_exit_s: float | None = None,
    parent_pid: int | None = None,
    detach: bool = False,
    logs: LogSettings = DEFAULT_LOGS,
) -> int:
    """`docdex worker`: signals stop it cleanly (a running cycle is ended, its requests stay).
    `logs`: how this process logs (the command has set it up), for its cycles."""
    if detach:
        _detach()
    worker = Worker(data, once=once, idle_exit_s=idle_exit_s, parent_pid=parent_pid, logs=logs)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda *_: setattr(worker, "stop_requested", True))
    return worker.run()


def _detach() -> None:
    """A hook-spawned worker: its own session (setsid(1) may have made one already), and a
    log file (our stderr) that does not grow without end."""
    with contextlib.suppress(OSError):
        os.setsid()
    with contextlib.suppress(OSError):
        if os.fstat(2).st_size > MAX_LOG_BYTES:
            os.ftruncate(2, 0)


def start_worker_process(data: DataDir, logs: LogSettings) -> subprocess.Popen:
    """The worker beside `docdex serve`: a child process that logs as `logs` says and exits
    with its parent."""
    command = [sys.executable, "-m", "docdex.cli", "--data", str(data.root), *logs.flags()]
    command += ["worker", "--parent-pid", str(os.getpid())]
    return subprocess.Popen(command, stdin=subprocess.DEVNULL)


def stop_worker_process(proc: subprocess.Popen, grace_s: float = 15.0) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
