"""The serving model, loaded in a thread from the first moment of `docdex serve`.

ONNX Runtime builds its session without holding the GIL, so the server's own imports and the
opening of the index go on meanwhile and the server listens sooner (adr/0008, "Threads").
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future
from typing import TYPE_CHECKING

from docdex.index_format.config import ConfigError, load_config
from docdex.index_format.layout import DataDir

if TYPE_CHECKING:
    from docdex.model.embedder import Embedder


def load_query_model(data: DataDir) -> Embedder:
    """The model's query graph, with the `threads` setting (else two threads at most)."""
    from docdex.model.embedder import Embedder

    try:
        threads = load_config(data).settings.threads
    except ConfigError:
        threads = 0
    return Embedder.load(threads=threads or min(2, os.cpu_count() or 1), for_queries=True)


def start_loading(data: DataDir) -> Future[Embedder]:
    """`load_query_model(data)` in a thread of its own; `.result()` waits for it (or raises)."""
    future: Future[Embedder] = Future()

    def load() -> None:
        try:
            future.set_result(load_query_model(data))
        except BaseException as exc:  # ModelMissing and the like: re-raised by .result()
            future.set_exception(exc)

    threading.Thread(target=load, name="docdex-model", daemon=True).start()
    return future
