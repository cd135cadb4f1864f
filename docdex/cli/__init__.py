"""The `docdex` command: a thin argparse layer over the application.

Each command group is a module (sources, settings, indexing, inspection, querying, serving,
hooks, ...)
whose `add_commands` registers its commands; a command is a function of the `Context` and
its parsed arguments that returns the exit status. `main` is the entry point: it reads the
environment once (runtime/environment.py; a flag wins over its variable), sets up
logging, and catches `DocdexError` once: one line on stderr, exit 1 (2 for a usage error);
a reader that closed stdout early (`| head`) ends it quietly.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path

from docdex.errors import DocdexError
from docdex.index_format.layout import DataDir
from docdex.model.model_environment import ModelEnvironment
from docdex.runtime.environment import read_environment
from docdex.runtime.logs import FORMATS, LoggingError, LogSettings, configure_logging, level_number

from . import (
    auth,
    changelog,
    hooks,
    indexing,
    inspection,
    models,
    querying,
    serving,
    settings,
    sources,
)
from .commands import EXIT_BROKEN_PIPE, EXIT_ERROR, EXIT_USAGE, Context, UsageError

GROUPS = (
    sources,
    settings,
    indexing,
    inspection,
    querying,
    changelog,
    serving,
    hooks,
    auth,
    models,
)


def main(argv: list[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """`docdex ARGV...` in the environment `environ` (default: this process's)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "run"):
        parser.print_help()
        return EXIT_USAGE
    try:
        context = _context(args, os.environ if environ is None else environ)
        configure_logging(context.logs)
        return args.run(context, args)
    except DocdexError as exc:
        print(f"docdex: error: {exc}", file=sys.stderr)
        return EXIT_USAGE if isinstance(exc, UsageError) else EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        _drop_stdout()
        return EXIT_BROKEN_PIPE


def _drop_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush meets no broken pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="docdex", description="Documentation search for AI agents, from markdown in git."
    )
    parser.add_argument("--version", action="version", version=f"docdex {_version()}")
    parser.add_argument(
        "--data", help="data directory (default: $DOCDEX_DATA or $XDG_DATA_HOME/docdex)"
    )
    parser.add_argument(
        "--log-format",
        choices=FORMATS,
        help="log lines as readable text or JSON lines (default: $DOCDEX_LOG_FORMAT or text)",
    )
    parser.add_argument(
        "--log-level",
        type=_level_name,
        help="DEBUG, INFO, WARNING or ERROR (default: $DOCDEX_LOG_LEVEL, else INFO for "
        "serve, mcp, watch and worker and WARNING for the others)",
    )
    commands = parser.add_subparsers(metavar="COMMAND")
    for group in GROUPS:
        group.add_commands(commands)
    return parser


def _context(args: argparse.Namespace, environ: Mapping[str, str]) -> Context:
    environment = read_environment(environ)
    data = Path(args.data).expanduser().resolve() if args.data else environment.data_dir
    logs = LogSettings(
        format=args.log_format or environment.log_format or "text",
        level=args.log_level or environment.log_level or args.default_log_level,
    )
    models = ModelEnvironment(environment.cache_dir, environ)
    return Context(DataDir(data), environment, logs, models)


def _version() -> str:
    try:
        return metadata.version("docdex")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def _level_name(text: str) -> str:
    try:
        level_number(text)
    except LoggingError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text.strip().upper()


if __name__ == "__main__":
    sys.exit(main())
