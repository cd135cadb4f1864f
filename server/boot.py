"""What `docdex serve` does before it listens: the model, the first version, each step
timed in a `[boot +N ms]` line (the command has set up logging).

Every version the server takes is opened and warmed by `engine_loader` before it is served,
so the first real query after a start or a swap pays no one-off costs.
"""

from __future__ import annotations

import logging
import os
import time
import weakref
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from docdex.index_format.config import ConfigError, load_config
from docdex.index_format.layout import DataDir, IndexFormatError
from docdex.model.model_environment import UNCONFIGURED, ModelEnvironment
from docdex.server.answers.docs import Docs
from docdex.server.engine import DEFAULT_SETTINGS, Engine, EngineSettings

from .query_model import QueryModels, query_threads, start_loading
from .versions import VersionHolder

if TYPE_CHECKING:
    from docdex.model.protocol import TextEmbedder

log = logging.getLogger("docdex.server")


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


def open_docs(
    data: DataDir,
    boot: Boot,
    model: Future[TextEmbedder] | None = None,
    model_environment: ModelEnvironment = UNCONFIGURED,
) -> Docs:
    """The model and the version CURRENT names (when there is one), ready to answer.
    `model`: the model already loading (query_model.start_loading), else it starts loading
    here; `model_environment`: what the models take from the environment (the cache, keys).
    The version is opened while the model loads (onnxruntime builds its session without the
    GIL); only its warm-up search waits for the model."""
    reranker = load_config(data).settings.reranker
    model = model or start_loading(data, model_environment)
    loaded: list[float] = []  # when the model was ready, noted by its own thread
    model.add_done_callback(lambda _: loaded.append(time.monotonic()))
    settings = engine_settings(data, reranker, model_environment)
    holder = VersionHolder(data, engine_loader(data, model, settings))
    holder.refresh()
    embedder = model.result()
    boot.mark(f"model loaded: {embedder.info.id} ({embedder.info.dim} dims)", *loaded[:1])
    served = holder.serving
    why = holder.stats().error
    boot.mark(f"version {served} loaded" if served else f"no version to serve yet: {why}")
    return Docs(data, embedder, holder, started=boot.t0, reranker=reranker)


def engine_settings(
    data: DataDir, reranker: str, model_environment: ModelEnvironment, **tunables: Any
) -> EngineSettings:
    """The engine's settings for the reranker `reranker` names, as `data`'s docdex.toml
    resolves it (a [models.NAME] rerank table is its endpoint), with the models'
    environment and other `tunables`."""
    try:
        endpoint = load_config(data).reranker_spec(reranker)
    except ConfigError:  # the holder and the worker say what is wrong with docdex.toml
        endpoint = None
    return EngineSettings(
        reranker=reranker,
        rerank_endpoint=endpoint,
        model_environment=model_environment,
        **tunables,
    )


def engine_loader(
    data: DataDir,
    model: TextEmbedder | Future[TextEmbedder],
    settings: EngineSettings = DEFAULT_SETTINGS,
) -> Callable[[int], Engine]:
    """The holder's loader: open a version, refuse what this server cannot serve, warm it.
    `model` may still be loading: a version is opened before it is needed. Each version
    shares what did not change with the one before it while that one is open (adr/0028).
    A version built with another model than `model` is served with its own (QueryModels),
    loaded with the settings' `model_environment`."""
    models = QueryModels(model, query_threads(data), settings.model_environment)

    cold = True  # nothing loaded yet: the first answer waits for this load
    last: weakref.ref[Engine] | None = None  # the version before, while it is open

    def load(version: int) -> Engine:
        nonlocal cold, last
        before = last() if last is not None else None
        engine = Engine.open(data, models, version, settings, before=before)
        try:
            engine.warm(vocabulary=not cold)
        except Exception as exc:
            engine.close()
            raise IndexFormatError(f"version {version} failed its warm-up search: {exc}") from exc
        cold, last = False, weakref.ref(engine)
        return engine

    return load
