"""What a search answers: its hits, as search_docs, /api/search, `docdex search` and
`docdex eval` all receive them, and the limits on the metadata a file controls.

A hit carries the chunk's raw markdown (identifiers live in code spans, URLs and HTML), its
breadcrumb and lines, and the page's last commit; titles and headings are clipped so that no
page can make an answer large. `url`, `page_url`, `truncated` and the context fields are
left for the answering layer to fill (permalinks, the text budget, the widening).
"""

from __future__ import annotations

from urllib.parse import quote

import msgspec

from docdex.index_format.records import CHUNK_ID

from .loaded import LoadedVersion
from .retrieval import Candidate

RESOURCE_SCHEME = "docdex"
RESOURCE_TEMPLATE = "docdex://{source}/{+path}"
# RFC 6570 reserved expansion keeps these as they are; `?`, `#`, `[` and `]` are escaped too,
# so that no client mistakes part of a path for a query or a fragment.
_URI_SAFE = "/:@!$&'()*+,;="
TITLE_CHARS = 300
BREADCRUMB_JOIN = " › "
MAX_HEADINGS = 8


class OutlineEntry(msgspec.Struct, frozen=True):
    """A section of the page and the lines it spans (get_document reads them)."""

    heading: str  # the first entry: the section's own heading; then its subsections', below it
    start_line: int
    end_line: int


class HitCopy(msgspec.Struct, frozen=True, omit_defaults=True):
    """Another page's lines holding the same text as the hit's (a copy of the page in
    another version folder, say), folded into the hit: get_document(source:path,
    start_line, end_line) reads it; a search with its path_prefix or ref returns it."""

    source: str
    path: str
    start_line: int
    end_line: int
    ref: str = ""  # the branch or tag the copy was indexed from


class Hit(msgspec.Struct, omit_defaults=True):
    """One ranked chunk. An answer leaves out what another field already says (the page's id
    is `chunk_id` up to its `#`, its resource URI follows from `source` and `path`, the
    breadcrumb's parts are `heading`'s) and every field at its default."""

    chunk_id: str  # "source:path#chunkN": get_document reads it, or the page up to the '#'
    source: str
    path: str
    title: str
    heading: str  # the breadcrumb, outermost first: "A › B › C"
    # The chunk's raw markdown, or its context's (`context`); in an answer, as the site shows
    # it (server/answers/hit_text.py: includes carried, MDX imports and components left out)
    text: str
    score: float
    start_line: int  # the file lines `text` covers, inclusive
    end_line: int
    commit: str  # the page's last commit
    # "bm25" | "dense" | "both": which retriever found it; "keywords": BM25, the chunk's
    # vectors are not embedded yet (a version published keywords first, adr/0042)
    match: str
    modified: str = ""  # when the page last changed (ISO 8601, from its git history)
    ref: str = ""  # the branch or tag the page was indexed from
    truncated: bool = False  # `text` was cut to fit the answer's budget (server/answers/budget.py)
    url: str = ""  # these lines at `commit` on the source's forge (permalinks.py; "" = none)
    page_url: str = ""  # the page on the published docs site ("" = no site_url)
    # How `text` was widened around the chunk that matched (server/answers/widening.py):
    # "" not at all; "section": it is the whole section `heading` names (its subsections
    # too); "neighbours": it holds chunks beside the match in that section.
    # chunk_start_line-chunk_end_line are then the matched chunk's own lines.
    context: str = ""
    chunk_start_line: int = 0
    chunk_end_line: int = 0
    # The files whose text `text` carries in place of the include lines naming them
    # (server/answers/hit_text.py), in text order.
    included: list[str] = []
    # When `text` holds only part of its section: that section and its subsections, so
    # the rest is one get_document(doc_id, start_line, end_line) away (widening.py).
    outline: list[OutlineEntry] = []
    # Later hits whose text is the same as (part of) this one's, folded into it: where
    # else that text stands (server/answers/widening.py).
    copies: list[HitCopy] = []

    @property
    def matched_lines(self) -> tuple[int, int]:
        """The lines of the chunk that matched, within `start_line`-`end_line`."""
        if self.context:
            return self.chunk_start_line, self.chunk_end_line
        return self.start_line, self.end_line

    @property
    def doc_id(self) -> str:
        """The page's id, "source:path"."""
        return CHUNK_ID.sub("", self.chunk_id)

    @property
    def uri(self) -> str:
        """The page as an MCP resource: docdex://SOURCE/PATH."""
        return resource_uri(self.source, self.path)

    @property
    def headings(self) -> list[str]:
        """The breadcrumb's headings, outermost first."""
        return self.heading.split(BREADCRUMB_JOIN) if self.heading else []


class SearchResult(msgspec.Struct):
    results: list[Hit]
    index_version: int
    took_ms: float
    low_confidence: bool
    omitted: int = 0  # hits left out to keep the answer under the cap (server/answers/budget.py)
    # what the hits cover when an entry searched was published while still being read
    note: str = ""


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def clip_headings(headings: list[str]) -> list[str]:
    return [clip(h, TITLE_CHARS) for h in headings[:MAX_HEADINGS]]


def breadcrumb(headings: list[str]) -> str:
    return BREADCRUMB_JOIN.join(clip_headings(headings))


def resource_uri(source: str, path: str) -> str:
    """The page's MCP resource URI, the expansion of RESOURCE_TEMPLATE."""
    # An entry of another ref ("docs@release/1.0") keeps its '/' escaped, within {source}.
    return f"{RESOURCE_SCHEME}://{quote(source, safe='@')}/{quote(path, safe=_URI_SAFE)}"


def to_hit(version: LoadedVersion, c: Candidate) -> Hit:
    chunk = c.chunk
    page = version.pages.get(chunk.doc_id)
    return Hit(
        chunk_id=chunk.chunk_id,
        source=chunk.source,
        path=chunk.path,
        ref=version.ref_of(chunk.source),
        title=clip(chunk.title, TITLE_CHARS),
        heading=breadcrumb(chunk.headings),
        text=chunk.text,
        score=round(float(c.score), 6),
        start_line=chunk.start_line,
        end_line=chunk.end_line,
        commit=page.commit if page else "",
        match=c.match,
        modified=page.modified if page else "",
    )
