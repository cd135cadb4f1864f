"""What runs beside `docdex serve`: the poller thread and the indexing worker process.

Both start once the server listens. On 2 cores a worker's interpreter starting beside the
server's own boot delayed the server's first answer by about 0.4 s (docs/benchmarks.md),
and neither has anything urgent to do: requests wait in the queue for it.
"""

from __future__ import annotations

import subprocess

from docdex.index_format.layout import DataDir


class Background:
    """The poller and (unless `worker` is False) the worker; `start` once, `stop` always."""

    def __init__(self, data: DataDir, worker: bool = True) -> None:
        self.data = data
        self.worker = worker
        self._poller = None
        self._process: subprocess.Popen | None = None

    def start(self) -> None:
        from .poller import Poller
        from .worker import start_worker_process

        if self._poller is not None:
            return
        self._poller = Poller(self.data).__enter__()
        if self.worker:
            self._process = start_worker_process(self.data)

    def stop(self) -> None:
        from .worker import stop_worker_process

        if self._poller is not None:
            self._poller.__exit__(None, None, None)
        if self._process is not None:
            stop_worker_process(self._process)
