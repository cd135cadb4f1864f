"""Is the index current? For each indexed entry (a source's ref): the ref's tip in the
repository now, how many commits the index lacks, since when, and whether a request for it
waits in the queue. /health turns "stale" when an entry has been behind for longer than
`stale_after_s`.

The server only reads: the ref (peeled when a tag) and a bounded walk of the commits between
the indexed one and the tip, with dulwich. A remote source is read from its mirror, so its
tip is what the last fetch brought.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

import msgspec
from dulwich.errors import NotGitRepository
from dulwich.objects import ObjectID, Tag
from dulwich.refs import Ref
from dulwich.repo import Repo

from docdex.index_format.layout import DataDir
from docdex.index_format.queue import IndexRequest, pending_requests
from docdex.index_format.records import Manifest, SourceState
from docdex.index_format.ref_names import base_of, full_ref
from docdex.index_format.run_progress import (
    READING,
    partial_entries,
    partial_sentence,
    read_progress,
    reading_sentence,
)
from docdex.runtime.times import iso_utc

log = logging.getLogger("docdex.server")

MAX_WALK = 1_000  # commits counted at most; `behind` says MAX_WALK for "at least that many"


class Freshness(msgspec.Struct):
    tip: str  # the ref's commit in the repository now ("" = unknown: no repository or ref)
    behind: int | None  # commits the index lacks (None = unknown)
    behind_since: str  # when the index fell behind ("" = it is not)
    queued: bool  # a request to index this source waits in the queue
    stale: bool  # behind for longer than `stale_after_s`


UNKNOWN = Freshness("", None, "", False, False)  # not looked at


class FreshnessWatch:
    """Freshness of every entry, with the first moment this server saw each tip ahead (the
    fallback for "since" when no queued request says when the push came)."""

    def __init__(self, data: DataDir):
        self.data = data
        self._first_seen: dict[str, tuple[str, float]] = {}  # entry -> (tip, when first seen)
        self._lock = threading.Lock()

    def of(self, sources: dict[str, SourceState], stale_after_s: int) -> dict[str, Freshness]:
        queue = pending_requests(self.data)
        return {
            key: self._entry(key, state, queue, stale_after_s) for key, state in sources.items()
        }

    def _entry(
        self, key: str, state: SourceState, queue: list[IndexRequest], stale_after_s: int
    ) -> Freshness:
        base = base_of(key, state)
        waiting = [r for r in queue if r.source in ("", base)]
        indexed = state.commit.partition("+")[0]
        tip, behind = self._compare(state, base, indexed)
        if not behind:
            return Freshness(tip, behind, "", bool(waiting), False)
        since = self._since(key, tip, waiting)
        stale = time.time() - since > stale_after_s
        return Freshness(tip, behind, iso_utc(since), bool(waiting), stale)

    def _compare(self, state: SourceState, base: str, indexed: str) -> tuple[str, int | None]:
        location = str(self.data.mirror(base)) if state.kind == "remote" else state.location
        name = state.ref or state.branch
        if not name:
            return "", None
        try:
            with Repo(location) as repo:
                tip = _peeled(repo, full_ref("tag" if state.ref_kind == "tag" else "branch", name))
                if not tip or not indexed or tip == indexed:
                    return tip, (0 if tip and tip == indexed else None)
                return tip, _count_between(repo, indexed, tip)
        except (NotGitRepository, OSError, KeyError, ValueError) as exc:
            log.debug("freshness of %s: %s", state.name, exc)
            return "", None

    def _since(self, key: str, tip: str, waiting: list[IndexRequest]) -> float:
        with self._lock:
            seen_tip, first = self._first_seen.get(key, ("", 0.0))
            if seen_tip != tip:  # one moment per entry: its current tip's
                first = time.time()
                self._first_seen[key] = (tip, first)
        filed = [_timestamp(r.requested_at) for r in waiting]
        return min([first, *[t for t in filed if t is not None]])


def _peeled(repo: Repo, ref: str) -> str:
    try:
        sha = repo.refs[Ref(ref.encode())]
    except KeyError:
        return ""
    target = repo[sha]
    while isinstance(target, Tag):
        target = repo[target.object[1]]
    return target.id.decode()


def _count_between(repo: Repo, indexed: str, tip: str) -> int | None:
    """Commits reachable from `tip` but not from `indexed` (at most MAX_WALK); None when the
    indexed commit is not in the repository (a force-push removed it)."""
    old, new = ObjectID(indexed.encode()), ObjectID(tip.encode())
    if old not in repo.object_store:
        return None
    walker = repo.get_walker(include=[new], exclude=[old], max_entries=MAX_WALK)
    return sum(1 for _ in walker)


def _timestamp(text: str) -> float | None:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def indexing_note(data: DataDir, source: str = "") -> str:
    """What is being done to index `source` (any source when ""), in a sentence: a run
    reading it ("source docs is being indexed: 120 of 3,112 pages read, since ..."), a run
    that will, or a request waiting for the worker; "" when nothing is."""
    progress = read_progress(data)
    if progress is not None and progress.phase == READING:
        if not source or progress.source == source:
            return reading_sentence(progress)
        if source in progress.sources:
            return (
                f"source {source} is being indexed by the run that began at "
                f"{progress.started_at} (reading {progress.source or 'another source'} now)"
            )
    waiting = [r for r in pending_requests(data) if not source or r.source in ("", source)]
    if waiting:
        which = f"source {source}" if source else "the index"
        return f"{which} is queued for indexing since {waiting[0].requested_at}"
    return ""


def partial_notes(
    data: DataDir, manifest: Manifest, wanted: Callable[[str], bool] = lambda key: True
) -> dict[str, str]:
    """Per entry `wanted` of those `manifest` holds only part of (published while being
    read), what it covers: "source docs is being indexed: 120 of 3,112 pages read; results
    cover those"."""
    partial = {key: state for key, state in partial_entries(manifest).items() if wanted(key)}
    progress = read_progress(data) if partial else None
    return {key: partial_sentence(key, state, progress) for key, state in sorted(partial.items())}
