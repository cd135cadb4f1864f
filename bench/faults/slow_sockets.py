"""Slow sockets: hundreds of peers that connect and never finish a request head, against a
real `docdex serve` on 127.0.0.1, while normal requests are timed (server/http/connections.py,
adr/0023).

The slow peers come in three kinds, in turn: silent (connect, send nothing), a partial
request line, and headers trickled a byte every half second (data never extends the
header deadline). A separate process holds them (`Holder`), so that this one's timings of
normal requests (/health and /api/search in turn, a new connection each) share no
interpreter with them. The baseline is a twin server on the same index with no slow
sockets: the normal requests go to the twin and to the slow sockets' server in turn, one
by one, so that both see the same machine at the same moments. They start once the server
has taken the slow sockets in (accepted them, or closed those past its bound): how long
that takes is a figure of its own, as the first requests after a burst of 500 connections
wait for it (100-250 ms here, on a loaded machine).

Two rows:
- deadline: the shipped settings (10 s header deadline, bound 1000 above the slow count):
  normal requests with and without the slow sockets, and the slow sockets still open a
  second after the deadline (they must all be closed);
- bound: the same slow sockets against a server whose max_connections is below their
  count: the longest-waiting are closed as the others arrive, and normal requests still
  answer.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import resource
import selectors
import socket
import time
from collections.abc import Iterator
from multiprocessing.connection import Connection
from pathlib import Path

from docdex.index_format.layout import DataDir
from docdex.serverproc import ServeProcess

from .harness import QUERIES, docdex_cli, docs_corpus, write_config
from .rows import Row
from bench.common import bench_git, percentile, say, work_repo

CORPUS_BYTES = 40_000
HEADER_TIMEOUT = 10.0  # the shipped default (server/http/connection_limits.py)
SLOW = {True: 100, False: 500}  # quick -> slow sockets per round
ROUNDS = {True: 1, False: 5}
NORMAL = {True: 60, False: 100}  # normal requests per phase
BOUND = {True: 40, False: 200}  # max_connections of the bound row
ROUTES = ("/health", "/api/search")
TAKE_IN_S = 30  # bound on the wait for the server to accept (or close) the slow sockets
WARM_UP = 20  # requests to a new server before any is timed
TRICKLE_EVERY = 0.5  # seconds between two bytes of a trickled head
PARTIAL_LINE = b"GET /api/sea"
TRICKLED = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 4000


def run(quick: bool, work: Path) -> list[Row]:
    room_for_sockets(SLOW[quick] + 200)
    data = small_index(work)
    slow, rounds, normal, bound = SLOW[quick], ROUNDS[quick], NORMAL[quick], BOUND[quick]
    with contextlib.ExitStack() as servers:
        twin = servers.enter_context(serving(data, work / "twin.log"))
        target = servers.enter_context(serving(data, work / "deadline.log"))
        env = {"DOCDEX_MAX_CONNECTIONS": str(bound)}
        capped = servers.enter_context(serving(data, work / "bound.log", env))
        deadline = measure(target, twin, slow, rounds, normal, slow, HEADER_TIMEOUT + 1)
        bounded = measure(capped, twin, slow, rounds, normal, bound, settle=0.0)
    pairs = f"{normal} pairs of normal requests"
    return [
        Row(
            scenario="slow-sockets",
            injected=f"{slow} slow sockets (silent, partial line, trickled headers) x {rounds}",
            count=slow * rounds,
            lost=int(deadline["normal failed"] + deadline["slow open after deadline"]),
            figures=deadline,
            notes=f"header deadline {HEADER_TIMEOUT:g} s; per round {pairs}, the twin server "
            "(no slow sockets) and the slow sockets' one in turn; lost = failed normal "
            "requests + slow sockets open 1 s past the deadline",
        ),
        Row(
            scenario="slow-sockets",
            injected=f"{slow} slow sockets against max_connections {bound} x {rounds}",
            count=slow * rounds,
            lost=int(bounded["normal failed"] + (bounded["slow open beside"] > bound)),
            figures={k: v for k, v in bounded.items() if k != "slow open after deadline"},
            notes=f"per round {pairs} beside the twin; the longest-waiting heads are closed "
            "to make room; lost = failed normal requests, +1 if more slow sockets than the "
            "bound stayed open",
        ),
    ]


# --- the server and its index --------------------------------------------------------------


def small_index(work: Path) -> DataDir:
    clone = work_repo(work / "repo", docs_corpus(CORPUS_BYTES))
    bench_git(clone, "push", "-q", "origin", "main")
    data = DataDir(work / "data")
    write_config(data, {"docs": clone.parent / "origin.git"})
    done = docdex_cli(data, "index")
    if done.returncode != 0:
        raise RuntimeError(f"indexing failed: {done.stderr.strip()[-500:]}")
    return data


@contextlib.contextmanager
def serving(data: DataDir, log: Path, env: dict[str, str] | None = None) -> Iterator[ServeProcess]:
    with ServeProcess(data.root, log, env=env) as server:
        server.wait_serving(180)
        ready_by = time.monotonic() + 180
        while "ready: MCP" not in server.output():  # /mcp is built in a thread once listening:
            server.check_alive()  # the timings wait until that work is done
            if time.monotonic() > ready_by:
                raise RuntimeError(f"/mcp was not built within 180 s{server.tail()}")
            time.sleep(0.2)
        for i in range(WARM_UP):
            timed_request(server, i, {route: [] for route in ROUTES})
        yield server


def open_fds(server: ServeProcess) -> int:
    return len(os.listdir(f"/proc/{server.proc.pid}/fd"))


def settled_fds(server: ServeProcess, base: int, within: float = 5.0) -> int:
    """The server's open fds once they are back to `base` (the slow sockets' closes
    processed), or after `within` seconds."""
    give_up = time.monotonic() + within
    while open_fds(server) > base and time.monotonic() < give_up:
        time.sleep(0.05)
    return open_fds(server)


def room_for_sockets(count: int) -> None:
    """Raise this process's soft file limit so it can hold `count` sockets."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = count + 256
    if soft != resource.RLIM_INFINITY and soft < wanted:
        ceiling = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (ceiling, hard))


# --- one measurement ------------------------------------------------------------------------


def measure(
    target: ServeProcess,
    twin: ServeProcess,
    slow: int,
    rounds: int,
    normal: int,
    held: int,
    settle: float,
) -> dict[str, float]:
    """Per round: `slow` slow sockets against `target`, and once it holds `held` of them
    (the others closed), `normal` pairs of timed requests, one to the twin (no slow
    sockets) and one to `target`, in turn; then (settle > 0) the slow sockets still open
    `settle` seconds after the last one connected."""
    without: dict[str, list[float]] = {route: [] for route in ROUTES}
    beside: dict[str, list[float]] = {route: [] for route in ROUTES}
    failed = still_open = peak_fds = open_beside = 0
    take_in = 0.0
    base_fds = open_fds(target)
    for number in range(rounds):
        say(f"[faults] slow-sockets: round {number + 1}/{rounds}, {slow} slow sockets")
        with Holder(target.port, slow) as holder:
            connected = time.monotonic()
            while holder.open_count() > held or open_fds(target) - base_fds < held:
                if time.monotonic() > connected + TAKE_IN_S:
                    raise RuntimeError(f"the server did not take in {slow} slow sockets")
                time.sleep(0.01)
            take_in = max(take_in, time.monotonic() - connected)
            peak_fds = max(peak_fds, open_fds(target))
            for i in range(normal):
                pair = [(twin, without), (target, beside)]
                for server, latencies in pair if i % 2 else pair[::-1]:
                    failed += not timed_request(server, i, latencies)
            peak_fds = max(peak_fds, open_fds(target))
            open_beside = max(open_beside, holder.open_count())
            if settle:
                time.sleep(max(0.0, connected + settle - time.monotonic()))
                still_open += holder.open_count()
    figures = {}
    for route in ROUTES:  # apart: the two routes' latencies differ tenfold
        figures |= _latencies(route, without[route], beside[route])
    return figures | {
        "normal failed": float(failed),
        "slow open beside": float(open_beside),
        "slow open after deadline": float(still_open),
        "ms to take them in": _ms(take_in),
        "server fds at peak": float(peak_fds),
        "server fds after": float(settled_fds(target, base_fds)),
    }


def _latencies(route: str, without: list[float], beside: list[float]) -> dict[str, float]:
    name = route.rpartition("/")[2]
    figures = {}
    for label, share in (("p50", 0.5), ("p99", 0.99)):
        base, slow = percentile(without, share), percentile(beside, share)
        figures[f"{name} {label} ms without"] = _ms(base)
        figures[f"{name} {label} ms with slow"] = _ms(slow)
        figures[f"{name} {label} ratio"] = round(slow / base, 2)
    return figures


def timed_request(server: ServeProcess, i: int, latencies: dict[str, list[float]]) -> bool:
    """Request `i`: /health or /api/search in turn, on a new connection; its latency is
    appended to `latencies[route]` when it succeeded (200)."""
    route = ROUTES[i // 2 % 2]
    params = {"q": QUERIES[i % len(QUERIES)], "n": 5} if route == "/api/search" else None
    started = time.monotonic()
    status, _ = server.get(route, params)
    if status == 200:
        latencies[route].append(time.monotonic() - started)
    return status == 200


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 2)


# --- the slow peers, in a process of their own ------------------------------------------------


class Holder:
    """A child process that opens `count` slow sockets to 127.0.0.1:`port`, trickles bytes
    to the trickling kind, and tells how many the server has not closed yet."""

    def __init__(self, port: int, count: int) -> None:
        self._conn, child = multiprocessing.get_context("fork").Pipe()
        self._proc = multiprocessing.get_context("fork").Process(
            target=_hold, args=(child, port, count), daemon=True
        )
        self._proc.start()
        child.close()
        if not self._conn.poll(60):
            raise RuntimeError("the slow sockets were not opened within 60 s")
        self.connect_errors: int = self._conn.recv()

    def open_count(self) -> int:
        self._conn.send("count")
        return self._conn.recv()

    def __enter__(self) -> Holder:
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(OSError):
            self._conn.send("stop")
        self._proc.join(10)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join()
        self._conn.close()


def _hold(control: Connection, port: int, count: int) -> None:
    room_for_sockets(count)
    sel = selectors.DefaultSelector()
    sel.register(control, selectors.EVENT_READ, None)
    trickles: dict[socket.socket, int] = {}  # trickling socket -> bytes sent
    errors = 0
    for i in range(count):
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        except OSError:
            errors += 1
            continue
        sock.setblocking(False)
        kind = i % 3
        if kind == 1:
            sock.send(PARTIAL_LINE)
        elif kind == 2:
            trickles[sock] = 0
        sel.register(sock, selectors.EVENT_READ, kind)
    control.send(errors)
    next_byte = time.monotonic() + TRICKLE_EVERY
    while True:
        events = sel.select(timeout=max(0.0, next_byte - time.monotonic()))
        for key, _ in events:  # closes first, so that a count sent next is current
            if key.fileobj is not control:
                _read_or_drop(sel, key.fileobj, trickles)
        if any(key.fileobj is control for key, _ in events):
            if control.recv() == "stop":
                return
            control.send(len(sel.get_map()) - 1)
        if time.monotonic() >= next_byte:
            next_byte += TRICKLE_EVERY
            for sock in list(trickles):
                _trickle(sel, sock, trickles)


def _read_or_drop(sel: selectors.BaseSelector, sock, trickles: dict) -> None:
    """Read what the server sent (a 408); drop the socket once the server closed it."""
    try:
        if sock.recv(65536):
            return
    except BlockingIOError:
        return
    except OSError:
        pass
    _drop(sel, sock, trickles)


def _trickle(sel: selectors.BaseSelector, sock: socket.socket, trickles: dict) -> None:
    sent = trickles[sock]
    try:
        sock.send(TRICKLED[sent : sent + 1])
    except BlockingIOError:
        return
    except OSError:
        _drop(sel, sock, trickles)
        return
    trickles[sock] = sent + 1


def _drop(sel: selectors.BaseSelector, sock: socket.socket, trickles: dict) -> None:
    sel.unregister(sock)
    trickles.pop(sock, None)
    sock.close()
