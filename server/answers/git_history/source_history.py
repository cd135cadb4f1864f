"""The answers read from the sources' git history (docdex.history, adr/0043), not the index:

- `changes`: the pages changed between two points of a source's history, a window that fits
  `max_chars` at a time, each with its commits, lines, sections and links; a cursor pins
  the next window to the same commits;
- `changed_scope`: a search's scope narrowed to the pages changed since a point, each entry
  compared at the commit it was indexed at;
- `page`: a page as of a commit, a tag, a branch or a date.

Every call reads the repository of a source the caller may read (its configuration says
where: the location, or a remote's mirror); `History` bounds each call, keeps the ranges it
read and the repositories open. The calls are synchronous: the tools and routes run them in
worker threads.
"""

from __future__ import annotations

import logging

import msgspec

from docdex.errors import DocdexError, InvalidArgument, NotFound, shown
from docdex.history import ChangeSet, History, PageChange, PageVersion, SourceRepository
from docdex.index_format.config import Config, SourceError
from docdex.index_format.layout import DataDir
from docdex.index_format.ref_names import split_key
from docdex.server.engine import Scope, VersionReader, clip, resource_uri

from ..budget import answer_chars, check_max_chars, longest_prefix, within_cap
from ..cursors import ChangesCursor, decode_changes_cursor, encode_changes_cursor
from ..permalinks import LinkBook
from ..shapes import ChangedPage, Changes
from ..source_limits import SourceLimit

log = logging.getLogger("docdex.server")

WORKTREE = "+worktree"  # an indexed commit with a checkout's edits on top (docdex watch)
PAGE_CHARS = 600  # about what one changed page takes in an answer: pages asked per window
MAX_WINDOW = 200
SECTION_CHARS = 300  # of a changed section's breadcrumb: headings are text anyone can push


class ChangesAsk(msgspec.Struct, frozen=True):
    """What a `changes` call asks, its arguments as given."""

    source: str = ""
    since: str = ""
    until: str = ""
    ref: str = ""
    path_prefix: str = ""
    cursor: str = ""


class SourceHistory:
    """The history answers of one server (one `History`, shared by every caller)."""

    def __init__(self, data: DataDir, links: LinkBook) -> None:
        self.data = data
        self.links = links
        self.history = History()

    def close(self) -> None:
        self.history.close()

    def changes(
        self, config: Config, limit: SourceLimit, ask: ChangesAsk, max_chars: int
    ) -> Changes:
        check_max_chars(max_chars)
        where = _pinned(ask) if ask.cursor else _first(ask)
        base, entry_ref = split_key(where.source or _only_source(config, limit))
        repository = self._repository(config, limit, base)
        window = max(1, min(MAX_WINDOW, max_chars // PAGE_CHARS))
        found = self.history.changes(
            repository,
            where.since,
            where.until,
            where.ref or entry_ref,
            where.path_prefix,
            where.offset,
            window,
        )
        answer = self._answer(where.source or base, found)

        def keeping(n: int) -> Changes:
            return _windowed(answer, n, where, found)

        fitting = longest_prefix(len(answer.pages), lambda n: answer_chars(keeping(n)) <= max_chars)
        return within_cap(keeping(max(fitting, min(1, len(answer.pages)))), "pages")

    def changed_scope(
        self, config: Config, limit: SourceLimit, index: VersionReader, scope: Scope, since: str
    ) -> Scope:
        """`scope` keeping only the pages changed since `since`: each entry searched is
        compared from `since` to the commit it was indexed at. An entry whose history
        cannot answer (`since` names nothing there, its repository cannot be read, it is
        configured no more) is left out; when none can, the first one's error is the
        answer."""
        if scope.pages is not None and not scope.pages:
            return scope  # nothing passes already
        states = index.manifest.sources
        entries = sorted(scope.entries or states)
        pages: set[str] = set()
        failures: list[DocdexError] = []
        for entry in entries:
            state = states[entry]
            if not state.commit:
                continue
            base, ref = split_key(entry)
            try:
                repository = self._repository(config, limit, base)
                until = state.commit.removesuffix(WORKTREE)
                changed = self.history.changed_paths(repository, since, until, ref)
            except (InvalidArgument, NotFound, SourceError) as exc:
                log.info("changed_since %r: %s left out: %s", since[:80], entry, exc)
                failures.append(exc)
                continue
            pages.update(f"{entry}:{path}" for path in changed.paths)
        if failures and len(failures) == len(entries):
            raise failures[0]
        kept = frozenset(pages) if scope.pages is None else scope.pages & pages
        return msgspec.structs.replace(scope, pages=kept)

    def page(
        self, config: Config, limit: SourceLimit, entry: str, path: str, at: str
    ) -> PageVersion:
        """The page `path` of the manifest entry `entry` as of `at`, read from git."""
        base, ref = split_key(entry)
        return self.history.page(self._repository(config, limit, base), path, at, ref)

    def _repository(self, config: Config, limit: SourceLimit, name: str) -> SourceRepository:
        mine = limit.names(s.name for s in config.sources)
        if name not in mine:
            raise InvalidArgument(
                f"unknown source {shown(name)}; valid sources: {', '.join(mine) or '(none)'}"
            )
        levels = config.settings.section_levels
        return SourceRepository.of(self.data, config.source(name), levels)

    def _answer(self, entry: str, found: ChangeSet) -> Changes:
        links = self.links.of(entry)
        ref = found.ref.asked or found.ref.kind

        def page(change: PageChange) -> ChangedPage:
            gone = change.kind == "deleted"
            commit = found.since.commit if gone else found.until.commit
            fields = msgspec.structs.asdict(change)
            fields["sections"] = [clip(s, SECTION_CHARS) for s in change.sections]
            return ChangedPage(
                **fields,
                doc_id=f"{entry}:{change.path}",
                uri="" if gone else resource_uri(entry, change.path),
                url=links.permalink(entry, ref, commit, change.path, 0, 0),
            )

        return Changes(
            source=entry,
            ref=found.ref,
            since=found.since,
            until=found.until,
            total=found.total,
            offset=found.offset,
            pages=[page(change) for change in found.pages],
            commits=found.commits,
            commits_walked=found.commits_walked,
            complete=found.complete,
            notes=found.notes,
        )


def _first(ask: ChangesAsk) -> ChangesCursor:
    source, entry_ref = split_key(ask.source)
    if ask.ref and entry_ref and ask.ref != entry_ref:
        raise InvalidArgument(
            f"source {shown(ask.source)} names ref {shown(entry_ref)}, ref says "
            f"{shown(ask.ref)}: pass one of them"
        )
    return ChangesCursor(ask.source, ask.ref, ask.since, ask.until, ask.path_prefix, 0)


def _pinned(ask: ChangesAsk) -> ChangesCursor:
    """The cursor's range; the arguments given with it must not ask for another."""
    cursor = decode_changes_cursor(ask.cursor)
    given = {"source": ask.source, "path_prefix": ask.path_prefix}
    pinned = {"source": cursor.source, "path_prefix": cursor.path_prefix}
    for name, value in given.items():
        if value and value != pinned[name]:
            raise InvalidArgument(
                f"this cursor continues {name} {shown(pinned[name])}, not {shown(value)}; "
                "pass it with the arguments it came with, or none"
            )
    return cursor


def _only_source(config: Config, limit: SourceLimit) -> str:
    """The caller's one source, when `source` is left empty."""
    mine = limit.names(s.name for s in config.sources)
    if len(mine) != 1:
        raise InvalidArgument(
            f"source is required: one of {', '.join(mine) or '(none configured)'}"
        )
    return mine[0]


def _windowed(answer: Changes, count: int, where: ChangesCursor, found: ChangeSet) -> Changes:
    """`answer` with its first `count` pages, their commits only, and the cursor to what
    follows them."""
    kept = answer.pages[:count]
    named = {commit for page in kept for commit in page.commits}
    following = found.offset + len(kept)
    cursor = ""
    if following < found.total:
        cursor = encode_changes_cursor(
            ChangesCursor(
                source=answer.source,
                ref=where.ref,
                since=found.since.commit,
                until=found.until.commit,
                path_prefix=where.path_prefix,
                offset=following,
            )
        )
    return msgspec.structs.replace(
        answer,
        pages=kept,
        commits=[commit for commit in answer.commits if commit.id in named],
        next_cursor=cursor,
    )
