"""`docdex source add|set|list|remove`: the sources of docdex.toml."""

from __future__ import annotations

import argparse
from pathlib import Path

import msgspec

from docdex.index_format.config import (
    ConfigError,
    SourceConfig,
    load_config,
    save_config,
    source_kind,
    validate_ref_pattern,
    validate_source_name,
)

from .commands import (
    EXIT_OK,
    Commands,
    Context,
    add_command,
    added_text,
    json_flag,
    new_source_settings,
    print_answer,
    refs_text,
    source_options,
)
from .hooks import pushes_text


def add_commands(commands: Commands) -> None:
    source = commands.add_parser("source", help="add, change, list or remove sources")
    actions = source.add_subparsers(metavar="ACTION")
    _add_add(actions)
    _add_set(actions)
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
    source_options(add, changing=False)


def _add_set(actions: Commands) -> None:
    change = add_command(
        actions,
        "set",
        cmd_source_set,
        "change a source's settings, keeping what is indexed (an option given replaces its "
        "setting; --include and --exclude add globs, --no-include and --no-exclude remove them)",
    )
    change.add_argument("name")
    change.add_argument("--location", help="bare repository, checkout, or git URL")
    source_options(change, changing=True)
    change.add_argument("--no-refs", action="store_true", help="index the branch alone")
    change.add_argument("--url-template", help="where people read a file (README, Settings)")
    change.add_argument("--site-url", help="the published site of these docs")
    change.add_argument("--site-dir", help="the folder that is the site's root")


def _location(location: str) -> str:
    """The location, a local path made absolute."""
    if source_kind(location) == "remote":
        return location
    return str(Path(location).expanduser().resolve())


def cmd_source_add(ctx: Context, args: argparse.Namespace) -> int:
    name = validate_source_name(args.name)
    location = _location(args.location)
    ctx.data.ensure()
    config = load_config(ctx.data)
    if any(s.name == name for s in config.sources):
        raise ConfigError(
            f"source {name!r} already exists; change it with `docdex source set {name}`"
        )
    source = SourceConfig(name=name, location=location, **new_source_settings(args))
    save_config(ctx.data, msgspec.structs.replace(config, sources=[*config.sources, source]))
    print(added_text(source, then=f"run `docdex index {name}` to index it"))
    _refresh_hooks(ctx, [location])
    return EXIT_OK


def cmd_source_set(ctx: Context, args: argparse.Namespace) -> int:
    config = load_config(ctx.data)
    old = config.source(args.name)  # raises with the list of valid names
    changes = _changes(old, args)
    if not changes:
        raise ConfigError("nothing to change: give the settings to change (see --help)")
    new = msgspec.structs.replace(old, **changes)
    save_config(
        ctx.data,
        msgspec.structs.replace(
            config, sources=[new if s.name == old.name else s for s in config.sources]
        ),
    )
    changed = [field for field, value in changes.items() if getattr(old, field) != value]
    what = ", ".join(changed) if changed else "nothing (the settings were already these)"
    print(
        f"changed source {old.name}: {what}; what is indexed stays until `docdex index "
        f"{old.name}`, which reads again only what the change touches"
    )
    for field in sorted(GLOB_SETTINGS & set(changed)):
        print(f"  {field}: {', '.join(getattr(new, field)) or '(none)'}")
    if set(changed) & HOOKED_SETTINGS:
        _refresh_hooks(ctx, [old.location, new.location])
    return EXIT_OK


HOOKED_SETTINGS = {"location", "branch", "refs"}  # what an installed hook matches pushes with
GLOB_SETTINGS = {"include", "exclude"}  # lists `source set` adds globs to and removes them from


def _refresh_hooks(ctx: Context, locations: list[str]) -> None:
    from docdex.hooks.installer import refresh_hooks

    for done in refresh_hooks(ctx.data, locations):
        print(f"rewrote the hook {done.hook}: {pushes_text(done.repository, done.tracked)}")


def _changes(old: SourceConfig, args: argparse.Namespace) -> dict[str, object]:
    """The settings `source set` was given, by SourceConfig field."""
    changes: dict[str, object] = {}
    if args.location is not None:
        changes["location"] = _location(args.location)
    if args.no_refs or args.ref is not None:
        changes["refs"] = [validate_ref_pattern(p) for p in (args.ref or [])]
    if args.description is not None:
        changes["description"] = args.description.strip()
    for field in ("branch", "url_template", "site_url", "site_dir"):
        value = getattr(args, field)
        if value is not None:
            changes[field] = value
    for field in sorted(GLOB_SETTINGS):
        added, removed = getattr(args, field), getattr(args, f"no_{field}")
        if added or removed:
            changes[field] = _edited_globs(old, field, added or [], removed or [])
    return changes


def _edited_globs(old: SourceConfig, field: str, added: list[str], removed: list[str]) -> list[str]:
    """The source's include or exclude globs with `removed` taken out, then `added`
    appended (each once)."""
    globs: list[str] = list(getattr(old, field))
    for glob in removed:
        if glob not in globs:
            raise ConfigError(
                f"{glob!r} is not among the {field}s of source {old.name}: "
                f"{', '.join(globs) or '(none)'}"
            )
        globs.remove(glob)
    return globs + [glob for glob in dict.fromkeys(added) if glob not in globs]


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
    removed = config.source(args.name)  # raises with the list of valid names
    kept = [s for s in config.sources if s.name != args.name]
    save_config(ctx.data, msgspec.structs.replace(config, sources=kept))
    print(f"removed source {args.name}; its documents leave the next version (`docdex index`)")
    _refresh_hooks(ctx, [removed.location])
    return EXIT_OK
