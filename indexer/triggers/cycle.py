"""One indexing cycle in its own process:
`python -m docdex.indexer.triggers.cycle --data D [--source S]... [--log-format F --log-level L]`.

The worker runs every cycle here, so the memory a run takes goes back to the OS when it
ends and a crash (or a kill) takes down this process only. The RunReport goes to stdout as
one JSON object; exit status 0 means a report was printed, EXIT_INVALID that the request
cannot succeed as asked (unknown source, bad configuration), anything else a failure worth
retrying. An entry point: it reads its environment (runtime/environment.py) itself and
hands the model's part of it on (`ModelEnvironment`); the worker passes its log settings
as flags.

Each source may take `source_timeout_s`, by default half of `cycle_timeout_s`
(SOURCE_SHARE): one past it fails on its own and keeps its last good pages, and the rest is
left for the other sources to be published before the worker's limit kills the cycle.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

import msgspec

from docdex.errors import DocdexError
from docdex.index_format.config import Settings, load_config
from docdex.index_format.layout import DataDir
from docdex.model.model_environment import ModelEnvironment
from docdex.runtime.environment import read_environment
from docdex.runtime.logs import FORMATS, LogSettings, configure_logging

if TYPE_CHECKING:
    from docdex.indexer.run.report import RunReport

EXIT_FAILED, EXIT_INVALID = 1, 3
SOURCE_SHARE = 0.5  # of cycle_timeout_s, for each source

log = logging.getLogger("docdex.worker")


def source_timeout_s(settings: Settings) -> float:
    """What one source may take in a cycle: its setting, else a share of the cycle's."""
    return settings.source_timeout_s or settings.cycle_timeout_s * SOURCE_SHARE


def main(argv: list[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """The cycle `argv` asks for, in the environment `environ` (default: this process's)."""
    args = _parser().parse_args(argv)
    if args.nice:
        with contextlib.suppress(OSError):
            os.nice(args.nice)
    from docdex.indexer.run.storage.full_disk import NoSpace  # after nice: the imports are heavy

    try:
        report = _index(args, os.environ if environ is None else environ)
    except NoSpace as exc:  # worth retrying once there is space again
        print(f"docdex cycle: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except DocdexError as exc:
        print(f"docdex cycle: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug: its traceback in the log, one sentence for /health
        log.debug("the indexing cycle failed", exc_info=True)
        print(
            f"docdex cycle: the run stopped on an unexpected error ({type(exc).__name__}: "
            f"{exc}); the last version keeps serving (`--log-level DEBUG` logs where)",
            file=sys.stderr,
        )
        return EXIT_FAILED
    sys.stdout.buffer.write(msgspec.json.encode(report) + b"\n")
    sys.stdout.flush()
    return 0


def _index(args: argparse.Namespace, environ: Mapping[str, str]) -> RunReport:
    environment = read_environment(environ)
    log_format = args.log_format or environment.log_format or "text"
    configure_logging(LogSettings(log_format, args.log_level or environment.log_level or "INFO"))
    from docdex.indexer.run.pipeline import index_sources

    data = DataDir(args.data)
    data.check()
    config = load_config(data)
    return index_sources(
        data,
        config,
        args.source or None,
        full=args.full,
        source_timeout_s=source_timeout_s(config.settings),
        model_environment=ModelEnvironment(environment.cache_dir, environ),
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m docdex.indexer.triggers.cycle")
    parser.add_argument("--data", required=True)
    parser.add_argument("--source", action="append", default=[], help="repeatable; none = all")
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--nice", type=int, default=0, help="niceness increment for this run")
    parser.add_argument("--log-format", choices=FORMATS, help="default: $DOCDEX_LOG_FORMAT, text")
    parser.add_argument("--log-level", help="default: $DOCDEX_LOG_LEVEL, INFO")
    return parser


if __name__ == "__main__":
    sys.exit(main())
