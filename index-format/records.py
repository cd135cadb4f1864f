"""Typed records of the on-disk index format (see FORMAT.md beside this file).

Everything docdex reads from disk is decoded into these msgspec Structs once, at the
boundary; the rest of the code passes them around.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import msgspec

from .model_tables import EmbedderSpec

FORMAT_MAJOR = 1
# the newest minor this code reads and writes (1: token vectors, 2: checksums, 3: segments
# whose chunks have text but no vectors yet, 4: entries published while still being read)
FORMAT_MINOR = 4

# Defaults of the embedding windows (docdex.toml can change them; the chunker's are below).
WINDOW_TOKENS = 250  # an embedding window's content tokens
WINDOW_OVERLAP = 40  # tokens consecutive windows share


# --- what the chunker produces ------------------------------------------------------------


CHUNK_ID = re.compile(r"#chunk(\d+)$")  # how a chunk id ends: "source:path#chunkN"


def chunk_id(doc_id: str, number: int) -> str:
    """The id of a page's chunk `number`; a page path never ends like one (the indexer
    refuses such a file), so a page id and a chunk id cannot be the same string."""
    return f"{doc_id}#chunk{number}"


class Inclusion(msgspec.Struct, frozen=True, gc=False):
    """What an include line of a chunk stands for in the text a hit shows: the included
    file's text (the lines it selects, bounded), or nothing for a line of the include syntax
    that names no file (`--8<--` opening a block). The chunk's `text` keeps the line."""

    line: int  # the page's line that names it (1-based)
    path: str  # the repository path read ("" for a line that shows nothing)
    text: str = ""
    code: str = ""  # the language to fence it in ("" = shown as it is)
    more: int = 0  # lines of what it selects left out of `text` past the bound


class Chunk(msgspec.Struct, frozen=True):
    """One retrievable piece of a page: a section, or part of a long one."""

    headings: list[str]  # breadcrumb, outermost first; headings[0] is the page title
    text: str  # raw markdown, returned to the reader as is
    embed_text: str  # cleaned text (markup noise removed), embedded after the breadcrumb
    start_line: int  # 1-based, inclusive, in the file as stored in git
    end_line: int
    includes: list[Inclusion] = []  # what its include lines stand for, in line order


class ParsedPage(msgspec.Struct, frozen=True):
    title: str
    description: str = ""
    tags: list[str] = []
    dates: dict[str, str] = {}  # front matter date fields (date, created, updated, ...) as text
    chunks: list[Chunk] = []
    draft: bool = False  # front matter `draft: true`: not indexed unless the source keeps drafts
    front_matter: str = ""  # the front matter block's lines as written (no chunk holds them)


# --- settings that change what is stored -------------------------------------------------


# A chunk's text never exceeds this many budgets, whatever the page (adr/0014).
MAX_CHUNK_BUDGETS = 4
# The chunking rules of this code. Raise it when a change to the chunker must re-chunk
# indexes built before it: a run re-reads every file when its manifest records other rules.
# 3: MDX, front matter, includes (adr/0018); 4: every line kept; 5: what includes show
CHUNKER_RULES = 5


class ChunkerSettings(msgspec.Struct, frozen=True):
    budget_chars: int = 1500  # a chunk's target size
    section_levels: int = 3  # headings h1..hN start sections
    min_alnum: int = 25  # a piece with fewer alphanumeric characters joins a neighbour chunk
    # The rules the chunks were cut by. Manifests written before the field existed (rules 1:
    # no upper bound) decode with this default; a run's settings carry CHUNKER_RULES.
    rules: int = 1

    @property
    def max_chars(self) -> int:
        """The hard upper bound on a chunk's text."""
        return max(self.budget_chars, 1) * MAX_CHUNK_BUDGETS


class EmbedderInfo(msgspec.Struct, frozen=True):
    """The model a version's vectors were made with. `id` is its identity: content hashes
    are keyed by it, so a different model never reuses another's vectors."""

    id: str  # e.g. "all-MiniLM-L6-v2-onnx-int8", "onnx:<digest>", "openai:<model>:<digest>"
    dim: int
    sha256: str  # of the model file (a configured model: of what decides its vectors)
    window_tokens: int = WINDOW_TOKENS
    window_overlap: int = WINDOW_OVERLAP
    # how to load it again (model_tables.py): None for the shipped model; never an API key
    spec: EmbedderSpec | None = None


# --- stored records ------------------------------------------------------------------------


# Stored records hold only strings, numbers and lists of them, so they are never part of
# a reference cycle: `gc=False` leaves them out of the collector's passes, which a 1M-chunk
# page table's million structs otherwise trigger (benchmarks.md, "Version load").


class ChunkRecord(msgspec.Struct, frozen=True, gc=False):
    """A chunk as stored in a dense segment (chunks.msgpack, in segment order)."""

    chunk_id: str  # "source:path#chunkN"
    doc_id: str  # "source:path"
    source: str
    path: str
    title: str
    headings: list[str]
    text: str
    start_line: int
    end_line: int
    content_hash: str  # hash of the embedded input; equal hash means reusable vectors
    window_start: int  # first row of this chunk's windows in vectors.npy
    window_count: int
    includes: list[Inclusion] = []  # chunker rules 5 on ([] before: nothing included shown)


class ChunkLocation(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """Where a page's chunk lives: all a reader needs (the leading fields of a ChunkRef)."""

    segment: str
    index: int  # position in the segment's chunks.msgpack


class ChunkRef(ChunkLocation, frozen=True, array_like=True):
    """Where a page's chunk lives, with what an incremental run needs to reuse its vectors
    without decoding the segment's chunk records."""

    window_start: int
    window_count: int
    content_hash: str

    @property
    def has_vectors(self) -> bool:
        """Whether the chunk's vectors exist (a chunk of a keywords-only segment has none
        yet): only such a chunk lends them to another by content hash."""
        return self.window_count > 0


class FileProblem(msgspec.Struct, frozen=True):
    path: str
    problem: str  # a sentence naming what is wrong and the setting involved, if any


class PageInfo(msgspec.Struct, frozen=True, gc=False):
    """A page's metadata: what PageRecord and ServedPage share."""

    doc_id: str
    source: str
    path: str
    blob: str  # git blob sha of the indexed content (computed for a working-tree file)
    title: str
    description: str
    tags: Sequence[str]  # a list, or a tuple in a ServedPage
    created: str  # ISO 8601 UTC; first commit that added the path (carried across renames)
    modified: str  # ISO 8601 UTC; last commit that changed it (mtime of an uncommitted edit)
    commit: str  # the commit of `modified` ("" for an uncommitted working-tree edit)
    size: int  # bytes of the file
    # Why `created`/`modified` may be off ("" = exact): the history that dated them is
    # incomplete (a shallow or partial clone). The subclasses are kw_only so that their
    # required `chunks` may follow it; the written ones omit it when empty, so a table of
    # exactly dated pages encodes as it did before the field existed.
    dates_note: str = ""
    # The front matter block's lines as written ("" = none): no chunk holds them, and the
    # page text begins with them (FORMAT.md, "Page text"). Omitted when empty, like above.
    front_matter: str = ""


class PageRecord(PageInfo, frozen=True, kw_only=True, omit_defaults=True):
    """A page of a source's page table (pages/*.msgpack)."""

    chunks: list[ChunkRef]

    def refs(self) -> list[ChunkRef]:
        return self.chunks

    @property
    def chunk_count(self) -> int:
        return len(self.chunks)


class StoredPage(PageInfo, frozen=True, kw_only=True, omit_defaults=True):
    """A page as an incremental run reads the previous table: the same record with its
    chunk refs left encoded. A run decodes the refs of the pages it touches only, so a
    small push into a large source does not pay for the whole table (adr/0010); written
    back, it encodes to the same bytes."""

    chunks: msgspec.Raw

    def refs(self) -> list[ChunkRef]:
        return _chunk_refs.decode(self.chunks)

    @property
    def chunk_count(self) -> int:
        return _array_length(self.chunks)


IndexedPage = PageRecord | StoredPage  # a page of the table an incremental run writes


def with_refs(page: IndexedPage, refs: list[ChunkRef]) -> PageRecord:
    """`page` with other chunk refs (compaction moved its chunks)."""
    fields = {name: getattr(page, name) for name in PageInfo.__struct_fields__}
    return PageRecord(**fields, chunks=refs)


_chunk_refs = msgspec.msgpack.Decoder(list[ChunkRef])


def _array_length(encoded: msgspec.Raw) -> int:
    """The element count in the header of a msgpack array."""
    data = memoryview(encoded)
    if 0x90 <= data[0] <= 0x9F:  # fixarray
        return data[0] & 0x0F
    if data[0] in (0xDC, 0xDD):  # array 16, array 32
        return int.from_bytes(data[1 : 3 if data[0] == 0xDC else 5], "big")
    raise msgspec.DecodeError(f"expected a msgpack array, found type byte 0x{data[0]:02x}")


class ServedPage(PageInfo, frozen=True, kw_only=True):
    """A page as the server reads it: the same record decoded with ChunkLocations only, so
    that a large corpus's content hashes and window rows stay on disk. Its arrays are
    tuples, which the collector stops tracking: a version's page table then adds nothing
    to the passes over the server's long-lived objects (benchmarks.md, "Version load")."""

    tags: tuple[str, ...]
    chunks: tuple[ChunkLocation, ...]


class FileSum(msgspec.Struct, frozen=True):
    """A file's size and sha256, recorded when it is written (format 1.2)."""

    name: str  # within its directory (a segment's, a text index's), or under pages/
    size: int
    sha256: str


class SegmentRef(msgspec.Struct, frozen=True):
    id: str
    chunks: int
    windows: int
    bytes: int
    tombstones: list[int] = []  # chunk indexes no longer live in this version
    files: list[FileSum] = []  # every file of the segment ([]: written before format 1.2)
    model: str = ""  # the EmbedderInfo.id its vectors were made with ("" = the manifest's)
    # Its chunks have text but no vectors yet (format 1.3, FORMAT.md "Keywords first"): no
    # window rows, and embed.msgpack holds what each chunk's vectors will be made from.
    keywords_only: bool = False


class Reading(msgspec.Struct, frozen=True):
    """An entry published while its run still reads it (format 1.4): its pages are those of
    the files read so far, of `commit`; its state's own `commit` stays "" until it is read
    whole, so that a reader or indexer that does not know this field sees an entry never
    indexed (an indexer reads it whole again)."""

    commit: str  # the commit being read
    done: int  # files read so far
    total: int  # files to read


class SourceState(msgspec.Struct, frozen=True):
    name: str
    location: str
    kind: str  # "bare" | "checkout" | "remote"
    branch: str
    config_hash: str  # of the settings that decide which files are indexed and how
    commit: str  # last indexed commit ("" before the first run; "<sha>+worktree": watch)
    indexed_at: str
    pages_file: str  # file name under pages/ ("" when the source has no pages)
    files: int
    chunks: int
    problems: list[FileProblem] = []
    last_error: str = ""  # why the last run of this entry failed ("" = it did not)
    links: dict[str, str] | None = None  # symlinks at `commit`: path -> link blob (None: unknown)
    # The ref this entry indexes (ref_names.py beside this file). A source's default ref has the
    # source's own name as its key; each other ref of its `refs` is an entry "source@ref".
    ref: str = ""  # short branch or tag name ("" = not recorded: the branch in `branch`)
    ref_kind: str = "branch"  # "branch" | "tag"
    base: str = ""  # the configured source the entry belongs to ("" = the key itself)
    default_ref: bool = True  # the source's default ref (False: an entry "source@ref")
    pages_sum: FileSum | None = None  # of pages_file (None: written before format 1.2)
    # When the entry's runs began to fail ("" = its last run did not); `last_error` says why,
    # and its pages are those of `commit`, the last run that succeeded.
    failed_since: str = ""
    reading: Reading | None = None  # published while being read (None: read whole)


class Manifest(msgspec.Struct, frozen=True):
    format_major: int
    format_minor: int
    version: int
    created_at: str
    embedder: EmbedderInfo
    chunker: ChunkerSettings
    text_index: str  # directory name under text/
    segments: list[SegmentRef]
    sources: dict[str, SourceState]
    chunks: int  # live chunks over all segments
    windows: int  # live windows
    text_analysis: int = 1  # the analysis text_index was built with (text.py; absent: 1)
    text_files: list[FileSum] = []  # every file of text/<text_index> ([]: before format 1.2)
    # sha256 of this manifest's JSON with this field empty (store.encode_manifest); last,
    # so that a newer minor's fields are covered too
    checksum: str = ""

    def foreign_segments(self) -> list[SegmentRef]:
        """The segments whose vectors another model made than the one the version records
        (they and its queries would not compare): verify names them, the server refuses."""
        return [s for s in self.segments if s.model and s.model != self.embedder.id]
