"""`Docs`: the answers behind every tool and route, each from one leased index version.

The MCP layer (server/mcp/tools.py) and the HTTP layer (server/http/routes.py) only
translate its answers and its errors: `InvalidArgument` (bad arguments), `NotFound` (a page,
chunk or ref the served version does not hold) and `NoVersion` (nothing to serve yet).
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import msgspec

from docdex.errors import InvalidArgument, NotFound, shown
from docdex.index_format.config import Config, ConfigError, SourceConfig, load_config
from docdex.index_format.layout import DataDir
from docdex.index_format.records import CHUNK_ID, ServedPage, SourceState
from docdex.index_format.ref_names import base_of
from docdex.index_format.run_progress import embedding_sentence, read_progress
from docdex.server.engine import (
    Engine,
    Scope,
    SearchResult,
    VersionReader,
    check_num_results,
    clip,
)
from docdex.server.versions import NoVersion, VersionHolder

from .budget import (
    ANSWER_CAP_CHARS,
    DEFAULT_MAX_CHARS,
    MAX_MAX_CHARS,
    answer_chars,
    check_max_chars,
    within_cap,
)
from .cursors import (
    RESOURCE_PAGE,
    check_lines,
    decode_page_cursor,
    decode_query_cursor,
    encode_page_cursor,
    encode_query_cursor,
    query_filters,
)
from .documents import (
    DESCRIPTION_CHARS,
    Paging,
    chunk_document,
    page_document,
    page_summary,
    page_text,
    source_info,
    version_document,
)
from .freshness import UNKNOWN, FreshnessWatch, indexing_note, partial_notes
from .git_history.source_history import ChangesAsk, SourceHistory
from .health import failing_models, health_report
from .instructions import server_instructions
from .page_views import PageView, page_view
from .permalinks import LinkBook
from .reindex import request_reindex
from .shapes import Changes, Document, PageList, PageSummary, ReindexReceipt, SourceInfo, SourceList
from .source_limits import EVERY_SOURCE, SourceLimit
from .validation import check_doc_id, check_limit, parse_date, unknown_doc
from .widening import search_with_context

if TYPE_CHECKING:
    from docdex.model.protocol import TextEmbedder as Embedder

log = logging.getLogger("docdex.server")


class Docs:
    """Answers for every tool and route, from one leased version each; `for_caller` gives
    the same answers limited to the sources a caller may read."""

    def __init__(
        self,
        data: DataDir,
        embedder: Embedder,
        holder: VersionHolder[Engine],
        reranker: str = "default",
        started: float | None = None,  # time.monotonic() of the start, for uptime_s
    ):
        self.data = data
        self.embedder = embedder
        self.holder = holder
        self.reranker = reranker
        self.started = time.monotonic() if started is None else started
        self.links = LinkBook(data)
        self.freshness = FreshnessWatch(data)
        self.history = SourceHistory(data, self.links)
        self.limit = EVERY_SOURCE
        holder.explain_absence = lambda: _nothing_yet(data)

    def close(self) -> None:
        """Stop following new versions and close what the answers hold open (after the last
        request)."""
        self.holder.stop()
        self.history.close()

    def for_caller(self, limit: SourceLimit) -> Docs:
        """These answers as a caller limited to `limit` gets them: every method sees only
        its sources, as if no other were indexed (the version holder and caches are
        shared)."""
        if limit == self.limit:
            return self
        view = copy.copy(self)
        view.limit = limit
        return view

    def search(
        self,
        query: str,
        num_results: int = 10,
        source: str = "",
        path_prefix: str = "",
        max_chars: int = DEFAULT_MAX_CHARS,
        ref: str = "",
        tags: Sequence[str] = (),
        changed_since: str = "",
    ) -> SearchResult:
        """search_docs and /api/search: the hits' texts hold at most `max_chars`. Without a
        `ref`, each source's default ref; with `changed_since`, only pages changed since then
        (a tag, branch, commit, date or age) up to the commit each entry was indexed at."""
        check_max_chars(max_chars)
        check_num_results(num_results)
        with self.holder.acquire() as engine:
            scope = self._scope(
                engine, _text("source", source), _text("ref", ref), path_prefix, _tags(tags)
            )
            if changed_since:
                since = _text("changed_since", changed_since)
                config = self._config()
                scope = self.history.changed_scope(config, self.limit, engine.index, scope, since)
            result = search_with_context(engine, query, num_results, scope, max_chars)
            result = _with_coverage(self.data, engine.index, scope, result)
        log.info(
            "search %r n=%d%s -> %d hits, version %d, %.1f ms",
            query[:80],
            num_results,
            (f" source={source}" if source else "") + (f" ref={ref}" if ref else ""),
            len(result.results),
            result.index_version,
            result.took_ms,
        )
        return within_cap(self.links.hits(result), "results")

    def query_docs(
        self,
        source: str = "",
        file_path_contains: str = "",
        title_contains: str = "",
        created_after: str = "",
        created_before: str = "",
        limit: int = 20,
        ref: str = "",
        tags: Sequence[str] = (),
        cursor: str = "",
    ) -> PageList:
        """Pages by metadata, sorted by source and path: at most `limit` of `total`, after
        where `cursor` points. Without a `ref`, each source's default ref."""
        check_limit(limit)
        after = parse_date("created_after", created_after)
        before = parse_date("created_before", created_before)
        filters = query_filters(
            source, file_path_contains, title_contains, created_after, created_before, ref, tags
        )
        resume = decode_query_cursor(cursor, filters)
        path_part, title_part = file_path_contains.casefold(), title_contains.casefold()
        with self.holder.acquire() as engine:
            scope = self._scope(
                engine, _text("source", source), _text("ref", ref), tags=_tags(tags)
            )
            index = engine.index
            matched = [
                page
                for page in index.pages.values()
                if scope.admits(page)
                and path_part in page.path.casefold()
                and title_part in page.title.casefold()
                and _created_within(page, after, before)
            ]
            version = index.version
        matched.sort(key=_listing_key)
        following = [p for p in matched if resume is None or _listing_key(p) > resume]
        answer = PageList(
            documents=[
                self.links.summary(page_summary(p, index.ref_of(p.source)))
                for p in following[:limit]
            ],
            total=len(matched),
            truncated=len(following) > limit,
            index_version=version,
        )
        return _with_cursor(within_cap(answer, "documents"), len(following), filters)

    def get_document(
        self,
        doc_id: str,
        start_line: int = 0,
        end_line: int = 0,
        cursor: str = "",
        max_chars: int = DEFAULT_MAX_CHARS,
        ref: str = "",
    ) -> Document:
        """A window of a page (SOURCE:PATH) or of one of its chunks (SOURCE:PATH#chunkN):
        lines start_line..end_line, or where `cursor` points, at most `max_chars` of text."""
        check_doc_id(doc_id)
        check_max_chars(max_chars)
        check_lines(start_line, end_line)
        if cursor and (start_line or end_line):
            raise InvalidArgument("pass either cursor or start_line/end_line, not both")
        paging = Paging(max_chars, start_line, end_line, cursor)
        with self.holder.acquire() as engine:
            index = engine.index
            self._check_seen(index, doc_id)
            try:
                doc_id = index.doc_id_at(doc_id, _text("ref", ref))
            except NotFound:  # a ref no entry indexes: a commit, tag or branch, read from git
                answer = self._document_at(index, doc_id, ref, paging)
                return within_cap(self.links.document(answer), "sections")
            if CHUNK_ID.search(doc_id) and (chunk := index.chunk(doc_id)) is not None:
                answer = chunk_document(index, chunk, paging)
            elif (page := index.pages.get(doc_id)) is not None:
                answer = page_document(index, page, paging)
            else:
                raise unknown_doc(index, doc_id, self._known(index))
        return within_cap(self.links.document(answer), "sections")

    def _document_at(self, index: VersionReader, doc_id: str, ref: str, paging: Paging) -> Document:
        if CHUNK_ID.search(doc_id):
            raise InvalidArgument(
                f"a section id reads the indexed text only; pass the page's id "
                f"({shown(doc_id.partition('#')[0])}) to read it at {shown(ref)}"
            )
        entry, _, path = doc_id.partition(":")
        version = self.history.page(self._config(), self.limit, entry, path, ref)
        return version_document(index, doc_id, version, ref, paging)

    def changes(
        self,
        source: str = "",
        since: str = "",
        until: str = "",
        ref: str = "",
        path_prefix: str = "",
        cursor: str = "",
        max_chars: int = DEFAULT_MAX_CHARS,
    ) -> Changes:
        """The changes tool and /api/changes: the pages changed between `since` and `until`
        in a source's history (read from its repository), a window of about `max_chars` at a
        time; `cursor` continues one."""
        texts = {"source": source, "since": since, "until": until, "ref": ref}
        ask = ChangesAsk(
            **{name: _text(name, value) for name, value in texts.items()},
            path_prefix=path_prefix,
            cursor=cursor,
        )
        answer = self.history.changes(self._config(), self.limit, ask, max_chars)
        log.info(
            "changes %s %s..%s -> %d of %d pages",
            answer.source,
            answer.since.commit[:12] or "start",
            answer.until.commit[:12],
            len(answer.pages),
            answer.total,
        )
        return answer

    def _scope(self, engine: Engine, source: str, *args: Any, **kwargs: Any) -> Scope:
        """The caller's scope of a search; a source the served version lacks that a run is
        indexing (or a request waits for) says so instead of being an unknown source."""
        try:
            return self.limit.scope(engine, source, *args, **kwargs)
        except InvalidArgument:
            if not source or source in engine.index.sources or not self.limit.allows(source):
                raise
            note = indexing_note(self.data, source)
            if not note:
                raise
            raise InvalidArgument(
                f"{note}; search it once its first version is published"
            ) from None

    def list_sources(self) -> SourceList:
        """The indexed sources (each indexed ref an entry), how current each is, then the
        configured sources the served version lacks."""
        states: dict[str, SourceState] = {}
        version, failing, waiting = 0, [], {}  # nothing served yet: the configured sources
        partial: dict[str, str] = {}  # entries published while being read: what they hold
        try:
            with self.holder.acquire() as engine:
                states = self.limit.states(engine.index.manifest.sources)
                version = engine.version
                failing = failing_models(engine.models, self.limit)
                waiting = waiting_by_entry(engine.index)
                partial = partial_notes(self.data, engine.index.manifest, states.__contains__)
        except NoVersion:
            pass
        sources = [
            _with_embedding(
                msgspec.structs.replace(info, note=partial.get(info.name, info.note)),
                waiting.get(info.name, 0),
                self.data,
            )
            for info in self._source_infos(states, fresh=True)
        ]
        answer = SourceList(sources=sources, index_version=version, failing_models=failing)
        return within_cap(answer, "sources")

    def _source_infos(self, states: dict[str, SourceState], fresh: bool) -> list[SourceInfo]:
        """`states` with their descriptions (and, when `fresh`, their freshness, which reads
        the repositories), then the configured sources they lack."""
        config = self._config()
        configured = self.limit.named({s.name: s for s in config.sources})
        current = self.freshness.of(states, config.settings.stale_after_s) if fresh else {}
        sources = [
            source_info(
                state,
                _description(configured.get(base_of(key, state))),
                current.get(key, UNKNOWN),
            )
            for key, state in sorted(states.items())
        ]
        sources += [
            SourceInfo(
                name=name,
                indexed=False,
                description=_description(config),
                note=indexing_note(self.data, name)
                or "configured but not in this index version yet",
            )
            for name, config in configured.items()
            if name not in states
        ]
        return sources

    def _config(self) -> Config:
        try:
            return load_config(self.data)
        except ConfigError as exc:
            log.warning("cannot read %s: %s", self.data.config, exc)
            return Config()

    def instructions(self) -> str:
        """The MCP server's instructions: what is indexed and how to use the tools (asked at
        every connection, so the repositories' tips are not read for it)."""
        try:
            with self.holder.acquire() as engine:
                states = self.limit.states(engine.index.manifest.sources)
        except NoVersion:
            states = {}
        return server_instructions(self._source_infos(states, fresh=False))

    def list_pages(
        self, cursor: str = "", limit: int = RESOURCE_PAGE
    ) -> tuple[list[PageSummary], str]:
        """Pages in doc_id order after `cursor`, and the cursor of the next page ("": none)."""
        after = decode_page_cursor(cursor)
        with self.holder.acquire() as engine:
            index = engine.index
            ids = sorted(
                doc_id
                for doc_id, page in index.pages.items()
                if doc_id > after and self.limit.admits_page(index, page)
            )
            pages = [page_summary(index.pages[doc_id]) for doc_id in ids[:limit]]
        more = len(ids) > limit
        return pages, encode_page_cursor(pages[-1].doc_id) if more else ""

    def read_page(self, source: str, path: str) -> str:
        """A page's markdown for resources/read, cut at the answer cap (with a note saying
        how to read the rest)."""
        doc_id = f"{source}:{path}"
        check_doc_id(doc_id)
        with self.holder.acquire() as engine:
            index = engine.index
            text = page_text(index, self._page(index, doc_id))
        if len(text) <= MAX_MAX_CHARS:
            return text
        window = self.get_document(doc_id, max_chars=MAX_MAX_CHARS)
        return (
            f"{window.text}\n<!-- docdex: the page continues after line {window.end_line} of "
            f"{window.last_line}; get_document(doc_id={doc_id!r}, "
            f"cursor={window.next_cursor!r}) reads on -->\n"
        )

    def page_view(self, doc_id: str) -> PageView:
        """The search page's view of a page (SOURCE:PATH): its markdown rendered."""
        check_doc_id(doc_id)
        with self.holder.acquire() as engine:
            index = engine.index
            served = self._page(index, doc_id)
            view = page_view(index, served, site_dir=self.links.of(served.source).site_dir)
        page = self.links.summary(view.page)
        return msgspec.structs.replace(view, page=page, permalink=page.url)

    def reindex(self, source: str = "") -> ReindexReceipt:
        """File a reindex request (the server itself never writes the index); "" = every
        source the caller may read."""
        return request_reindex(self.data, self.holder, source, self.limit)

    def health(self) -> tuple[int, dict[str, Any]]:
        """/health: (HTTP status, body)."""
        stale_after_s = self._config().settings.stale_after_s
        return health_report(
            self.data,
            self.embedder,
            self.holder,
            self.reranker,
            self.started,
            lambda states: self.freshness.of(states, stale_after_s),
            self.limit,
        )

    def _page(self, index: VersionReader, doc_id: str) -> ServedPage:
        self._check_seen(index, doc_id)
        page = index.pages.get(doc_id)
        if page is None:
            raise unknown_doc(index, doc_id, self._known(index))
        return page

    def _check_seen(self, index: VersionReader, doc_id: str) -> None:
        """NotFound for an id of a source the caller may not read: the error an id of a
        source never indexed gets, so that it does not say the document exists."""
        if not self.limit.admits_id(index, doc_id):
            raise unknown_doc(index, doc_id, self._known(index))

    def _known(self, index: VersionReader) -> list[str] | None:
        return None if self.limit.unlimited else self.limit.entries(index)


def waiting_by_entry(index: VersionReader) -> dict[str, int]:
    """Per entry, its chunks that wait for vectors (in keywords-only segments)."""
    keywords = {s.id for s in index.manifest.segments if s.keywords_only}
    out: dict[str, int] = {}
    for page in index.pages.values() if keywords else ():
        count = sum(1 for ref in page.chunks if ref.segment in keywords)
        if count:
            out[page.source] = out.get(page.source, 0) + count
    return out


def _with_embedding(info: SourceInfo, waiting: int, data: DataDir) -> SourceInfo:
    """An entry whose chunks wait for vectors says how far their embedding is."""
    if not waiting:
        return info
    said = embedding_sentence(waiting, info.chunks, read_progress(data))
    return msgspec.structs.replace(info, note="; ".join(n for n in (info.note, said) if n))


def _with_coverage(
    data: DataDir, index: VersionReader, scope: Scope, result: SearchResult
) -> SearchResult:
    """A search over an entry published while it was read says what its hits cover."""
    notes = partial_notes(data, index.manifest, scope.reads)
    return msgspec.structs.replace(result, note="; ".join(notes.values())) if notes else result


def _nothing_yet(data: DataDir) -> str:
    note = indexing_note(data)
    return f"nothing is served yet: {note}" if note else ""


def _created_within(page: ServedPage, after: datetime | None, before: datetime | None) -> bool:
    if after is None and before is None:
        return True
    try:
        created = datetime.fromisoformat(page.created)
    except ValueError:
        return False  # no usable date: it cannot satisfy a date filter
    created = created if created.tzinfo else created.replace(tzinfo=UTC)
    return (after is None or created > after) and (before is None or created < before)


def _with_cursor(answer: PageList, following: int, filters: str) -> PageList:
    """The answer with the cursor after its last page when `following` pages came after the
    cursor it was asked with; a page fewer should the cursor take it over the cap."""
    while True:
        more = len(answer.documents) < following
        last = answer.documents[-1] if answer.documents else None
        cursor = encode_query_cursor(filters, (last.source, last.path)) if more and last else ""
        paged = msgspec.structs.replace(answer, truncated=more, next_cursor=cursor)
        if not cursor or answer_chars(paged) <= ANSWER_CAP_CHARS:
            return paged
        answer = msgspec.structs.replace(
            answer, documents=answer.documents[:-1], omitted=answer.omitted + 1
        )


def _listing_key(page: ServedPage) -> tuple[str, str]:
    """query_docs' order, and where its cursor resumes."""
    return page.source, page.path


def _description(config: SourceConfig | None) -> str:
    return clip(config.description, DESCRIPTION_CHARS) if config else ""


def _text(name: str, value: str) -> str:
    if not isinstance(value, str) or "\n" in value or len(value) > 300:
        raise InvalidArgument(f"{name} must be a single-line name, got {str(value)[:60]!r}")
    return value


def _tags(tags: Sequence[str]) -> list[str]:
    if isinstance(tags, str) or len(tags) > 20 or any(not isinstance(t, str) for t in tags):
        raise InvalidArgument("tags must be a list of at most 20 tag names")
    return [_text("tags", tag) for tag in tags]
