"""`docdex source add|list|remove`: the sources of docdex.toml."""

from __future__ import annotations

import argparse
from pathlib import Path

import msgspec

from docdex.index_format.config import (
    DEFAULT_INCLUDE,
    ConfigError,
    SourceConfig,
    load_config,
    save_config,
    source_kind,
    validate_ref_pattern,
    validate_source_name,
)

from .commands import EXIT_OK, Commands, Context, add_command, json_flag, print_answer, refs_text


def add_commands(commands: Commands) -> None:
    source = commands.add_parser("source", help="add, list or remove sources")
    actions = source.add_subparsers(metavar="ACTION")
    _add_add(actions)
    json_flag(add_command(actions, "list", cmd_source_list, "list the configured sources"))
    remove = add_command(
        actions,
        "remove",
        cmd_source_remove,
        "remove a source (its documents leave the next version)",
    )
    remove.add_argument("name")


def _add_add(actions: Commands) -> None:
    add = add_command(actions, "add", cmd_source_add, "register a git repository as a source")
    add.add_argument("name")
    add.add_argument("location", help="bare repository, checkout, or git URL")
    add.add_argument("--branch", default="", help="branch to index (default: HEAD's)")
    add.add_argument(
        "--ref",
        action="append",
        default=[],
        metavar="PATTERN",
        help="more branches or tags to index, each on its own, e.g. 'release/*' or 'v2.*' "
        "(repeatable; `*` matches '/' too)",
    )
    add.add_argument(
        "--description", default="", help="one line on what the source holds, shown to agents"
    )
    add.add_argument(
        "--include",
        action="append",
        metavar="GLOB",
        help=f"files to index (repeatable; default: {' '.join(DEFAULT_INCLUDE)})",
    )
    add.add_argument(
        "--exclude", action="append", default=[], metavar="GLOB", help="files to skip (repeatable)"
    )


def cmd_source_add(ctx: Context, args: argparse.Namespace) -> int:
    name = validate_source_name(args.name)
    refs = [validate_ref_pattern(pattern) for pattern in args.ref]
    location = args.location
    kind = source_kind(location)
    if kind != "remote":
        location = str(Path(location).expanduser().resolve())
    ctx.data.ensure()
    config = load_config(ctx.data)
    if any(s.name == name for s in config.sources):
        raise ConfigError(f"source {name!r} already exists; remove it first to change it")
    source = SourceConfig(
        name=name,
        location=location,
        branch=args.branch,
        refs=refs,
        include=args.include or list(DEFAULT_INCLUDE),
        exclude=args.exclude,
        description=args.description.strip(),
    )
    save_config(ctx.data, msgspec.structs.replace(config, sources=[*config.sources, source]))
    print(f"added source {name} ({kind}: {location}); run `docdex index {name}` to index it")
    return EXIT_OK


def cmd_source_list(ctx: Context, args: argparse.Namespace) -> int:
    config = load_config(ctx.data)
    if not config.sources and not args.json:
        print(config.describe_sources())
    print_answer(config.sources, args.json, _print_sources)
    return EXIT_OK


def _print_sources(sources: list[SourceConfig]) -> None:
    for s in sources:
        print(
            f"{s.name}\t{s.location}\t{refs_text(s)}\tinclude={','.join(s.include)}"
            + (f"\texclude={','.join(s.exclude)}" if s.exclude else "")
            + (f"\t{s.description}" if s.description else "")
        )


def cmd_source_remove(ctx: Context, args: argparse.Namespace) -> int:
    config = load_config(ctx.data)
    config.source(args.name)  # raises with the list of valid names
    kept = [s for s in config.sources if s.name != args.name]
    save_config(ctx.data, msgspec.structs.replace(config, sources=kept))
    print(f"removed source {args.name}; its documents leave the next version (`docdex index`)")
    return EXIT_OK
