"""What every command group uses: the context a command runs in, how a command is
registered, and how it prints."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

from docdex.errors import InvalidArgument
from docdex.index_format.config import (
    DEFAULT_EXCLUDE,
    DEFAULT_INCLUDE,
    SourceConfig,
    source_kind,
    validate_ref_pattern,
)
from docdex.index_format.layout import DataDir
from docdex.model.model_environment import ModelEnvironment
from docdex.runtime.environment import Environment
from docdex.runtime.logs import LogSettings

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2
EXIT_BROKEN_PIPE = 141  # `docdex ... | head`: the reader left; 128 + SIGPIPE, as git ends then
T = TypeVar("T")


class Context(msgspec.Struct, frozen=True):
    """What a command runs with: the data directory (--data, else the environment's), the
    environment, read once, how this process logs (for the processes it starts), and what
    the models it loads take from the environment (the cache directory, keys)."""

    data: DataDir
    environment: Environment
    logs: LogSettings
    model_environment: ModelEnvironment


Command = Callable[[Context, argparse.Namespace], int]
Commands = argparse._SubParsersAction  # what add_subparsers returns: commands are added to it


class UsageError(InvalidArgument):
    """A command line that asks for what cannot be: exit status 2, as for argparse's own."""


def add_command(
    commands: Commands,
    name: str,
    run: Command,
    help: str,
    daemon: bool = False,
) -> argparse.ArgumentParser:
    """A command `name` that runs `run`. A `daemon` (a command that runs until stopped) logs
    at INFO unless told otherwise, the others at WARNING."""
    parser = commands.add_parser(name, help=help, description=help)
    parser.set_defaults(run=run, default_log_level="INFO" if daemon else "WARNING")
    return parser


def json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the answer as one JSON document: an object, or an array of them for a listing",
    )


def print_json(value: object) -> None:
    sys.stdout.write(msgspec.json.format(msgspec.json.encode(value).decode(), indent=2) + "\n")


def print_answer(value: T, as_json: bool, as_text: Callable[[T], None]) -> None:
    """`value` as one JSON object (--json), else as `as_text` prints it for people."""
    if as_json:
        print_json(value)
    else:
        as_text(value)


def refs_text(source: SourceConfig) -> str:
    """The refs a source indexes: its branch (or HEAD's), then its `refs` patterns."""
    branch = source.branch or "HEAD branch"
    return branch + (f" + refs {' '.join(source.refs)}" if source.refs else "")


def source_options(parser: argparse.ArgumentParser, changing: bool) -> None:
    """The options `source add` and `source set` share; when `changing`, an option not
    given is None (the setting stays)."""
    unset = None if changing else ""
    parser.add_argument("--branch", default=unset, help="branch to index (default: HEAD's)")
    parser.add_argument(
        "--ref",
        action="append",
        default=None if changing else [],
        metavar="PATTERN",
        help="more branches or tags to index, each on its own, e.g. 'release/*' or 'v2.*' "
        "(repeatable; `*` matches '/' too)",
    )
    parser.add_argument(
        "--description", default=unset, help="one line on what the source holds, shown to agents"
    )
    parser.add_argument(
        "--include",
        action="append",
        metavar="GLOB",
        help=(
            "add a glob to the files the source indexes (repeatable)"
            if changing
            else f"files to index (repeatable; default: {' '.join(DEFAULT_INCLUDE)})"
        ),
    )
    parser.add_argument(
        "--exclude",
        action="append",
        default=None if changing else [],
        metavar="GLOB",
        help=(
            "add a glob to the files the source skips, its default excludes kept (repeatable)"
            if changing
            else f"files to skip (repeatable), besides the defaults ({' '.join(DEFAULT_EXCLUDE)})"
        ),
    )
    if changing:
        for field in ("include", "exclude"):
            parser.add_argument(
                f"--no-{field}",
                action="append",
                metavar="GLOB",
                help=f"remove a glob from the source's {field}s (repeatable; `docdex source "
                "list` shows them)",
            )
    if not changing:
        parser.add_argument(
            "--no-default-excludes",
            action="store_true",
            help="index hidden folders, dependencies, test data and agents' files too",
        )


def new_source_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The SourceConfig fields of a new source, from `source_options(changing=False)`."""
    return {
        "branch": args.branch,
        "refs": [validate_ref_pattern(pattern) for pattern in args.ref],
        "include": args.include or list(DEFAULT_INCLUDE),
        "exclude": ([] if args.no_default_excludes else list(DEFAULT_EXCLUDE)) + args.exclude,
        "description": args.description.strip(),
    }


def added_text(source: SourceConfig, then: str = "") -> str:
    """How a command that registers a source says so (and what it skips)."""
    added = f"added source {source.name} ({source_kind(source.location)}: {source.location})"
    lines = [added + (f"; {then}" if then else "")]
    if source.exclude:
        lines.append(f"  skipping {', '.join(source.exclude)}")
    return "\n".join(lines)
