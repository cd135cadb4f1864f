"""A source's failures: the sentence each reports, which errors are no source's (the run's
own files, a full disk) and stop the run, whether an entry may fail alone, and the state a
failed entry keeps."""

from __future__ import annotations

import logging
from pathlib import Path

import msgspec
from dulwich.repo import Repo

from docdex.errors import DocdexError
from docdex.index_format.config import SourceConfig
from docdex.index_format.records import SourceState
from docdex.indexer.git.repo import is_empty, ref_tips
from docdex.runtime.redaction import redact
from docdex.runtime.times import iso_utc

from ..context import IndexingError, RunContext, RunState, SourceAbandoned
from ..storage.full_disk import is_disk_full

log = logging.getLogger("docdex.pipeline")


def failure_sentence(ctx: RunContext, exc: Exception, source: SourceConfig, key: str) -> str:
    """The sentence the failure of the entry `key` of `source` reports. Raises what is no
    source's failure: the run's own files failing (a full disk), or a source given up on
    (SourceAbandoned)."""
    if isinstance(exc, SourceAbandoned | IndexingError) or is_disk_full(exc, ctx.data):
        raise exc
    if isinstance(exc, DocdexError):
        return str(exc)
    if isinstance(exc, OSError):
        if exc.filename and _in_the_index(ctx, Path(exc.filename)):
            raise exc  # the run's own files: the run fails, nothing is published
        return f"cannot read {exc.filename or source.location}: {exc.strerror or exc}"
    log.debug("source %s: unexpected error", key, exc_info=True)
    return (
        f"indexing stopped on an unexpected error ({type(exc).__name__}: {exc}); its last "
        f"indexed pages keep serving: `docdex index --full {source.name}` reads it again "
        "from scratch, and `--log-level DEBUG` shows where it stopped"
    )


def _in_the_index(ctx: RunContext, path: Path) -> bool:
    data = ctx.data
    return any(path.is_relative_to(d) for d in (data.segments, data.text, data.pages))


def check_it_may_fail(
    ctx: RunContext, run: RunState, key: str, state: SourceState | None, error: str
) -> None:
    """An entry with pages may fail alone unless the run rebuilds what holds them."""
    if state is None or not state.chunks:
        return
    if ctx.model_changed:
        raise IndexingError(  # its old pages' vectors are another model's
            f"{key}: {error}; the embedder changed, so every source is embedded again and "
            "none may keep its old pages: nothing was published, the last version keeps "
            "serving"
        )
    if run.salvaged:
        raise IndexingError(  # its old pages name chunks the salvage left behind
            f"{key}: {error}; the run starts from a damaged version and must read every "
            "source again: fix or remove it (the last good version keeps serving)"
        )
    if run.text.previous is None:
        raise IndexingError(  # its pages would be missing from the rebuilt text index
            f"{key}: {error}; the text index is being rebuilt for a new analysis, which "
            "needs every source: fix or remove it (the last version keeps serving)"
        )


def failed_state(state: SourceState, error: str) -> SourceState:
    """A failed entry keeps serving what it had; the error is reported beside it (redacted:
    the version holds it, and an embedder's sentence may quote a key)."""
    since = state.failed_since or iso_utc()
    return msgspec.structs.replace(state, last_error=redact(error), failed_since=since)


def missing_branch(source: SourceConfig, repo: Repo, branch: str) -> str:
    """Why a source with no pages has nothing to index, and what to do."""
    where = source.location
    if is_empty(repo):
        return f"nothing has been pushed to {where} yet: push a branch, and it is indexed"
    branches = ", ".join(ref_tips(repo, "refs/heads/")) or "none"
    if source.branch:
        return (
            f"branch {branch!r} does not exist in {where} (its branches: {branches}): push "
            "it, or set the source's `branch` setting to one of them"
        )
    return (
        f"HEAD of {where} names branch {branch!r}, which does not exist (its branches: "
        f"{branches}): set the source's `branch` setting, or point HEAD at a branch "
        "(`git symbolic-ref HEAD refs/heads/NAME`)"
    )
