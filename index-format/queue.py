"""The indexing queue: requests are files under state/queue/, one per request (FORMAT.md).

Two writers file requests: `file_request` here (the server's `reindex` tool, the poller) and
the post-receive hook, in sh, which writes the same JSON (hooks/post-receive.sh). Only the
worker removes one, and only after the version that satisfies it is published, so a crash
never loses a request.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from pathlib import Path

import msgspec

from docdex.runtime.times import iso_utc

from .layout import DataDir, write_atomic


class IndexRequest(msgspec.Struct, frozen=True):
    id: str
    source: str  # "" = every source
    origin: str  # "hook", "reindex", "poll" (or "cli", "watch")
    requested_at: str
    ref: str = ""  # the pushed ref, for hooks
    commit: str = ""  # the pushed commit, for hooks


_decoder = msgspec.json.Decoder(IndexRequest)


def queue_dir(data: DataDir) -> Path:
    return data.state / "queue"


def file_request(
    data: DataDir, source: str = "", origin: str = "cli", ref: str = "", commit: str = ""
) -> IndexRequest:
    folder = queue_dir(data)
    folder.mkdir(parents=True, exist_ok=True)
    request_id = f"{time.time_ns():020d}-{secrets.token_hex(3)}"
    request = IndexRequest(
        id=request_id,
        source=source,
        origin=origin,
        requested_at=iso_utc(),
        ref=ref,
        commit=commit,
    )
    write_atomic(folder / f"{request_id}.json", msgspec.json.encode(request))
    return request


def pending_requests(data: DataDir) -> list[IndexRequest]:
    """Every filed request, oldest first; unreadable files are skipped (and kept)."""
    folder = queue_dir(data)
    if not folder.is_dir():
        return []
    requests = []
    for path in sorted(folder.glob("*.json")):
        try:
            requests.append(_decoder.decode(path.read_bytes()))
        except (OSError, msgspec.DecodeError):
            continue
    return requests


def remove_requests(data: DataDir, requests: list[IndexRequest]) -> None:
    folder = queue_dir(data)
    for request in requests:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(folder / f"{request.id}.json")
