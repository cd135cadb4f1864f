"""The serving model, loaded in a thread from the first moment of `docdex serve`.

ONNX Runtime builds its session without holding the GIL, so the server's own imports and the
opening of the index go on meanwhile and the server listens sooner (adr/0008, "Threads").

Queries are embedded with the model the served version was built with, which its manifest
records (index-format's model_tables.py): the one of the version CURRENT names loads first,
and a version built with another (the embedder was changed, and the new version is
published) loads its own (`QueryModels`), so nothing stops serving while the configuration
changes. Each is loaded with the `ModelEnvironment` the command built (the cache directory,
an endpoint's key).
"""

from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import Future
from typing import TYPE_CHECKING

from docdex.errors import DocdexError
from docdex.index_format.config import ConfigError, load_config
from docdex.index_format.layout import DataDir
from docdex.index_format.records import EmbedderInfo
from docdex.index_format.store import load_current
from docdex.model.model_environment import UNCONFIGURED, ModelEnvironment

if TYPE_CHECKING:
    from docdex.model.protocol import TextEmbedder

log = logging.getLogger("docdex.server")
KEPT_MODELS = 2  # query models kept besides the first: the served version's and the next


def query_threads(data: DataDir) -> int:
    """The `threads` setting, else two threads at most."""
    try:
        threads = load_config(data).settings.threads
    except ConfigError:
        threads = 0
    return threads or min(2, os.cpu_count() or 1)


def served_model(data: DataDir) -> EmbedderInfo | None:
    """The model the version CURRENT names was built with (None: no version to read)."""
    try:
        manifest = load_current(data)
    except (DocdexError, OSError, ValueError):
        return None  # the holder says why it serves nothing; the shipped model loads
    return manifest.embedder if manifest is not None else None


def load_query_model(
    data: DataDir, model_environment: ModelEnvironment = UNCONFIGURED
) -> TextEmbedder:
    """The query model of the version CURRENT names (the shipped model's int8 query graph,
    with the `threads` setting, when there is none yet)."""
    from docdex.model.choice import query_embedder
    from docdex.model.embedder import Embedder

    threads = query_threads(data)
    info = served_model(data)
    if info is not None and info.spec is not None:
        return query_embedder(info, threads, model_environment)
    return Embedder.load(threads=threads, for_queries=True, model_environment=model_environment)


def start_loading(data: DataDir, model_environment: ModelEnvironment) -> Future[TextEmbedder]:
    """`load_query_model` in a thread of its own; `.result()` waits for it (or raises)."""
    future: Future[TextEmbedder] = Future()

    def load() -> None:
        try:
            future.set_result(load_query_model(data, model_environment))
        except BaseException as exc:  # ModelMissing and the like: re-raised by .result()
            future.set_exception(exc)

    threading.Thread(target=load, name="docdex-model", daemon=True).start()
    return future


class QueryModels:
    """The query model of each version (`Engine.open` calls it with the version's
    `EmbedderInfo`): the first model when the version was built with it, else the
    version's own, loaded once from what its manifest records and kept."""

    def __init__(
        self,
        first: Future[TextEmbedder] | TextEmbedder,
        threads: int,
        model_environment: ModelEnvironment,
    ) -> None:
        self.first = first
        self.threads = threads
        self.model_environment = model_environment
        self.others: dict[str, TextEmbedder] = {}
        self.lock = threading.Lock()

    def __call__(self, info: EmbedderInfo) -> TextEmbedder:
        first = self.first.result() if isinstance(self.first, Future) else self.first
        if first.info.id == info.id:
            return first
        with self.lock:
            model = self.others.get(info.id)
            if model is None:
                from docdex.model.choice import query_embedder

                log.info("loading the query model of %s", info.id)
                model = query_embedder(info, self.threads, self.model_environment)
                while len(self.others) >= KEPT_MODELS:
                    self.others.pop(next(iter(self.others)))
                self.others[info.id] = model
            return model
