"""One indexing cycle in its own process:
`python -m docdex.indexer.triggers.cycle --data D [--source S]...`.

The worker runs every cycle here, so the memory a run takes goes back to the OS when it
ends and a crash (or a kill) takes down this process only. The RunReport goes to stdout as
one JSON object; exit status 0 means a report was printed, EXIT_INVALID that the request
cannot succeed as asked (unknown source, bad configuration), anything else a failure worth
retrying.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

import msgspec

from docdex.index_format.config import ConfigError, load_config
from docdex.index_format.layout import DataDir, IndexFormatError
from docdex.runtime.logs import configure_logging

EXIT_FAILED, EXIT_INVALID = 1, 3


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.nice:
        with contextlib.suppress(OSError):
            os.nice(args.nice)
    configure_logging()  # the worker's format and level, from the environment
    from docdex.indexer.build.nospace import NoSpace
    from docdex.indexer.build.run import (  # after nice: the import is heavy
        IndexingError,
        index_sources,
    )

    data = DataDir(args.data)
    try:
        data.check()
        report = index_sources(data, load_config(data), args.source or None, full=args.full)
    except (IndexingError, ConfigError, IndexFormatError) as exc:
        print(f"docdex cycle: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except NoSpace as exc:  # worth retrying once there is space again
        print(f"docdex cycle: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return 130
    sys.stdout.buffer.write(msgspec.json.encode(report) + b"\n")
    sys.stdout.flush()
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m docdex.indexer.triggers.cycle")
    parser.add_argument("--data", required=True)
    parser.add_argument("--source", action="append", default=[], help="repeatable; none = all")
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--nice", type=int, default=0, help="niceness increment for this run")
    return parser


if __name__ == "__main__":
    sys.exit(main())
