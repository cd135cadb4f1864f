"""Checking a data directory: does every kept version hold what its manifest says?

Two levels, both read-only:

- **files**: the manifest decodes and matches its own checksum, every file it names is
  there with the size and sha256 recorded when it was written (format 1.2; older versions
  record none and are checked by structure alone);
- **structure**: chunk records and page tables decode and agree with the manifest's
  counts, vectors and owners have the shapes the records say (and every vector is
  finite), HNSW graphs load with the right count, the Tantivy index opens and holds
  exactly the live chunks.

`docdex verify`, the server (before it serves a version) and a full indexing run (before
it reuses anything of the version it starts from) use this module.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Iterable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

import msgspec
import numpy as np

from .layout import DataDir, IndexFormatError, version_name
from .records import FileSum, Manifest, SegmentRef, ServedPage
from .store import (
    CHUNKS_FILE,
    EMBED_INPUTS_FILE,
    HNSW_FILE,
    OWNERS_FILE,
    VECTORS_FILE,
    ChunkTable,
    file_sha256,
    list_versions,
    load_embed_inputs,
    load_manifest,
    load_pages,
    manifest_intact,
)
from .token_vectors import TOKIDS_FILE, TOKOFFSETS_FILE, TOKPROJ_FILE, TOKSCALE_FILE, TOKVECS_FILE

SEGMENT_FILES = (CHUNKS_FILE, VECTORS_FILE, OWNERS_FILE, HNSW_FILE)
TOKEN_FILES = (TOKVECS_FILE, TOKSCALE_FILE, TOKIDS_FILE, TOKOFFSETS_FILE, TOKPROJ_FILE)
CHECKSUMS_MINOR = 2  # the format minor that records checksums
_CURRENT_TEXT = re.compile(rb"[0-9]{8}\n")
FINITE_ROWS = 65_536  # vectors checked for NaN and infinity at a time (a bounded copy)
OLD_FORMAT_NOTE = "no checksums recorded (older format)"


class Problem(msgspec.Struct, frozen=True):
    file: str  # relative to the data directory
    kind: str  # missing | size | checksum | decode | shape | count | open | model | value
    detail: str  # one sentence


class VersionReport(msgspec.Struct):
    version: int
    ok: bool
    problems: list[Problem]
    notes: list[str] = []  # what could not be checked, and why (not failures)


class VerifyReport(msgspec.Struct):
    ok: bool
    current: int | None
    versions: list[VersionReport]
    problems: list[Problem] = []  # of the directory itself (CURRENT)


class NamedFile(NamedTuple):
    """A file a version names, with the sum recorded for it (None: not recorded)."""

    path: str  # relative to the data directory
    sum: FileSum | None


# --- the API -------------------------------------------------------------------------------


def verify_version(root: Path, version: int) -> list[Problem]:
    """Every problem of `version` (files and structure); [] when it is intact."""
    return _Checker(DataDir(root)).version(version).problems


def verify_data(root: Path, only: int | None = None) -> VerifyReport:
    """Every version kept on disk (or only `only`), and CURRENT."""
    data = DataDir(root)
    checker = _Checker(data)
    current, problems = check_current(data)
    versions = [only] if only is not None else list_versions(data)
    reports = [_unless_collected(data, checker.version(v), only is None) for v in versions]
    if only is None and current is not None:
        newer = [v for v in versions if v > current]
        if newer:
            reports[-1].notes.append(
                f"versions {', '.join(map(str, newer))} are newer than CURRENT ({current}): "
                "a run that stopped before publishing, collected at the next run"
            )
    ok = not problems and all(r.ok for r in reports)
    return VerifyReport(ok=ok, current=current, versions=reports, problems=problems)


COLLECTED_NOTE = (
    "collected by garbage collection while it was checked (an older version is deleted "
    "manifest first, then the files no kept version names): not damage"
)


def _unless_collected(data: DataDir, report: VersionReport, listed: bool) -> VersionReport:
    """A listed version whose manifest is gone by the time its problems are known was being
    collected: its missing files are gc's work, not damage (a cron'd verify beside a run)."""
    if report.ok or not listed or data.manifest(report.version).exists():
        return report
    return VersionReport(report.version, True, [], [COLLECTED_NOTE])


def check_current(data: DataDir) -> tuple[int | None, list[Problem]]:
    """The version CURRENT names, and its problems (a CURRENT that names nothing readable)."""
    try:
        raw = data.current.read_bytes()
    except FileNotFoundError:
        return None, []
    if not _CURRENT_TEXT.fullmatch(raw):
        detail = f"CURRENT holds {raw[:20]!r}, not a version number (8 digits and a newline)"
        return None, [Problem("CURRENT", "decode", detail)]
    version = int(raw)
    if not data.manifest(version).is_file():
        detail = f"CURRENT names version {version}, which has no manifest"
        return None, [Problem("CURRENT", "missing", detail)]
    return version, []


def named_files(manifest: Manifest) -> list[NamedFile]:
    """Every file `manifest` names, with its recorded sum: each segment's files, each page
    table, each file of the text index. A segment or text index written before format 1.2
    names its required files without sums (the text index: none; it is checked by opening)."""
    out: list[NamedFile] = []
    for ref in manifest.segments:
        folder = f"segments/{ref.id}"
        if ref.files:
            out += [NamedFile(f"{folder}/{s.name}", s) for s in ref.files]
        else:
            out += [NamedFile(f"{folder}/{name}", None) for name in SEGMENT_FILES]
    for state in manifest.sources.values():
        if state.pages_file:
            out.append(NamedFile(f"pages/{state.pages_file}", state.pages_sum))
    out += [NamedFile(f"text/{manifest.text_index}/{s.name}", s) for s in manifest.text_files]
    return out


def check_files(
    data: DataDir,
    files: Iterable[NamedFile],
    hash_up_to: int | None = None,
    hashed: Collection[NamedFile] = (),
) -> tuple[list[Problem], list[NamedFile]]:
    """Problems of `files` (missing, size, checksum), and the files whose checksum was left
    for later: those over `hash_up_to` bytes (None: hash every file). Files in `hashed`
    (checked before: they are immutable) are only measured."""
    checker = _Checker(data)
    problems, later = [], []
    for named in files:
        big = named.sum is not None and hash_up_to is not None and named.sum.size > hash_up_to
        problem = checker.file(named, checksum=not big and named not in hashed)
        if problem:
            problems.append(problem)
        elif big:
            later.append(named)
    return problems, later


def manifest_problems(data: DataDir, manifest: Manifest) -> list[Problem]:
    """[] when the manifest's bytes match the checksum it records (or it records none)."""
    path = data.manifest(manifest.version)
    if manifest.format_minor < CHECKSUMS_MINOR:
        return []
    try:
        if manifest_intact(path.read_bytes()):
            return []
    except FileNotFoundError:
        return [Problem(f"versions/{path.name}", "missing", "the manifest is gone")]
    detail = "its content does not match the checksum it records"
    return [Problem(f"versions/{path.name}", "checksum", detail)]


def model_problems(manifest: Manifest) -> list[Problem]:
    """A segment whose vectors another model made than the one the version records: its
    vectors and the queries' would not be comparable."""
    model = manifest.embedder.id
    return [
        Problem(
            f"segments/{ref.id}",
            "model",
            f"its vectors were made by embedder {ref.model!r}, but version "
            f"{manifest.version} records {model!r}: `docdex index --full` embeds them again",
        )
        for ref in manifest.foreign_segments()
    ]


def describe(problems: Sequence[Problem]) -> str:
    """One sentence for a log line or /health: the first problem, and how many follow."""
    first = problems[0]
    more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
    return f"{first.file}: {first.detail}{more}"


def damaged_segments(problems: Iterable[Problem]) -> set[str]:
    """The ids of the segments `problems` name a file of."""
    return {p.file.split("/")[1] for p in problems if p.file.startswith("segments/")}


# --- checking ------------------------------------------------------------------------------


class _Checker:
    """Checks versions of one data directory; a file named by several versions (segments,
    linked text files) is hashed once."""

    def __init__(self, data: DataDir) -> None:
        self.data = data
        self._sums: dict[tuple[str, int, int, int], str] = {}

    def version(self, version: int) -> VersionReport:
        manifest_file = f"versions/{version_name(version)}.json"
        try:
            manifest = load_manifest(self.data, version)
        except IndexFormatError as exc:
            kind = "decode" if self.data.manifest(version).exists() else "missing"
            return VersionReport(version, False, [Problem(manifest_file, kind, str(exc))])
        problems, notes = manifest_problems(self.data, manifest), []
        if manifest.format_minor < CHECKSUMS_MINOR:
            notes.append(OLD_FORMAT_NOTE)
        files = named_files(manifest)
        unsummed = sum(1 for f in files if f.sum is None)
        if unsummed and manifest.format_minor >= CHECKSUMS_MINOR:
            notes.append(f"{unsummed} files have no recorded checksum (written before 1.2)")
        problems += _reading(manifest, version, notes)
        for named in files:
            problem = self.file(named)
            if problem:
                problems.append(problem)
        damaged = {p.file for p in problems}
        problems += _structure(self.data, manifest, damaged)
        return VersionReport(version, not problems, problems, notes)

    def file(self, named: NamedFile, checksum: bool = True) -> Problem | None:
        path = self.data.root / named.path
        try:
            stat = path.stat()
        except FileNotFoundError:
            return Problem(named.path, "missing", "the file is missing")
        if named.sum is None:
            return None
        if stat.st_size != named.sum.size:
            detail = f"it has {stat.st_size:,} bytes, {named.sum.size:,} recorded"
            return Problem(named.path, "size", detail)
        if checksum and self._sha256(path, stat) != named.sum.sha256:
            return Problem(named.path, "checksum", "its sha256 differs from the one recorded")
        return None

    def _sha256(self, path: Path, stat: os.stat_result) -> str:
        key = (str(path), stat.st_size, stat.st_mtime_ns, stat.st_ino)
        if key not in self._sums:
            self._sums[key] = file_sha256(path)
        return self._sums[key]


def _reading(manifest: Manifest, version: int, notes: list[str]) -> list[Problem]:
    """Entries published while being read (format 1.4): a note each; a problem when the
    state contradicts itself (more files read than there are, or a commit recorded as
    read whole)."""
    problems = []
    for key, state in sorted(manifest.sources.items()):
        reading = state.reading
        if reading is None:
            continue
        notes.append(
            f"entry {key} was published while being read: {reading.done} of {reading.total} files"
        )
        if reading.done > reading.total or state.commit or state.files > reading.done:
            detail = (
                f"entry {key} is being read ({reading.done} of {reading.total} files) but "
                f"records commit {state.commit!r} and {state.files} pages"
            )
            problems.append(Problem(f"versions/{version_name(version)}.json", "value", detail))
    return problems


def _structure(data: DataDir, manifest: Manifest, damaged: set[str]) -> list[Problem]:
    """Problems of the content: what decodes, and whether it agrees with the manifest. A
    file already found damaged is not read again (one problem per file)."""
    problems: list[Problem] = model_problems(manifest)
    live: dict[str, set[int]] = {}
    for ref in manifest.segments:
        problems += _segment(data, ref, manifest.embedder.dim, damaged)
        live[ref.id] = set(range(ref.chunks)) - set(ref.tombstones)
    for state in manifest.sources.values():
        if state.pages_file:
            problems += _pages(data, state.pages_file, state.files, state.chunks, live, damaged)
    problems += _text(data, manifest, damaged)
    return problems


def _segment(data: DataDir, ref: SegmentRef, dim: int, damaged: set[str]) -> Iterator[Problem]:
    folder = data.segment(ref.id)
    rel = f"segments/{ref.id}"
    checks = [
        (CHUNKS_FILE, lambda: _chunk_records(folder, ref)),
        (VECTORS_FILE, lambda: _vectors(folder / VECTORS_FILE, (ref.windows, dim))),
        (OWNERS_FILE, lambda: _owners(folder / OWNERS_FILE, ref)),
        (HNSW_FILE, lambda: _hnsw(folder / HNSW_FILE, dim, ref.windows)),
    ]
    if ref.keywords_only:
        checks.append((EMBED_INPUTS_FILE, lambda: _embed_inputs(folder, ref)))
    tokens = [name for name in TOKEN_FILES if (folder / name).is_file()]
    if tokens:
        checks.append((TOKOFFSETS_FILE, lambda: _tokens(folder, ref, dim, tokens)))
    for name, check in checks:
        path = f"{rel}/{name}"
        if path in damaged:
            continue
        problem = _run_check(path, check)
        if problem:
            yield problem


def _run_check(path: str, check) -> Problem | None:
    """A check returns None or (kind, detail); a failure to read is a `decode` problem."""
    try:
        found = check()
    except FileNotFoundError:
        return Problem(path, "missing", "the file is missing")
    except Exception as exc:  # noqa: BLE001 - any failure to read is the file's problem
        return Problem(path, "decode", f"it does not decode: {_short(exc)}")
    except BaseException as exc:  # a panic in a native reader (pyo3's PanicException)
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        return Problem(path, "decode", f"its reader failed: {_short(exc)}")
    return Problem(path, *found) if found else None


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]


def _chunk_records(folder: Path, ref: SegmentRef) -> tuple[str, str] | None:
    table = ChunkTable(folder / CHUNKS_FILE)
    if len(table) != ref.chunks:
        return "count", f"it holds {len(table)} chunk records, the manifest says {ref.chunks}"
    row = 0
    for index, chunk in enumerate(table):
        if chunk.window_start != row or chunk.window_count < 0:
            return "shape", f"chunk {index} starts at window {chunk.window_start}, not {row}"
        row += chunk.window_count
    if row != ref.windows:
        return "shape", f"its chunks own {row} windows, the manifest says {ref.windows}"
    return None


def _embed_inputs(folder: Path, ref: SegmentRef) -> tuple[str, str] | None:
    """A keywords-only segment: no windows, and one text to embed per chunk."""
    if ref.windows:
        return "shape", f"a keywords-only segment with {ref.windows} windows"
    inputs = load_embed_inputs(folder)
    if len(inputs) != ref.chunks:
        return "count", f"it holds {len(inputs)} texts to embed, the manifest says {ref.chunks}"
    return None


def _array(path: Path, shape: tuple[int, ...], dtype) -> tuple[str, str] | None:
    array = np.load(path, mmap_mode="r", allow_pickle=False)
    if array.shape != shape or array.dtype != np.dtype(dtype):
        found = f"{np.dtype(array.dtype).name} {array.shape}"
        return "shape", f"it holds {found}, not {np.dtype(dtype).name} {shape}"
    return None


def _vectors(path: Path, shape: tuple[int, int]) -> tuple[str, str] | None:
    """Vectors of the shape the records say, each finite (a NaN or an infinity has no
    direction: every search that meets it would rank by it)."""
    wrong = _array(path, shape, np.float16)
    if wrong:
        return wrong
    vectors = np.load(path, mmap_mode="r", allow_pickle=False)
    for start in range(0, len(vectors), FINITE_ROWS):
        broken = ~np.isfinite(vectors[start : start + FINITE_ROWS]).all(axis=1)
        if broken.any():
            window = start + int(np.argmax(broken))
            return "value", (
                f"window {window}'s vector is not finite (NaN or infinity): `docdex index "
                "--full` embeds every source again"
            )
    return None


def _owners(path: Path, ref: SegmentRef) -> tuple[str, str] | None:
    wrong = _array(path, (ref.windows,), np.int32)
    if wrong:
        return wrong
    owners = np.load(path, allow_pickle=False)
    if len(owners) and (
        owners.min() < 0 or owners.max() >= ref.chunks or np.any(np.diff(owners) < 0)
    ):
        return "shape", f"its rows name chunks outside 0..{ref.chunks - 1} or out of order"
    return None


def _hnsw(path: Path, dim: int, windows: int) -> tuple[str, str] | None:
    import hnswlib

    if not path.is_file():
        raise FileNotFoundError(path)
    if not windows:
        return None
    index = hnswlib.Index(space="cosine", dim=dim)
    index.load_index(str(path), max_elements=windows)
    count = index.get_current_count()
    if count != windows:
        return "count", f"the graph holds {count} vectors, the segment has {windows} windows"
    return None


def _tokens(folder: Path, ref: SegmentRef, dim: int, present: list[str]) -> tuple[str, str] | None:
    if len(present) != len(TOKEN_FILES):
        missing = ", ".join(sorted(set(TOKEN_FILES) - set(present)))
        return "missing", f"token vector files are partly missing ({missing})"
    offsets = np.load(folder / TOKOFFSETS_FILE, allow_pickle=False)
    if offsets.shape != (ref.chunks + 1,) or offsets[0] != 0 or np.any(np.diff(offsets) < 0):
        return "shape", f"token offsets have shape {offsets.shape}, not ({ref.chunks + 1},)"
    rows = int(offsets[-1])
    for name, shape in (
        (TOKVECS_FILE, (rows,)),
        (TOKSCALE_FILE, (rows,)),
        (TOKIDS_FILE, (rows,)),
        (TOKPROJ_FILE, (dim,)),
    ):
        array = np.load(folder / name, mmap_mode="r", allow_pickle=False)
        if array.shape[:1] != shape:
            return "shape", f"{name} has {array.shape[:1]} rows, not {shape}"
    return None


def _pages(
    data: DataDir,
    name: str,
    files: int,
    chunks: int,
    live: dict[str, set[int]],
    damaged: set[str],
) -> list[Problem]:
    path = f"pages/{name}"
    if path in damaged:
        return []

    def check() -> tuple[str, str] | None:
        pages = load_pages(data, name, ServedPage)
        refs = [ref for page in pages for ref in page.chunks]
        if len(pages) != files or len(refs) != chunks:
            return "count", (
                f"it holds {len(pages)} pages and {len(refs)} chunks, "
                f"the manifest says {files} and {chunks}"
            )
        for ref in refs:
            if ref.index not in live.get(ref.segment, ()):
                return "count", f"it names chunk {ref.index} of segment {ref.segment}, not live"
        return None

    problem = _run_check(path, check)
    return [problem] if problem else []


def _text(data: DataDir, manifest: Manifest, damaged: set[str]) -> list[Problem]:
    rel = f"text/{manifest.text_index}"
    if any(f.startswith(rel + "/") for f in damaged):
        return []  # a damaged file would only be reported again, less precisely
    path = data.text_index(manifest.text_index)
    if not path.is_dir():
        return [Problem(rel, "missing", "the text index directory is missing")]

    def check() -> tuple[str, str] | None:
        import tantivy

        try:
            index = tantivy.Index.open(str(path))
            searcher = index.searcher()
        except ValueError as exc:
            return "open", f"the text index does not open: {_short(exc)}"
        if searcher.num_docs != manifest.chunks:
            return "count", (
                f"the text index holds {searcher.num_docs} documents, "
                f"the version has {manifest.chunks} live chunks"
            )
        hits = searcher.search(tantivy.Query.all_query(), limit=max(1, manifest.chunks)).hits
        for _score, address in hits:
            searcher.doc(address)  # reads the document store
        return None

    problem = _run_check(rel, check)
    return [problem] if problem else []
