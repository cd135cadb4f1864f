"""Run a docdex writer that stops itself (SIGSTOP) at a named point, for the crash scenario
to kill -9 it exactly there: `python -m bench.faults.stopper POINT SKIP -- ARGS...`.

ARGS are `python -m docdex.indexer.triggers.cycle`'s (or, after `cli`, docdex's: `cli --data D gc`).
The point is hit at its SKIP+1-th occurrence; a process that never reaches it runs to the
end. Point `trace` stops nowhere: it prints the bytes in use before each publish (the
disk-full scenario sizes its filesystem from them). Nothing of docdex changes: the points
wrap the calls it makes (os.replace of its atomic writes and directory publishes, the
merge of compaction, the garbage collector's deletes).
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from docdex.indexer.run import pipeline as _pipeline  # noqa: F401  (imported before patching)
from docdex.indexer.run.storage import garbage_collection, segments

# point -> the folder (or file) an os.replace publishes into; the others wrap functions
REPLACE_POINTS = {
    "segment": "segments",  # a new segment fully written, not yet renamed into place
    "text": "text",  # the version's Tantivy directory committed, not yet renamed
    "pages": "pages",  # a page table written and fsynced, not yet renamed
    "manifest": "versions",  # the manifest written and fsynced, not yet renamed
    "current": "CURRENT",  # everything published but CURRENT
}
POINTS = [*REPLACE_POINTS, "published", "compaction", "gc", "trace"]
TRACE = "chaos-trace"  # trace: a stderr line before each publish, with the bytes in use


def trace(where: str, folder: Path) -> None:
    stat = os.statvfs(folder)
    used = (stat.f_blocks - stat.f_bfree) * stat.f_frsize
    print(f"{TRACE} {where} {used}", file=sys.stderr, flush=True)


class Countdown:
    def __init__(self, skip: int) -> None:
        self.left = skip

    def hit(self) -> None:
        if self.left == 0:
            os.kill(os.getpid(), signal.SIGSTOP)  # the campaign kills us here
        self.left -= 1


def arm(point: str, skip: int) -> None:
    countdown = Countdown(skip)
    replace = os.replace

    def watched_replace(src, dst, *args, **kwargs):
        target = Path(dst)
        where = target.name if target.name == "CURRENT" else target.parent.name
        if point in REPLACE_POINTS and where == REPLACE_POINTS[point]:
            countdown.hit()
        if point == "trace" and where in REPLACE_POINTS.values():
            trace(where, target.parent)
        replace(src, dst, *args, **kwargs)
        if point == "published" and target.name == "CURRENT":
            countdown.hit()  # CURRENT renamed, its directory not yet fsynced, gc not run

    os.replace = watched_replace
    if point == "compaction":
        write = segments._MergeBuffer.write

        def watched_write(self, *args, **kwargs):
            countdown.hit()
            return write(self, *args, **kwargs)

        segments._MergeBuffer.write = watched_write
    if point == "gc":
        remove = garbage_collection._remove

        def watched_remove(path):
            countdown.hit()
            return remove(path)

        garbage_collection._remove = watched_remove


def main(argv: list[str]) -> int:
    point, skip, rest = argv[0], int(argv[1]), argv[argv.index("--") + 1 :]
    if point not in POINTS:
        raise SystemExit(f"unknown point {point!r}; choose from {', '.join(POINTS)}")
    arm(point, skip)
    if rest[0] == "cli":
        from docdex.cli import main as cli_main

        return cli_main(rest[1:])
    from docdex.indexer.triggers.cycle import main as cycle_main

    return cycle_main(rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
