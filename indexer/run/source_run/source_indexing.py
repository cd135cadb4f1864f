"""One configured source in a run: its default ref, then its other refs, each a `SourceRun`
diffed against what the previous version indexed and applied (old pages tombstoned, new
pages streamed, then embedded), within the source's budget (source_budget.SourceBudget).

A source fails on its own and keeps serving what it had: a ref that fails before it changed
anything is recorded as failed and the run goes on; a source that fails after it began to
change what the run publishes (or runs out of time) raises SourceAbandoned, and the run
starts again without it (pipeline.py). Errors of the run itself (its own files, a full disk)
are no source's and stop the run.
"""

from __future__ import annotations

from dulwich.repo import Repo

from docdex.index_format.config import SourceConfig
from docdex.index_format.ref_names import base_of, split_key
from docdex.index_format.store import load_pages
from docdex.indexer.git.repo import default_branch, open_repo
from docdex.indexer.sources.refs import FoundRef, RefFamily, discover
from docdex.indexer.sources.remote import local_repository
from docdex.model.protocol import EmbedderUnavailable

from ..context import RunContext, RunState, SourceAbandoned
from ..passage_model import embeds_remotely
from ..report import SourceReport
from ..source_budget import OverBudget, SourceBudget
from .failures import check_it_may_fail, failed_state, failure_sentence
from .source_run import MissingBranch, SourceRun


def drop_entry(ctx: RunContext, run: RunState, key: str) -> None:
    """A removed source, or a ref that is gone or no longer selected: its pages leave."""
    state = run.states.pop(key)
    for page in load_pages(ctx.data, state.pages_file):
        run.remove_page(page)
    run.text.delete_source(key)
    run.removed_sources.append(key)
    run.reports.append(SourceReport(name=key, status="removed", deleted=state.files))


def index_source(ctx: RunContext, run: RunState, source: SourceConfig) -> None:
    """The source's default ref, then its other refs (each failing on its own), and with a
    time budget the embedding of their new text, all within the source's budget."""
    family = RefFamily.of(ctx.data, source.name, ctx.previous)
    budget = SourceBudget(source.name, ctx.source_timeout_s, ctx.clock)
    default = SourceRun(ctx, run, source, None, family, budget)
    given_up = run.given_up.get(source.name)
    if given_up is not None:  # failed in an earlier attempt of this run (pipeline.py)
        _source_failed(default, given_up)
        return
    run.spending.current = budget
    try:
        _read_source(ctx, run, default)
        if budget.timeout_s is not None or embeds_remotely(ctx.passage_model.spec):
            _embed(run, source)
    finally:
        run.spending.current = None


def _read_source(ctx: RunContext, run: RunState, default: SourceRun) -> None:
    """The source's refs diffed and their new pages streamed; what fails is the source's."""
    source = default.config
    try:
        with open_repo(local_repository(ctx.data, source)) as repo:
            found = discover(repo, source, default_branch(repo, source.branch))
            default.report.ignored_refs = found.ignored
            _index_ref(default, repo)
            _index_refs(ctx, run, default, repo, found.refs)
    except Exception as exc:
        error = failure_sentence(ctx, exc, source, default.key)
        if _applied(run, source):
            raise SourceAbandoned(source.name, error) from exc
        _source_failed(default, error)


def _embed(run: RunState, source: SourceConfig) -> None:
    """The source's new text, embedded within its time budget or by an endpoint (else the
    stream writes several sources' pages into one segment as they come): running out of
    time or the endpoint failing is the source's failure; anything else that fails as its
    segments are written is the run's (its own files, its disk)."""
    try:
        run.stream.flush()
    except (OverBudget, EmbedderUnavailable) as exc:
        raise SourceAbandoned(source.name, str(exc)) from exc


def _index_refs(
    ctx: RunContext, run: RunState, default: SourceRun, repo: Repo, refs: list[FoundRef]
) -> None:
    """The source's other refs: those no longer there (or selected) leave, the others are
    indexed like pushes, a new one from what the source's other refs lend it."""
    source = default.config
    wanted = {ref.key for ref in refs}
    for key, state in list(run.states.items()):
        if base_of(key, state) == source.name and not state.default_ref and key not in wanted:
            drop_entry(ctx, run, key)
    for ref in refs:
        src = SourceRun(ctx, run, source, ref, default.family, default.budget)
        try:
            _index_ref(src, repo)
        except OverBudget:
            raise  # the whole source is out of time
        except Exception as exc:
            _ref_failed(src, exc)


def _index_ref(src: SourceRun, repo: Repo) -> None:
    """One ref diffed and what changed in it applied."""
    found = src.diff(repo)
    if isinstance(found, MissingBranch):
        src.remove(repo, found.branch)
        return
    if found is not None:
        src.tombstone(found)
        src.stream(found)
    src.record(found)


def _applied(run: RunState, source: SourceConfig) -> bool:
    """Whether any ref of the source began to change what the run publishes."""
    return any(split_key(key)[0] == source.name for key in run.kept_pages)


def _source_failed(default: SourceRun, error: str) -> None:
    """The whole source failed (its repository, its budget): each of its entries keeps
    what it had and reports the error; a default ref never indexed gets a failed state."""
    default.fail(error)
    run = default.run
    for key, state in list(run.states.items()):
        if key != default.key and base_of(key, state) == default.config.name:
            check_it_may_fail(default.ctx, run, key, state, error)
            run.states[key] = failed_state(state, error)


def _ref_failed(src: SourceRun, exc: Exception) -> None:
    """A ref failed on its own; once it changed what the run publishes, its source is given
    up on."""
    error = failure_sentence(src.ctx, exc, src.config, src.key)
    if src.key in src.run.kept_pages:
        raise SourceAbandoned(src.config.name, error) from exc
    src.fail(error)
