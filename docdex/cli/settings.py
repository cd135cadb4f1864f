"""`docdex settings [set KEY VALUE | unset KEY]`: the [settings] of docdex.toml, shown with
their defaults and changed in place (comments and layout kept), each value checked as
loading the file checks it."""

from __future__ import annotations

import argparse

import msgspec
from tomlkit.items import Table

from docdex.index_format.config import (
    ConfigError,
    Settings,
    config_document,
    edit_config,
    load_config,
    settings_table,
)

from .commands import EXIT_OK, Commands, Context, add_command, json_flag, print_answer

DEFAULTS = Settings()
# what changing a setting costs the next run, when it costs more than what it touches
COSTS = {
    "embedder": "the next `docdex index` embeds every page of every source again{chunks}, "
    "unless a version still kept was built with this embedder (its vectors are copied); "
    "the current version serves until the new one is published",
}


class SettingRow(msgspec.Struct):
    key: str
    value: object
    default: object


def add_commands(commands: Commands) -> None:
    settings = add_command(
        commands, "settings", cmd_settings_show, "show or change the settings of docdex.toml"
    )
    json_flag(settings)
    actions = settings.add_subparsers(metavar="ACTION")
    change = add_command(
        actions, "set", cmd_settings_set, "set a setting (checked as loading docdex.toml checks it)"
    )
    change.add_argument("key", metavar="KEY", help="a setting `docdex settings` lists")
    change.add_argument(
        "value", metavar="VALUE", help="its new value: a number, true, false or text"
    )
    unset = add_command(actions, "unset", cmd_settings_unset, "set a setting back to its default")
    unset.add_argument("key", metavar="KEY")


def cmd_settings_show(ctx: Context, args: argparse.Namespace) -> int:
    current = load_config(ctx.data).settings
    rows = [
        SettingRow(key, getattr(current, key), getattr(DEFAULTS, key))
        for key in Settings.__struct_fields__
    ]
    print_answer(rows, args.json, _print_rows)
    return EXIT_OK


def _print_rows(rows: list[SettingRow]) -> None:
    width = max(len(row.key) for row in rows)
    for row in rows:
        default = "(the default)" if row.value == row.default else f"(default {_text(row.default)})"
        print(f"{row.key:<{width}}  {_text(row.value)}  {default}")


def cmd_settings_set(ctx: Context, args: argparse.Namespace) -> int:
    key = _known_key(args.key)
    value = _typed(key, args.value)
    old = load_config(ctx.data).settings
    new = edit_config(ctx.data, lambda document: settings_table(document).update({key: value}))
    was = getattr(old, key)
    changed = getattr(new.settings, key) != was
    print(
        f"{key} = {_text(getattr(new.settings, key))} "
        + (f"(was {_text(was)})" if changed else "(unchanged)")
    )
    if changed:
        _say_cost(ctx, key)
    return EXIT_OK


def cmd_settings_unset(ctx: Context, args: argparse.Namespace) -> int:
    key = _known_key(args.key)
    config = load_config(ctx.data)
    default = _text(getattr(DEFAULTS, key))
    if key not in settings_table(config_document(ctx.data)):
        print(f"{key} is not set in {ctx.data.config}: it has its default, {default}")
        return EXIT_OK
    was = getattr(config.settings, key)
    new = edit_config(ctx.data, lambda document: _remove(settings_table(document), key))
    print(f"{key} = {default} (the default; was {_text(was)})")
    if getattr(new.settings, key) != was:
        _say_cost(ctx, key)
    return EXIT_OK


def _remove(table: Table, key: str) -> None:
    del table[key]


def _known_key(key: str) -> str:
    if key not in Settings.__struct_fields__:
        raise ConfigError(
            f"unknown setting {key!r}; the settings: {', '.join(Settings.__struct_fields__)}"
        )
    return key


def _typed(key: str, text: str) -> object:
    """`text` as the setting's type (a number, true or false); left as text when it is not
    one, so that the check of the whole file says what is wrong, as loading it would."""
    try:
        return msgspec.convert(text, type(getattr(DEFAULTS, key)), strict=False)
    except msgspec.ValidationError:
        return text


def _say_cost(ctx: Context, key: str) -> None:
    cost = COSTS.get(key)
    if cost is None:
        return
    from docdex.index_format.store import load_current

    manifest = load_current(ctx.data) if ctx.data.root.is_dir() else None
    chunks = f" ({manifest.chunks:,} chunks in the current version)" if manifest else ""
    print(cost.format(chunks=chunks))


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
