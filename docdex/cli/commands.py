"""What every command group uses: the context a command runs in, how a command is
registered, and how it prints."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TypeVar

import msgspec

from docdex.errors import InvalidArgument
from docdex.index_format.config import SourceConfig
from docdex.index_format.environment import Environment
from docdex.index_format.layout import DataDir
from docdex.runtime.logs import LogSettings

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2
T = TypeVar("T")


class Context(msgspec.Struct, frozen=True):
    """What a command runs with: the data directory (--data, else the environment's), the
    environment, read once, and how this process logs (for the processes it starts)."""

    data: DataDir
    environment: Environment
    logs: LogSettings


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
