"""Where things live inside a docdex data directory, and writing files so a crash cannot
leave a half-written one behind."""

from __future__ import annotations

import os
import time
from pathlib import Path

from docdex.errors import DocdexError

from .records import FORMAT_MAJOR

MARKER = "DOCDEX"
VERSION_DIGITS = 8
_TEMP_PREFIX = ".tmp-"  # write_atomic's temporary files: .tmp-PID-NAME


def version_name(version: int) -> str:
    """How a version is named on disk (CURRENT, manifests, text indexes, page tables)."""
    return f"{version:0{VERSION_DIGITS}d}"


class IndexFormatError(DocdexError):
    """The data directory or a version in it cannot be read as a docdex index."""


class DamagedIndex(IndexFormatError):
    """A file of the index does not decode: damaged, not merely of another format."""


class DataDir:
    """Paths of one data directory. It holds nothing but the root, so it is cheap to pass."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def __repr__(self) -> str:
        return f"DataDir({str(self.root)!r})"

    @property
    def config(self) -> Path:
        return self.root / "docdex.toml"

    @property
    def marker(self) -> Path:
        return self.root / MARKER

    @property
    def current(self) -> Path:
        return self.root / "CURRENT"

    @property
    def versions(self) -> Path:
        return self.root / "versions"

    @property
    def segments(self) -> Path:
        return self.root / "segments"

    @property
    def text(self) -> Path:
        return self.root / "text"

    @property
    def pages(self) -> Path:
        return self.root / "pages"

    @property
    def state(self) -> Path:
        """Mutable run state (locks, queue, metrics): never part of a version."""
        return self.root / "state"

    def mirror(self, source: str) -> Path:
        """The bare mirror a remote source is fetched into (and read from)."""
        return self.state / "mirrors" / f"{source}.git"

    def manifest(self, version: int) -> Path:
        return self.versions / f"{version_name(version)}.json"

    def segment(self, segment_id: str) -> Path:
        return self.segments / segment_id

    def text_index(self, name: str) -> Path:
        return self.text / name

    def pages_file(self, name: str) -> Path:
        return self.pages / name

    def ensure(self) -> None:
        """Create the directory tree, refusing a non-empty directory that is not docdex's."""
        if self.root.exists() and not self.marker.exists():
            if not self.root.is_dir():
                raise IndexFormatError(f"data directory {self.root} is not a directory")
            foreign = [p.name for p in self.root.iterdir() if p.name != "docdex.toml"]
            if foreign:
                raise IndexFormatError(
                    f"{self.root} is not empty and is not a docdex data directory "
                    f"(no {MARKER} file; found {', '.join(sorted(foreign)[:3])}); "
                    "choose another --data directory"
                )
        for path in (self.root, self.versions, self.segments, self.text, self.pages, self.state):
            path.mkdir(parents=True, exist_ok=True)
        if not self.marker.exists():
            write_atomic(self.marker, f"docdex index format {FORMAT_MAJOR}\n".encode())

    def check(self) -> None:
        """Raise a clear error when this is not a docdex data directory."""
        if not self.root.is_dir():
            raise IndexFormatError(
                f"data directory {self.root} does not exist; "
                "set one up with `docdex source add NAME LOCATION` (or pass --data DIR)"
            )
        if not self.marker.exists():
            raise IndexFormatError(f"{self.root} is not a docdex data directory (no {MARKER} file)")


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(path: Path) -> None:
    """fsync every new file under `path`, then the directories, deepest first.

    A file with more than one link is shared with an already published version (copy-on-
    write by hard links) and was made durable then."""
    for dirpath, _dirs, files in os.walk(path, topdown=False):
        for name in files:
            file_path = os.path.join(dirpath, name)
            if os.stat(file_path).st_nlink > 1:
                continue
            fd = os.open(file_path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_dir(Path(dirpath))


def write_atomic(path: Path, data: bytes, mode: int | None = None) -> None:
    """Write under a temporary name, fsync, rename over `path`, fsync the directory. A
    write that fails (a full disk) removes its temporary file. `mode`: the file's
    permissions from its creation on (0o600: never readable by others, not even as the
    temporary file); None: the process's defaults."""
    tmp = _temp_path(path, os.getpid())
    try:
        # without a mode, as open(tmp, "wb") makes it: 0o666 less the umask
        exclusive, perms = (0, 0o666) if mode is None else (os.O_EXCL, mode)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | exclusive, perms)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def _temp_path(path: Path, pid: int) -> Path:
    return path.with_name(f"{_TEMP_PREFIX}{pid}-{path.name}")


def remove_stale_temps(path: Path, max_age_s: float) -> list[Path]:
    """Remove the temporary files `write_atomic` left beside `path` when a writer was killed
    mid-way: those whose process is gone, and those older than `max_age_s` (their PID may
    have been reused since). What it removed."""
    suffix = f"-{path.name}"
    try:
        names = [n for n in os.listdir(path.parent) if n.startswith(_TEMP_PREFIX)]
    except FileNotFoundError:
        return []
    removed = []
    for name in names:
        pid = name[len(_TEMP_PREFIX) : -len(suffix)] if name.endswith(suffix) else ""
        if not pid.isdigit():
            continue  # another file's
        tmp = path.parent / name
        try:
            young = time.time() - tmp.stat().st_mtime < max_age_s
        except FileNotFoundError:
            continue
        if not (young and process_alive(int(pid))):
            tmp.unlink(missing_ok=True)
            removed.append(tmp)
    return removed


def process_alive(pid: int) -> bool:
    """Whether process `pid` still runs (the writer of a temp file or a progress file)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    except OverflowError:
        return False
    return True


def publish_dir(tmp: Path, final: Path) -> None:
    """Make a fully written temporary directory visible under its final name."""
    fsync_tree(tmp)
    os.replace(tmp, final)
    fsync_dir(final.parent)
