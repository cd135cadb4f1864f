"""The shapes of the tools' answers (besides search_docs' `SearchResult`): one msgspec Struct
each, encoded as the tool's JSON and turned into its MCP output schema (tools.py), so the
schema cannot drift from what is sent.
"""

from __future__ import annotations

import msgspec

from docdex.history import ChangeKind, CommitInfo, Point


class PageSummary(msgspec.Struct):
    doc_id: str
    source: str
    path: str
    uri: str  # the page as an MCP resource: docdex://SOURCE/PATH
    title: str
    description: str
    tags: list[str]
    created: str
    modified: str
    commit: str  # the page's last commit
    chunks: int
    ref: str = ""  # the branch or tag the page was indexed from
    url: str = ""  # the file at `commit` on the source's forge (permalinks.py; "" = none)
    page_url: str = ""  # the page on the published docs site ("" = no site_url)
    dates_note: str = ""  # why `created`/`modified` may be off ("" = exact: full history)


class PageList(msgspec.Struct):
    """query_docs: pages by metadata, at most `limit` of `total`; `next_cursor` continues."""

    documents: list[PageSummary]
    total: int  # pages the filters match, before and after the cursor
    truncated: bool  # more pages follow these: pass next_cursor as `cursor` for them
    index_version: int
    omitted: int = 0  # pages left out to keep the answer under the cap (budget.py)
    next_cursor: str = ""  # pass as `cursor` (with the same filters) to continue ("": done)


class Section(msgspec.Struct):
    chunk_id: str
    heading: str
    start_line: int
    end_line: int


class Document(msgspec.Struct):
    """get_document: a window of a page (kind "page") or of one section (kind "chunk").

    `text` is an exact slice of the page's (or section's) text: the answers that `next_cursor`
    leads to, concatenated, give back the whole of it.
    """

    kind: str  # "page" | "chunk"
    doc_id: str
    source: str
    path: str
    uri: str
    title: str
    commit: str
    text: str
    start_line: int  # file lines the text covers, inclusive
    end_line: int
    last_line: int  # the page's (or the section's) last line in the file
    truncated: bool  # more text follows within the requested lines
    next_cursor: str  # pass as `cursor` to continue ("" when nothing follows)
    index_version: int
    ref: str = ""  # the branch or tag the page was indexed from
    url: str = ""  # start_line-end_line at `commit` on the source's forge ("" = none)
    page_url: str = ""  # the page on the published docs site ("" = no site_url)
    # A page's own fields.
    description: str = ""
    tags: list[str] = []
    created: str = ""
    modified: str = ""
    size: int = 0  # bytes of the file at `commit`
    chunks: int = 0
    text_kind: str = ""
    sections: list[Section] = []  # the sections that overlap start_line-end_line
    omitted: int = 0  # sections left out to keep the answer within max_chars (and the cap)
    # A section's own fields.
    chunk_id: str = ""
    headings: list[str] = []
    heading: str = ""
    previous_chunk_id: str | None = None
    next_chunk_id: str | None = None


class SourceInfo(msgspec.Struct):
    name: str
    indexed: bool
    description: str  # from docdex.toml: what the source holds, in a line
    kind: str = ""  # "bare" | "checkout" | "remote" ("" until indexed)
    branch: str = ""
    commit: str = ""
    files: int = 0
    chunks: int = 0
    indexed_at: str = ""
    last_error: str = ""  # why its last run failed ("" = it did not)
    failed: bool = False  # its last run failed: what it serves is from `commit`, if any
    failed_since: str = ""  # when its runs began to fail
    problems: int = 0  # files the last run could not index (`docdex inspect source`)
    ref: str = ""  # the branch or tag this entry indexes (entries "source@ref": other refs)
    ref_kind: str = ""  # "branch" | "tag"
    tip: str = ""  # the ref's commit in the repository now ("" = unknown)
    behind: int | None = None  # commits the index lacks (None = unknown)
    behind_since: str = ""  # when the index fell behind ("" = it is not)
    queued: bool = False  # a request to index this source waits in the queue
    stale: bool = False  # behind for longer than the `stale_after_s` setting
    note: str = ""


class FailingModel(msgspec.Struct):
    """An endpoint searches use that is failing: the query embedder's (queries are answered
    by BM25 alone) or the reranker's (hits keep their fused order)."""

    role: str  # "embedder" | "reranker"
    error: str  # why, in a sentence (withheld from a token limited to some sources)
    since: str  # when it began to fail, ISO 8601 UTC


class SourceList(msgspec.Struct):
    sources: list[SourceInfo]
    index_version: int
    omitted: int = 0  # sources left out to keep the answer under the cap (budget.py)
    failing_models: list[FailingModel] = []  # [] = every endpoint searches use answers


class ReindexReceipt(msgspec.Struct):
    request_id: str
    source: str  # "" = every source
    requested_at: str
    already_pending: bool  # the same request was already waiting; no new one was filed
    serving_version: int | None
    message: str


class ChangedPage(msgspec.Struct, omit_defaults=True):
    """One page of a `changes` answer. `doc_id` with get_document's `ref` reads this version
    of it: ref = the answer's until.commit (since.commit for a deleted page)."""

    path: str  # at `until` (a deleted page: where it was)
    kind: ChangeKind  # "added" | "modified" | "deleted" | "renamed"
    doc_id: str
    uri: str = ""  # the page as an MCP resource, as indexed ("" for a deleted page)
    url: str = ""  # the file at that commit on the source's forge ("" = none)
    old_path: str = ""  # a renamed page's path at `since`
    commits: list[str] = []  # ids of the range's commits that touched it, newest first
    commits_omitted: int = 0  # older ones past the bound, not listed
    lines_added: int | None = None  # left out: not counted (`note` says why)
    lines_removed: int | None = None
    sections: list[str] = []  # breadcrumbs of the sections whose text changed ("": the top)
    sections_omitted: int = 0
    front_matter: bool = False  # its front matter changed
    note: str = ""


class Changes(msgspec.Struct):
    """changes: the pages changed between two points of a source's history, in path order,
    `pages` being `total`'s window from `offset`; the commits they name, once each."""

    source: str
    ref: Point  # the branch or tag read, at its tip
    since: Point
    until: Point
    total: int  # pages changed in the whole range
    offset: int
    pages: list[ChangedPage]
    commits: list[CommitInfo]  # newest first
    commits_walked: int
    complete: bool  # nothing left out: every commit walked, every page here read
    next_cursor: str = ""  # pass as `cursor` for the pages after these ("" = none)
    notes: list[str] = []  # what is missing and why: history cut, a bound, contents missing
    omitted: int = 0  # pages left out to keep the answer under the cap (budget.py)
