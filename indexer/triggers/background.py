"""What runs beside `docdex serve`: the poller thread and the indexing worker process.

Both start once the server listens: neither has anything urgent to do (requests wait in the
queue), and a worker's interpreter starting during the server's boot competes with it for
the cores and delays the first answers (adr/0008).
"""

from __future__ import annotations

from contextlib import ExitStack

from docdex.index_format.layout import DataDir
from docdex.runtime.logs import LogSettings


class Background:
    """The poller and (unless `worker` is False) the worker, which logs as `logs` says;
    `start` once, `stop` always."""

    def __init__(self, data: DataDir, logs: LogSettings, worker: bool = True) -> None:
        self.data = data
        self.logs = logs
        self.worker = worker
        self._running = ExitStack()
        self._started = False

    def start(self) -> None:
        from .poller import polling
        from .worker import start_worker_process, stop_worker_process

        if self._started:
            return
        self._started = True
        self._running.enter_context(polling(self.data))
        if self.worker:
            worker = start_worker_process(self.data, self.logs)
            self._running.callback(stop_worker_process, worker)

    def stop(self) -> None:
        self._running.close()
