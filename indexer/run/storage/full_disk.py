"""A full disk during a run: one clear error, nothing published, the run's files removed.

Any write of a run can meet ENOSPC (or a quota): numpy's and msgpack's files, hnswlib's
graph, Tantivy's commit, a page table, the manifest, CURRENT. CURRENT is written last and
atomically, so the previous version keeps serving whatever failed; what this adds is the
error a person can act on (instead of a traceback) and the space back (the run's debris is
collected at once, not by the next run).
"""

from __future__ import annotations

import errno
import functools
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from docdex.errors import DocdexError
from docdex.index_format.layout import DataDir
from docdex.index_format.store import current_version

from .garbage_collection import collect_garbage

_FULL = (errno.ENOSPC, errno.EDQUOT)
_FULL_WORDS = ("No space left on device", "Disk quota exceeded", "os error 28")
NEARLY_FULL_BYTES = 4 << 20  # a write that fails with this little room left met a full disk
F = TypeVar("F", bound=Callable)


class NoSpace(DocdexError):
    """The data directory's filesystem is full: the run published nothing."""


def is_disk_full(exc: BaseException, data: DataDir) -> bool:
    """ENOSPC or EDQUOT, as an OSError or in the words of a library that wraps it, or a
    short write (numpy says "N requested and M written", without errno) on a disk with
    next to no room left."""
    if isinstance(exc, OSError) and exc.errno in _FULL:
        return True
    if isinstance(exc, OSError) and exc.errno is None and nearly_full(data.root):
        return True
    return any(words in str(exc) for words in _FULL_WORDS)


def nearly_full(path: Path) -> bool:
    try:
        stat = os.statvfs(path)
    except OSError:
        return False
    return stat.f_bavail * stat.f_frsize < NEARLY_FULL_BYTES


def text_writes(method: F) -> F:
    """For TextIndexBuilder's methods: Tantivy's writer thread dies of a full disk with
    "An index writer was killed ... (io::Error most likely)", a ValueError that names no
    cause; on a disk with next to no room left (its files still there) that is ENOSPC."""

    @functools.wraps(method)
    def checked(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except ValueError as exc:
            if not nearly_full(self.data.text):
                raise
            message = f"no space left for the text index ({exc})"
            raise OSError(errno.ENOSPC, message, str(self.tmp)) from exc

    return checked  # type: ignore[return-value]  # wraps keeps the signature; mypy cannot see it


@contextmanager
def disk_full_is_an_error(data: DataDir, keep_versions: int) -> Iterator[None]:
    """Turn a full disk inside the block into NoSpace, after collecting the run's files.
    Use under the writer lock."""
    try:
        yield
    except Exception as exc:
        if not is_disk_full(exc, data):
            raise
        collect_garbage(data, keep_versions)  # versions newer than CURRENT, .tmp-*, orphans
        raise NoSpace(_message(data, exc)) from None


def _message(data: DataDir, exc: BaseException) -> str:
    where = ""
    filename = getattr(exc, "filename", None)
    if filename:
        path = Path(filename)
        inside = path.is_relative_to(data.root)
        where = f" (writing {path.relative_to(data.root) if inside else path})"
    current = current_version(data)
    serving = f"version {current} keeps serving" if current else "no version was published yet"
    return (
        f"no space left on the device of {data.root}{where}: nothing was published, "
        f"{serving}; free some space and index again"
    )
