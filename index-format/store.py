"""Reading (and, for the indexer, writing) versions, segments and page tables.

Both sides use this module: the indexer to publish, the server and the CLI to read. A reader
follows CURRENT to one manifest and reads only files that manifest names, all immutable.
"""

from __future__ import annotations

import contextlib
import hashlib
import mmap
import os
import weakref
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar, overload

import msgspec
import numpy as np

from .layout import (
    VERSION_DIGITS,
    DamagedIndex,
    DataDir,
    IndexFormatError,
    version_name,
    write_atomic,
)
from .records import (
    FORMAT_MAJOR,
    ChunkRecord,
    FileSum,
    Manifest,
    PageInfo,
    PageRecord,
    ServedPage,
    StoredPage,
)

P = TypeVar("P", bound=PageInfo)

_manifest_decoder = msgspec.json.Decoder(Manifest)
_chunk_decoder = msgspec.msgpack.Decoder(ChunkRecord)
_raw_list_decoder = msgspec.msgpack.Decoder(list[msgspec.Raw])
_pages_decoders: dict[type[PageInfo], msgspec.msgpack.Decoder[list[Any]]] = {
    PageRecord: msgspec.msgpack.Decoder(list[PageRecord]),
    ServedPage: msgspec.msgpack.Decoder(list[ServedPage]),
    StoredPage: msgspec.msgpack.Decoder(list[StoredPage]),
}
_served_page = msgspec.msgpack.Decoder(ServedPage)
_encoder = msgspec.msgpack.Encoder()

CHUNKS_FILE = "chunks.msgpack"
VECTORS_FILE = "vectors.npy"
OWNERS_FILE = "owners.npy"
HNSW_FILE = "hnsw.bin"
EMBED_INPUTS_FILE = "embed.msgpack"  # a keywords-only segment's texts to embed (format 1.3)

_embed_inputs_decoder = msgspec.msgpack.Decoder(list[str])


# --- versions ------------------------------------------------------------------------------


def current_version(data: DataDir) -> int | None:
    """The published version CURRENT names, or None before the first one."""
    try:
        text = data.current.read_bytes().decode("ascii", "replace").strip()
    except FileNotFoundError:
        return None
    if not (text.isascii() and text.isdigit() and len(text) == VERSION_DIGITS):
        raise DamagedIndex(f"{data.current} does not name a version: {text[:40]!r}")
    return int(text)


def list_versions(data: DataDir) -> list[int]:
    """Every version with a manifest on disk, oldest first (published or not)."""
    if not data.versions.is_dir():
        return []
    names = (p.stem for p in data.versions.glob("*.json"))
    return sorted(int(n) for n in names if n.isdigit() and len(n) == VERSION_DIGITS)


def load_manifest(data: DataDir, version: int) -> Manifest:
    path = data.manifest(version)
    try:
        manifest = _manifest_decoder.decode(path.read_bytes())
    except FileNotFoundError:
        raise IndexFormatError(f"version {version} has no manifest ({path})") from None
    except msgspec.DecodeError as exc:
        raise DamagedIndex(f"manifest {path} is not a docdex manifest: {exc}") from None
    if manifest.format_major != FORMAT_MAJOR:
        raise IndexFormatError(
            f"manifest {path} has format {manifest.format_major}.{manifest.format_minor}; "
            f"this docdex reads format {FORMAT_MAJOR}.x"
        )
    return manifest


def load_current(data: DataDir) -> Manifest | None:
    version = current_version(data)
    return None if version is None else load_manifest(data, version)


def write_manifest(data: DataDir, manifest: Manifest) -> None:
    """Write a version's manifest; it is not served until `point_current` names it."""
    write_atomic(data.manifest(manifest.version), encode_manifest(manifest))


_CHECKSUM_FIELD = b'"checksum":"'


def encode_manifest(manifest: Manifest) -> bytes:
    """The manifest's JSON, its `checksum` the sha256 of the same JSON with it empty."""
    blank = msgspec.json.encode(msgspec.structs.replace(manifest, checksum=""))
    at = blank.rindex(_CHECKSUM_FIELD) + len(_CHECKSUM_FIELD)
    return blank[:at] + hashlib.sha256(blank).hexdigest().encode() + blank[at:]


def manifest_intact(raw: bytes) -> bool:
    """Whether a manifest's bytes match the checksum they record (encode_manifest)."""
    at = raw.rfind(_CHECKSUM_FIELD)
    end = raw.find(b'"', at + len(_CHECKSUM_FIELD)) if at >= 0 else -1
    if end < 0:
        return False
    start = at + len(_CHECKSUM_FIELD)
    return hashlib.sha256(raw[:start] + raw[end:]).hexdigest().encode() == raw[start:end]


def point_current(data: DataDir, version: int) -> None:
    write_atomic(data.current, f"{version_name(version)}\n".encode())


# --- segments ------------------------------------------------------------------------------


class ChunkTable(Sequence[ChunkRecord]):
    """A segment's chunk records, each read from chunks.msgpack and decoded when asked for.

    Opening finds where each record starts, and with `decode_all` checks that every record
    decodes, so a corrupt file is refused at load (a version with checksums has its bytes
    checked by hash instead; the framing is checked either way); afterwards a record is one
    `pread` and a decode. A server over a large corpus so holds no chunk text in memory, and
    no mapped file pages either (which would count in its RSS): only an open descriptor,
    kept so that a file deleted by the garbage collector stays readable (adr/0008)."""

    def __init__(self, path: Path, decode_all: bool = True) -> None:
        self._fd = _descriptor_for(self, path)
        self._offsets = _scan_records(self._fd, decode_all)

    def __len__(self) -> int:
        return len(self._offsets) - 1

    @overload
    def __getitem__(self, index: int) -> ChunkRecord: ...
    @overload
    def __getitem__(self, index: slice) -> list[ChunkRecord]: ...
    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"chunk index {index} out of range ({len(self)} chunks)")
        start, end = int(self._offsets[index]), int(self._offsets[index + 1])
        return _chunk_decoder.decode(os.pread(self._fd, end - start, start))


_NPY_HEADER_READERS = {
    (1, 0): np.lib.format.read_array_header_1_0,
    (2, 0): np.lib.format.read_array_header_2_0,
}


class VectorRows:
    """Rows of a segment's vectors.npy read with `pread` (as float32), for the few windows a
    search scores outside its nearest-neighbour search, without mapping the file into the
    reader's memory."""

    def __init__(self, path: Path) -> None:
        with open(path, "rb") as f:
            version = np.lib.format.read_magic(f)
            read_header = _NPY_HEADER_READERS.get(version)
            if read_header is None:
                raise IndexFormatError(f"{path}: unsupported .npy version {version}")
            shape, _fortran, dtype = read_header(f)
            self._offset = f.tell()
        self._dtype, self._dim = np.dtype(dtype), shape[1]
        self._path = path
        self._fd = _descriptor_for(self, path)

    def read(self, start: int, count: int) -> np.ndarray:
        """(count, dim) float32: rows start .. start + count - 1."""
        return self.read_ranges([start], [count])

    def read_ranges(self, starts: Sequence[int], counts: Sequence[int]) -> np.ndarray:
        """(sum of counts, dim) float32: each run of rows start .. start + count - 1, in
        order, one `pread` a run and one conversion for all."""
        width = self._dim * self._dtype.itemsize
        data = b"".join(
            os.pread(self._fd, int(count) * width, self._offset + int(start) * width)
            for start, count in zip(starts, counts, strict=True)
        )
        if len(data) != width * int(sum(counts)):  # a short file would shift every later run
            raise DamagedIndex(f"{self._path} is shorter than its rows")
        return np.frombuffer(data, dtype=self._dtype).reshape(-1, self._dim).astype(np.float32)


def _descriptor_for(owner: object, path: Path) -> int:
    """A read-only descriptor of `path`, closed when `owner` is garbage collected."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    weakref.finalize(owner, os.close, fd)
    return fd


def _scan_records(fd: int, decode_all: bool) -> np.ndarray:
    """The records' offsets, read through a mapping of the file that is closed at once
    (copying the file into the heap first took twice as long, docs/benchmarks.md)."""
    size = os.fstat(fd).st_size
    if size == 0:
        raise msgspec.DecodeError("the file is empty")
    try:
        mapped = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):  # a file system that cannot map files
        return _checked_offsets(os.pread(fd, size, 0), decode_all)
    with mapped:
        view = memoryview(mapped)
        try:
            return _checked_offsets(view, decode_all)
        except BaseException as exc:
            # without its traceback, whose frames hold views of the mapping
            failure = exc.with_traceback(None)
        finally:
            view.release()
    raise failure


def _checked_offsets(buffer, decode_all: bool) -> np.ndarray:
    try:
        return _record_offsets(buffer, decode_all)
    except RecursionError:
        raise msgspec.DecodeError("the records are nested too deeply") from None


def _record_offsets(buffer, decode_all: bool) -> np.ndarray:
    """(records + 1,) int64 byte offsets of the records of a msgpack array filling `buffer`.
    Raises msgspec.DecodeError when the array does not decode, or (`decode_all`) a record."""
    raws = _raw_list_decoder.decode(buffer)
    measure = _record_length if decode_all else len
    lengths = np.fromiter(map(measure, raws), dtype=np.int64, count=len(raws))
    header = len(buffer) - int(lengths.sum())  # the array's own header precedes the records
    return np.concatenate([[header], header + np.cumsum(lengths)]).astype(np.int64)


def _record_length(raw: msgspec.Raw) -> int:
    _chunk_decoder.decode(raw)
    return len(raw)


@dataclass
class Segment:
    """A dense segment as read from disk: chunk records, window vectors, their owners."""

    id: str
    path: Path
    chunks: Sequence[ChunkRecord]
    dim: int

    @cached_property
    def vectors(self) -> np.ndarray:
        """(windows, dim) float16, L2-normalised, memory-mapped."""
        return np.load(self.path / VECTORS_FILE, mmap_mode="r")

    @cached_property
    def owners(self) -> np.ndarray:
        """(windows,) int32: the chunk index each window row belongs to."""
        return np.load(self.path / OWNERS_FILE)

    @cached_property
    def vector_rows(self) -> VectorRows:
        return VectorRows(self.path / VECTORS_FILE)

    def chunk_vectors(self, index: int) -> np.ndarray:
        chunk = self.chunks[index]
        return np.asarray(
            self.vectors[chunk.window_start : chunk.window_start + chunk.window_count]
        )


def load_segment(data: DataDir, segment_id: str, dim: int, decode_all: bool = True) -> Segment:
    """`decode_all`: check that every chunk record decodes (see ChunkTable)."""
    path = data.segment(segment_id)
    try:
        chunks = ChunkTable(path / CHUNKS_FILE, decode_all)
    except FileNotFoundError:
        raise IndexFormatError(f"segment {segment_id} is missing ({path})") from None
    except msgspec.DecodeError as exc:
        raise DamagedIndex(f"segment {segment_id} is corrupt: {exc}") from None
    return Segment(id=segment_id, path=path, chunks=chunks, dim=dim)


def write_segment_files(
    path: Path, chunks: list[ChunkRecord], vectors: np.ndarray, owners: np.ndarray
) -> None:
    """Write a segment's data files (the caller builds the HNSW file and publishes the dir)."""
    (path / CHUNKS_FILE).write_bytes(_encoder.encode(chunks))
    np.save(path / VECTORS_FILE, vectors.astype(np.float16, copy=False))
    np.save(path / OWNERS_FILE, owners.astype(np.int32, copy=False))


def write_embed_inputs(path: Path, inputs: Sequence[str]) -> None:
    """A keywords-only segment's embed inputs, one per chunk in segment order."""
    (path / EMBED_INPUTS_FILE).write_bytes(_encoder.encode(list(inputs)))


def load_embed_inputs(path: Path) -> list[str]:
    """What each chunk of the keywords-only segment at `path` is to be embedded from."""
    try:
        return _embed_inputs_decoder.decode((path / EMBED_INPUTS_FILE).read_bytes())
    except FileNotFoundError:
        raise IndexFormatError(f"keywords-only segment {path} has no {EMBED_INPUTS_FILE}") from None
    except msgspec.DecodeError as exc:
        raise DamagedIndex(f"{path / EMBED_INPUTS_FILE} is corrupt: {exc}") from None


def directory_bytes(path: Path) -> int:
    return sum(
        os.path.getsize(os.path.join(d, f)) for d, _dirs, files in os.walk(path) for f in files
    )


# --- page tables ---------------------------------------------------------------------------


@overload
def load_pages(data: DataDir, name: str) -> list[PageRecord]: ...
@overload
def load_pages(data: DataDir, name: str, as_type: type[P]) -> list[P]: ...
def load_pages(
    data: DataDir, name: str, as_type: type[PageInfo] = PageRecord
) -> Sequence[PageInfo]:
    """The page table `name`, as PageRecords, StoredPages (an incremental run) or
    ServedPages (readers)."""
    if not name:
        return []
    path = data.pages_file(name)
    with _page_table_errors(path):
        return _pages_decoders[as_type].decode(path.read_bytes())


def load_served_pages(
    data: DataDir, name: str, known: Mapping[bytes, ServedPage] | None = None
) -> dict[bytes, ServedPage]:
    """The page table `name` as ServedPages keyed by a digest of each record's bytes. A
    record whose digest is in `known` (the same source's table in another version) is that
    page, not decoded again: equal bytes are an equal record."""
    if not name:
        return {}
    path = data.pages_file(name)
    known = known or {}
    pages: dict[bytes, ServedPage] = {}
    with _page_table_errors(path):
        for raw in _raw_list_decoder.decode(path.read_bytes()):
            key = hashlib.blake2b(raw, digest_size=16).digest()
            page = known.get(key)
            pages[key] = page if page is not None else _served_page.decode(raw)
    return pages


@contextlib.contextmanager
def _page_table_errors(path: Path) -> Iterator[None]:
    try:
        yield
    except FileNotFoundError:
        raise IndexFormatError(f"page table {path} is missing") from None
    except msgspec.DecodeError as exc:
        raise DamagedIndex(f"page table {path} is corrupt: {exc}") from None


def write_pages(data: DataDir, name: str, pages: Sequence[PageRecord | StoredPage]) -> FileSum:
    encoded = _encoder.encode(pages)
    write_atomic(data.pages_file(name), encoded)
    return FileSum(name=name, size=len(encoded), sha256=hashlib.sha256(encoded).hexdigest())


# --- checksums (format 1.2) ----------------------------------------------------------------


def file_sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def directory_sums(
    path: Path, linked_from: Path | None = None, known: Sequence[FileSum] = ()
) -> list[FileSum]:
    """The FileSum of every file in `path`, by name. A file that is a hard link of the file
    of the same name and size in `linked_from` keeps the sum `known` records for it: it is
    the same immutable file (text/<version>/ links most of the previous version's files)."""
    recorded = {s.name: s for s in known}
    sums = []
    for entry in sorted(os.scandir(path), key=lambda e: e.name):
        if not entry.is_file(follow_symlinks=False):
            continue
        stat = entry.stat(follow_symlinks=False)
        old = recorded.get(entry.name)
        if old is not None and old.size == stat.st_size and _same_file(stat, linked_from, old):
            sums.append(old)
        else:
            sums.append(FileSum(entry.name, stat.st_size, file_sha256(Path(entry.path))))
    return sums


def _same_file(stat: os.stat_result, folder: Path | None, old: FileSum) -> bool:
    if folder is None:
        return False
    try:
        return os.path.samestat(stat, os.stat(folder / old.name))
    except OSError:
        return False
