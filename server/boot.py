"""What `docdex serve` does before it listens: logging, the model, the first version, each
step timed in a `[boot +N ms]` line.

Every version the server takes is opened and warmed by `load_snapshot` before it is served,
so the first real query after a start or a swap pays no one-off costs.
"""

from __future__ import annotations

import logging
import os
import time
import weakref
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING

from docdex.index_format.config import load_config
from docdex.index_format.layout import DataDir, IndexFormatError
from docdex.runtime.logs import configure_logging, is_configured
from docdex.server.answers.docs import Docs
from docdex.server.engine.loaded import Snapshot
from docdex.server.engine.search import identifier_vocabulary, search, searched_exactly

from .query_model import start_loading
from .versions import VersionHolder

if TYPE_CHECKING:
    from docdex.model.embedder import Embedder

log = logging.getLogger("docdex.server")

WARMUP_QUERY = "docdex warm-up query"


class Boot:
    """`[boot +N ms] ...` lines, timed from process start when we can tell it."""

    def __init__(self) -> None:
        self.t0 = _process_start() or time.monotonic()

    def mark(self, what: str, at: float | None = None) -> None:
        """Log `what` at `at` (a time.monotonic() reading; None: now)."""
        ms = round(((time.monotonic() if at is None else at) - self.t0) * 1000)
        log.info("[boot +%d ms] %s", ms, what, extra={"event": "boot", "fields": {"ms": ms}})


def _process_start() -> float | None:
    """The monotonic time this process started (Linux), to count interpreter start-up too."""
    try:
        with open(f"/proc/{os.getpid()}/stat") as f:
            ticks = int(f.read().rpartition(")")[2].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        age = uptime - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None
    return time.monotonic() - max(age, 0.0)


def setup_logging() -> None:
    """docdex.runtime.logs' configuration (text or JSON lines); the CLI has usually set it up."""
    if not is_configured():
        configure_logging()


def open_docs(data: DataDir, boot: Boot, model: Future[Embedder] | None = None) -> Docs:
    """The model and the version CURRENT names (when there is one), ready to answer.
    `model`: the model already loading (model.start_loading), else it starts loading here.
    The version is opened while the model loads (onnxruntime builds its session without the
    GIL); only its warm-up search waits for the model."""
    reranker = load_config(data).settings.reranker
    model = model or start_loading(data)
    loaded: list[float] = []  # when the model was ready, noted by its own thread
    model.add_done_callback(lambda _: loaded.append(time.monotonic()))
    holder = VersionHolder(data, load_snapshot(data, model, reranker))
    holder.refresh()
    embedder = model.result()
    boot.mark(f"model loaded: {embedder.info.id} ({embedder.info.dim} dims)", *loaded[:1])
    served = holder.serving
    why = holder.stats().error
    boot.mark(f"version {served} loaded" if served else f"no version to serve yet: {why}")
    return Docs(data, embedder, holder, started=boot.t0, reranker=reranker)


def load_snapshot(
    data: DataDir, model: Embedder | Future[Embedder], reranker: str = "default"
) -> Callable[[int], Snapshot]:
    """The holder's loader: open a version, refuse what this server cannot serve, warm it.
    `model` may still be loading: a version is opened before it is needed."""

    cold = True  # nothing loaded yet: the first answer waits for this load
    last: weakref.ref[Snapshot] | None = None  # the version before, while it is open

    def load(version: int) -> Snapshot:
        nonlocal cold, last
        snapshot = Snapshot.load(data, version, before=last() if last is not None else None)
        try:
            embedder = model.result() if isinstance(model, Future) else model
            snapshot.check_embedder(embedder)
        except BaseException:
            snapshot.close()
            raise
        try:
            _warm(snapshot, embedder, reranker, vocabulary=not cold)
        except Exception as exc:
            snapshot.close()
            raise IndexFormatError(f"version {version} failed its warm-up search: {exc}") from exc
        cold, last = False, weakref.ref(snapshot)
        return snapshot

    return load


def _warm(snapshot: Snapshot, embedder: Embedder, reranker: str, vocabulary: bool) -> None:
    """Read or open now every segment file a search uses (a later GC may delete them; what
    is read or open survives) and run one search, so the first real query pays no one-off
    costs. `vocabulary`: also list the identifier terms literal queries scan (76 ms on
    PowerShell-Docs), which a cold start leaves to the first literal query so as to answer
    sooner."""
    for seg in snapshot.segments:
        _ = seg.vectors32 if searched_exactly(seg) else (seg.graph, seg.segment.vector_rows)
        _ = seg.window_starts
    if snapshot.manifest.chunks:
        search(snapshot, embedder, WARMUP_QUERY, 1, reranker=reranker)
    if vocabulary:
        identifier_vocabulary(snapshot)
