"""Hits that answer on their own: each hit's chunk widened, within its share of the answer's
budget, to the section around it, and a hit that an earlier one already holds folded into it.

A chunk is a window of a section, and the answer an agent wants often stands in the rest of
it: a hit of one line (`ADD install.sh`), a list the chunker cut. In rank order, each hit
widens to its own section (its heading with the subsections below it) when that fits; a hit
whose section does not fit takes the chunks beside it in that section, nearest first.
"Fits" is within `max_chars` and the hit's allowance of the answer's budget (budget.py).
Climbing on to the enclosing sections of a short one held no more judged sections on any
corpus measured, for more characters (docs/retrieval.md).

The text is a slice of the page (start_line-end_line), shown as the site shows it
(hit_text.py); the matched chunk's lines are chunk_start_line-chunk_end_line, and `context`
says how it was widened. A hit whose text holds only part of a section longer than the
bound carries the outline of its top-level section (`outline_of`). No line of a
page comes twice. A later hit whose chunk an earlier hit's text holds adds nothing: it is
left out, and the next one takes its place. A later hit whose section holds earlier hits of
its page (a page's first section, which is the whole page, after a subsection) is folded
into the first of them: that one keeps its rank, chunk and score and shows the section, the
others are left out. Otherwise a later hit's widening stops at the lines earlier hits of its
page show: it takes the chunks beside it up to them. A page's hits after its first two
follow the other pages' hits, so that fragments of one page do not fill the list
(docs/retrieval.md, "Hits with their context").

Versioned docs keep a copy of a page per version folder. A later hit of another page whose
chunk is the same as one that an earlier hit's text holds (the same content hash: the same
headings and cleaned text) is a copy: it is folded into the earlier hit, which lists where
its text stands in the copy's page (`copies`: the run of chunks around the copy's own that
are the same as the earlier hit's, place by place), and the next hit takes its place. A
later hit's widening stops at the lines listed as copies, as at the lines earlier hits of
its page show: a copy's page then shows only what differs. Since copies can fold in most of
a search's first hits, the engine's hits are taken a batch at a time (twice as many as
answered, at least five more; the page rule applies within a batch), the next batch while
the answer is short.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import msgspec

from docdex.index_format.reassembly import reassemble
from docdex.index_format.records import CHUNK_ID, ChunkRecord, chunk_id
from docdex.server.engine import (
    MAX_RESULTS,
    Engine,
    Hit,
    HitCopy,
    OutlineEntry,
    Scope,
    SearchResult,
    VersionReader,
    breadcrumb,
)

from .budget import FLOOR_CHARS, Budget
from .hit_text import shown as shown_text

# A widened text holds at most this many characters (docs/retrieval.md, "Hits with their
# context"): 4,000 held the most judged sections of the sizes measured, and keeps a 10-hit
# answer within the default budget.
CONTEXT_CHARS = 4_000
# At most this many hits of one page come before the other pages' hits, which would else be
# crowded out by fragments of one long page; its further hits follow them (not dropped: a
# search scoped to one page still gets them).
PAGE_HITS = 2
# Hits taken as a batch beyond those answered (at least), to take the place of hits folded
# in; the next batches follow when these run out (copies).
SPARE_HITS = 5

# A hit whose text holds only part of its section carries the section's outline, at most
# this many of its subsections, those around the hit's lines when it has more.
OUTLINE_ENTRIES = 20
OUTLINE_ENTRY_CHARS = 40  # what an entry's metadata counts in the budget, besides its heading

SECTION = "section"
NEIGHBOURS = "neighbours"

Lines = tuple[int, int]  # a page's lines, first and last
ChunkCache = dict[str, ChunkRecord | None]  # chunks read, by id (None: not in the version)


def _batch(num_results: int) -> int:
    """How many of the engine's hits an answer of `num_results` takes first (a batch)."""
    return min(num_results + max(num_results, SPARE_HITS), MAX_RESULTS)


def search_with_context(
    engine: Engine, query: str, num_results: int, scope: Scope, max_chars: int, **shaping: Any
) -> SearchResult:
    """search_docs' hits: the engine's MAX_RESULTS best, shaped by `with_context`
    (`shaping`: its other arguments). So many, because copies may fold in most of the first
    hits; a longer list costs the search little (it slices a ranking already made)."""
    found = engine.search(query, MAX_RESULTS, scope)
    return with_context(engine.index, found, num_results, max_chars, **shaping)


def with_context(
    index: VersionReader,
    result: SearchResult,
    num_results: int,
    max_chars: int,
    context_chars: int = CONTEXT_CHARS,
    page_hits: int = PAGE_HITS,
    outlines: bool = True,
    copies: bool = True,
) -> SearchResult:
    """The first `num_results` hits of `result` that no earlier one holds, `page_hits` of a
    page before the other pages' in each batch taken (0: any number), each widened to at
    most `context_chars` within its allowance of `max_chars` (0: not widened) and cut to
    that allowance, with its section's outline when it holds only part of it (and
    `outlines`), and, with `copies`, the later hits that are copies of its text folded into
    it and listed."""
    budget = Budget(max_chars)
    wanted = min(num_results, len(result.results))
    kept: list[Hit] = []
    read: ChunkCache = {}
    folded = _Copies(index, read)
    for hit in _pages_spread(result.results, page_hits, _batch(num_results)):
        if len(kept) == wanted:
            break
        if any(_holds(earlier, hit) for earlier in kept):
            continue
        if copies and folded.fold(kept, hit):
            continue
        after = wanted - len(kept) - 1
        room = min(context_chars, budget.allowance(after))
        outline_past = context_chars if outlines else 0
        elsewhere = folded.lines(kept, hit.doc_id)
        spending = _Spending(budget, after, context_chars > 0, outline_past, read, elsewhere)
        kept = _with_hit(index, kept, hit, room, spending)
    return msgspec.structs.replace(result, results=[folded.listed(hit) for hit in kept])


class _Spending(NamedTuple):
    """What the next hit may spend: the answer's budget, the hits still to come after it;
    whether its text is shown as the site shows it (hit_text.py), and the length of a
    section past which a hit holding part of it takes its outline (0: none)."""

    budget: Budget
    after: int
    readable: bool
    outline_past: int
    read: ChunkCache  # the chunks read for the answer so far
    elsewhere: Sequence[Lines] = ()  # lines of its page listed as copies of earlier hits


def _with_hit(
    index: VersionReader, kept: list[Hit], hit: Hit, room: int, spending: _Spending
) -> list[Hit]:
    """`kept` and `hit`, widened, with no line twice: when `hit`'s section holds the earlier
    hits of its page that it overlaps, it is folded into the first of them; otherwise its
    widening stops at their lines."""
    wide = widened(index, hit, room, read=spending.read)
    overlapped = [n for n, earlier in enumerate(kept) if _overlap(earlier, wide)]
    listed = any(_meets(lines, (wide.start_line, wide.end_line)) for lines in spending.elsewhere)
    if not overlapped and not listed:
        return [*kept, _spent(index, _readable(index, wide, room, spending), spending)]
    if not listed and wide.context == SECTION and all(_inside(kept[n], wide) for n in overlapped):
        readable = _readable(index, wide, room, spending)
        return _folded_into(index, kept, overlapped, readable, spending)
    shown = [(h.start_line, h.end_line) for h in kept if h.doc_id == hit.doc_id]
    shown += spending.elsewhere
    trimmed = _readable(index, widened(index, hit, room, shown, spending.read), room, spending)
    return [*kept, _spent(index, trimmed, spending)]


def _readable(index: VersionReader, hit: Hit, room: int, spending: _Spending) -> Hit:
    """`hit` with its text as the site shows it (hit_text.py), within `room`."""
    if not spending.readable:
        return hit
    page = index.pages.get(hit.doc_id)

    def chunks() -> list[ChunkRecord]:
        return [] if page is None else index.page_chunks(page)

    return shown_text(hit, chunks, room)


def _spent(index: VersionReader, hit: Hit, spending: _Spending) -> Hit:
    """`hit` cut to its allowance, and, when its text holds only part of its section, with
    the section's outline if the budget still has room for it."""
    budget, after = spending.budget, spending.after
    hit = budget.spend(hit, after)
    past = spending.outline_past
    outline = outline_of(index, hit, past, spending.read) if past else []
    size = sum(len(entry.heading) + OUTLINE_ENTRY_CHARS for entry in outline)
    if not outline or size > budget.left - FLOOR_CHARS * after:
        return hit
    budget.left -= size
    return msgspec.structs.replace(hit, outline=outline)


def _folded_into(
    index: VersionReader, kept: list[Hit], held: list[int], wide: Hit, spending: _Spending
) -> list[Hit]:
    """`kept` with the first of the hits `held` (their indexes) widened to `wide`'s text,
    which holds them all, and the others left out: it keeps its rank, its chunk and score,
    and takes the section `wide` names."""
    first = kept[held[0]]
    # given back, then spent again
    spending.budget.left += sum(len(kept[n].text) + _outline_chars(kept[n]) for n in held)
    folded = msgspec.structs.replace(
        first,
        text=wide.text,
        start_line=wide.start_line,
        end_line=wide.end_line,
        heading=wide.heading,
        context=wide.context,
        chunk_start_line=first.matched_lines[0],
        chunk_end_line=first.matched_lines[1],
        truncated=False,
        included=wide.included,
        outline=[],
    )
    # to come after it: the hits after `wide`'s, and the places the folded ones leave
    later = spending._replace(after=spending.after + len(held))
    folded = _spent(index, folded, later)
    return [folded if n == held[0] else h for n, h in enumerate(kept) if n not in held[1:]]


def _outline_chars(hit: Hit) -> int:
    return sum(len(entry.heading) + OUTLINE_ENTRY_CHARS for entry in hit.outline)


def outline_of(
    index: VersionReader, hit: Hit, longer_than: int, read: ChunkCache | None = None
) -> list[OutlineEntry]:
    """The outline of the section `hit` is in, when that is longer than `longer_than`
    characters and its text does not hold all of it: the section (its page's top-level
    section: the heading under the title; the page itself for the lines before the first)
    with the lines it spans, then each of its subsections one level down, at most
    OUTLINE_ENTRIES of them around the hit; else []."""
    found = CHUNK_ID.search(hit.chunk_id)
    if found is None:
        return []
    page, at = _Page(index, hit.doc_id, read=read), int(found.group(1))
    home = page[at]
    if home is None:
        return []
    section = home.headings[:2]
    first, last, size, parts = _section_parts(page, at, section)
    held = hit.start_line <= first and last <= hit.end_line and not hit.truncated
    if held or size <= longer_than:
        return []
    entries = [OutlineEntry(breadcrumb(section[-1:]), first, last)]
    return entries + _around(parts, hit.matched_lines[0])


def _section_parts(
    page: _Page, at: int, section: list[str]
) -> tuple[int, int, int, list[OutlineEntry]]:
    """The first and last line of the section these headings name, around chunk `at`, its
    length (its chunks' texts), and its subsections one level down (their headings below
    it), in page order."""
    numbers = [at]
    for step in (-1, 1):
        edge = at + step
        while page.within(edge, section) is not None:
            numbers.append(edge)
            edge += step
    chunks = [c for n in sorted(numbers) if (c := page[n]) is not None]
    parts: list[tuple[str, int, int]] = []  # a run of chunks under one subsection
    for chunk in chunks:
        below = chunk.headings[len(section) : len(section) + 1]
        if below and parts and parts[-1][0] == below[0]:
            parts[-1] = (below[0], parts[-1][1], chunk.end_line)
        elif below:
            parts.append((below[0], chunk.start_line, chunk.end_line))
    outline = [OutlineEntry(breadcrumb([h]), a, b) for h, a, b in parts]
    size = sum(len(chunk.text) for chunk in chunks)
    return chunks[0].start_line, chunks[-1].end_line, size, outline


def _around(parts: list[OutlineEntry], line: int) -> list[OutlineEntry]:
    """At most OUTLINE_ENTRIES of `parts`, centred on the one holding `line`."""
    if len(parts) <= OUTLINE_ENTRIES:
        return parts
    here = next((n for n, p in enumerate(parts) if p.start_line <= line <= p.end_line), 0)
    start = min(max(here - OUTLINE_ENTRIES // 2, 0), len(parts) - OUTLINE_ENTRIES)
    return parts[start : start + OUTLINE_ENTRIES]


def _overlap(earlier: Hit, hit: Hit) -> bool:
    """Whether the two texts share a line of their page."""
    return earlier.doc_id == hit.doc_id and _meets(
        (earlier.start_line, earlier.end_line), (hit.start_line, hit.end_line)
    )


def _meets(one: Lines, other: Lines) -> bool:
    """Whether two runs of a page's lines share a line."""
    return one[0] <= other[1] and other[0] <= one[1]


def _inside(earlier: Hit, hit: Hit) -> bool:
    """Whether `hit`'s text holds every line of `earlier`'s."""
    return (
        earlier.doc_id == hit.doc_id
        and hit.start_line <= earlier.start_line
        and earlier.end_line <= hit.end_line
    )


def _pages_spread(hits: list[Hit], page_hits: int, batch: int) -> Iterator[Hit]:
    """`hits`, `batch` at a time in rank order, each batch with each page's hits after its
    first `page_hits` moved after the others'. (The first batch is what an answer usually
    takes; the later ones take the places of copies folded in.)"""
    seen: dict[str, int] = {}
    for start in range(0, len(hits), batch):
        first: list[Hit] = []
        rest: list[Hit] = []
        for hit in hits[start : start + batch]:
            seen[hit.doc_id] = seen.get(hit.doc_id, 0) + 1
            (first if page_hits <= 0 or seen[hit.doc_id] <= page_hits else rest).append(hit)
        yield from first + rest


def _holds(earlier: Hit, hit: Hit) -> bool:
    """Whether `earlier`'s text has every line of `hit`'s chunk."""
    return (
        earlier.doc_id == hit.doc_id
        and not earlier.truncated
        and earlier.start_line <= hit.matched_lines[0]
        and hit.matched_lines[1] <= earlier.end_line
    )


def widened(
    index: VersionReader,
    hit: Hit,
    room: int,
    shown: Sequence[Lines] = (),
    read: ChunkCache | None = None,
) -> Hit:
    """`hit` with its text widened to at most `room` characters (the module's rule), taking
    no chunk with a line of `shown` (the lines earlier hits of its page show). `read`: the
    chunks read so far in this answer, by id, shared."""
    found = CHUNK_ID.search(hit.chunk_id)
    if found is None or len(hit.text) >= room:
        return hit
    page = _Page(index, hit.doc_id, shown, read)
    at = int(found.group(1))
    if page[at] is None:
        return hit
    section = _section(page, at, room)
    if section is not None:
        span, context = section, SECTION
    else:
        span, context = _neighbours(page, at, room), NEIGHBOURS
    if span == (at, at):
        return hit
    run = page.run(span)
    return msgspec.structs.replace(
        hit,
        text=span_text(run),
        start_line=run[0].start_line,
        end_line=run[-1].end_line,
        context=context,
        chunk_start_line=hit.start_line,
        chunk_end_line=hit.end_line,
    )


class _Page:
    """A page's chunks by number, each read once and only when the widening asks for it
    (a long page's other chunks are never decoded)."""

    def __init__(
        self,
        index: VersionReader,
        doc_id: str,
        shown: Sequence[Lines] = (),
        read: ChunkCache | None = None,
    ):
        self._index, self._doc_id, self._shown = index, doc_id, shown
        self._read: ChunkCache = {} if read is None else read  # by chunk id

    def __getitem__(self, number: int) -> ChunkRecord | None:
        if number < 0:
            return None
        key = chunk_id(self._doc_id, number)
        if key not in self._read:
            self._read[key] = self._index.chunk(key)
        return self._read[key]

    def run(self, span: tuple[int, int]) -> list[ChunkRecord]:
        return [c for n in range(span[0], span[1] + 1) if (c := self[n]) is not None]

    def within(self, number: int, headings: list[str]) -> ChunkRecord | None:
        """Chunk `number` when it lies in the section these headings name, else None."""
        chunk = self[number]
        return chunk if chunk is not None and chunk.headings[: len(headings)] == headings else None

    def free(self, number: int, headings: list[str]) -> ChunkRecord | None:
        """Chunk `number` when it lies in that section and no earlier hit shows its lines."""
        chunk = self.within(number, headings)
        return chunk if chunk is not None and not self.shows(chunk) else None

    def shows(self, chunk: ChunkRecord) -> bool:
        """Whether an earlier hit of the page shows a line of `chunk`."""
        return any(_meets(lines, (chunk.start_line, chunk.end_line)) for lines in self._shown)

    def numbers(self, hit: Hit) -> list[int]:
        """The numbers of the chunks `hit`'s text spans, in order ([] when its chunk is not
        in the version); a hit that is its chunk reads no other."""
        found = CHUNK_ID.search(hit.chunk_id)
        at = int(found.group(1)) if found else -1
        if self[at] is None:
            return []
        if not hit.context:
            return [at]
        first = last = at
        while (chunk := self[first - 1]) is not None and chunk.start_line >= hit.start_line:
            first -= 1
        while (chunk := self[last + 1]) is not None and chunk.end_line <= hit.end_line:
            last += 1
        return list(range(first, last + 1))


def _section(page: _Page, at: int, room: int) -> tuple[int, int] | None:
    """The first and last chunk of `at`'s section (those around it whose breadcrumb starts
    with its own: its subsections' too), or None when its text is longer than `room` or an
    earlier hit shows some of it."""
    home = page[at]
    assert home is not None
    first = last = at
    length = len(home.text)  # the chunks' texts alone: a lower bound of the section's
    for step in (-1, 1):
        edge = at
        while (chunk := page.within(edge + step, home.headings)) is not None:
            edge += step
            length += len(chunk.text)
            if length > room or page.shows(chunk):
                return None
        first, last = (edge, last) if step < 0 else (first, edge)
    span = (first, last)
    return span if len(span_text(page.run(span))) <= room else None


def _neighbours(page: _Page, at: int, room: int) -> tuple[int, int]:
    """The chunks around `at` in its section whose text fits in `room` and that no earlier
    hit shows: grown a chunk at a time, the next one first, then the one before."""
    home = page[at]
    assert home is not None
    span, grew = (at, at), True
    while grew:
        grew = False
        for lo, hi in ((span[0], span[1] + 1), (span[0] - 1, span[1])):
            edge = hi if hi > span[1] else lo
            inside = page.free(edge, home.headings) is not None
            if inside and len(span_text(page.run((lo, hi)))) <= room:
                span, grew = (lo, hi), True
    return span


def span_text(run: Sequence[ChunkRecord]) -> str:
    """The page's text from the first of these consecutive chunks to the last."""
    before = run[0].start_line - 1  # reassembled from the run's first line, not the page's
    return reassemble([_Shifted(c.text, c.start_line - before, c.end_line - before) for c in run])


class _Shifted(NamedTuple):
    text: str
    start_line: int
    end_line: int


class _Copied(NamedTuple):
    """A hit folded into an earlier one as a copy of its text: its chunk `partner` of the
    earlier hit's page stands at number `partner + offset` of the copy's page."""

    of: str  # the earlier hit's page
    partner: int
    offset: int
    copy: Hit


class _Copies:
    """The copies folded into an answer's hits so far; the chunks they read are the
    answer's (`read`, shared with the widening)."""

    def __init__(self, index: VersionReader, read: ChunkCache):
        self._index, self._read = index, read
        self._folded: list[_Copied] = []
        # a kept text's chunk numbers, and its chunks by content hash, by its id and lines
        self._spans: dict[tuple[str, int, int], list[int]] = {}
        self._by_hash: dict[tuple[str, int, int], dict[str, int]] = {}

    def fold(self, kept: list[Hit], hit: Hit) -> bool:
        """Whether `hit` is a copy of a kept hit of another page: its chunk is the same as
        one that hit's text spans (the same content hash: the same headings and cleaned
        text), so its text is already shown. If so, it is folded in."""
        found, doc_id = CHUNK_ID.search(hit.chunk_id), hit.doc_id
        at = int(found.group(1)) if found else -1
        chunk = self._page(doc_id)[at]
        if chunk is None:
            return False
        for earlier in kept:
            other = earlier.doc_id
            hashes = self._hashes(earlier, other) if other != doc_id else {}
            if (partner := hashes.get(chunk.content_hash)) is not None:
                self._folded.append(_Copied(other, partner, at - partner, hit))
                return True
        return False

    def lines(self, kept: list[Hit], doc_id: str) -> list[Lines]:
        """The lines of page `doc_id` listed as copies of kept hits' texts."""
        if not any(entry.copy.doc_id == doc_id for entry in self._folded):
            return []
        return [
            (copy.start_line, copy.end_line)
            for hit in kept
            for copy in self.placed(hit)
            if f"{copy.source}:{copy.path}" == doc_id
        ]

    def listed(self, hit: Hit) -> Hit:
        """`hit` with the copies folded into it."""
        placed = self.placed(hit)
        return msgspec.structs.replace(hit, copies=placed) if placed else hit

    def placed(self, hit: Hit) -> list[HitCopy]:
        """Where the text of `hit` stands in each copy folded into it: the run of its
        chunks around the copy's own that are the same, place by place, in the copy's
        page."""
        placed: list[HitCopy] = []
        mine = [entry for entry in self._folded if entry.of == hit.doc_id]
        theirs = self._page(hit.doc_id)
        spanned = self._spanned(theirs, hit) if mine else []
        for entry in mine:
            if entry.partner not in spanned:
                continue
            page = self._page(entry.copy.doc_id)
            first = last = entry.partner
            while first - 1 in spanned and _same(theirs, page, first - 1, entry.offset):
                first -= 1
            while last + 1 in spanned and _same(theirs, page, last + 1, entry.offset):
                last += 1
            start, end = page[first + entry.offset], page[last + entry.offset]
            assert start is not None and end is not None
            copy = entry.copy
            listed = HitCopy(copy.source, copy.path, start.start_line, end.end_line, copy.ref)
            if listed not in placed:
                placed.append(listed)
        return placed

    def _page(self, doc_id: str) -> _Page:
        return _Page(self._index, doc_id, read=self._read)

    def _spanned(self, page: _Page, hit: Hit) -> list[int]:
        key = (hit.chunk_id, hit.start_line, hit.end_line)
        if key not in self._spans:
            self._spans[key] = page.numbers(hit)
        return self._spans[key]

    def _hashes(self, hit: Hit, doc_id: str) -> dict[str, int]:
        """The content hashes of the chunks `hit`'s text spans, each with its first chunk's
        number."""
        key = (hit.chunk_id, hit.start_line, hit.end_line)
        if key not in self._by_hash:
            page = self._page(doc_id)
            chunks = [(n, chunk) for n in self._spanned(page, hit) if (chunk := page[n])]
            self._by_hash[key] = {c.content_hash: n for n, c in reversed(chunks)}
        return self._by_hash[key]


def _same(theirs: _Page, page: _Page, number: int, offset: int) -> bool:
    """Whether chunk `number` of `theirs` is the same as chunk `number + offset` of `page`."""
    one, other = theirs[number], page[number + offset]
    return one is not None and other is not None and one.content_hash == other.content_hash
