"""One indexing cycle in its own process:
`python -m docdex.indexer.triggers.cycle --data D [--source S]... [--embed-only]
[--log-format F --log-level L]`.

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
What a version holds without vectors (keywords first) is embedded after it is published,
within the cycle's limit and until a new request comes; `--embed-only` does only that.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import msgspec

from docdex.errors import DocdexError
from docdex.index_format.config import Settings, load_config
from docdex.index_format.layout import DataDir
from docdex.index_format.queue import pending_requests
from docdex.model.model_environment import ModelEnvironment
from docdex.runtime.environment import read_environment
from docdex.runtime.logs import FORMATS, LogSettings, configure_logging

if TYPE_CHECKING:
    from docdex.indexer.run.report import RunReport

EXIT_FAILED, EXIT_INVALID = 1, 3
SOURCE_SHARE = 0.5  # of cycle_timeout_s, for each source
EMBED_SHARE = 0.9  # of cycle_timeout_s, until which a cycle embeds what waits for vectors

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

    from docdex.indexer.run.pipeline import embed_waiting, index_sources

    data = DataDir(args.data)
    data.check()
    config = load_config(data)
    models = ModelEnvironment(environment.cache_dir, environ)
    embed_while = embedding_window(data, config.settings)
    if args.embed_only:
        return embed_waiting(data, config, embed_while, model_environment=models)
    return index_sources(
        data,
        config,
        args.source or None,
        full=args.full,
        source_timeout_s=source_timeout_s(config.settings),
        model_environment=models,
        embed_while=embed_while,
    )


def embedding_window(
    data: DataDir, settings: Settings, clock: Callable[[], float] = time.monotonic
) -> Callable[[], bool]:
    """Whether the cycle goes on embedding what waits for vectors: until EMBED_SHARE of
    `cycle_timeout_s` has passed, or a request came after the cycle began (the worker then
    indexes it first, keywords first, and the next cycle embeds on)."""
    deadline = clock() + settings.cycle_timeout_s * EMBED_SHARE
    known = {r.id for r in pending_requests(data)}

    def embed_while() -> bool:
        return clock() < deadline and all(r.id in known for r in pending_requests(data))

    return embed_while


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m docdex.indexer.triggers.cycle")
    parser.add_argument("--data", required=True)
    parser.add_argument("--source", action="append", default=[], help="repeatable; none = all")
    parser.add_argument("--full", action="store_true")
    parser.add_argument(
        "--embed-only", action="store_true", help="only embed what the index holds without vectors"
    )
    parser.add_argument("--nice", type=int, default=0, help="niceness increment for this run")
    parser.add_argument("--log-format", choices=FORMATS, help="default: $DOCDEX_LOG_FORMAT, text")
    parser.add_argument("--log-level", help="default: $DOCDEX_LOG_LEVEL, INFO")
    return parser


if __name__ == "__main__":
    sys.exit(main())
