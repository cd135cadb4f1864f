"""docdex.toml edited by commands: `docdex settings` shows, sets and unsets the [settings]
keys, each value checked as loading the file checks it, and every command that writes the
file (settings, source add/set/remove) keeps the user's comments and layout."""

from __future__ import annotations

import json

from docdex.cli import main
from docdex.index_format.config import Settings, load_config
from docdex.index_format.layout import DataDir

from gitrepo import Workspace

COMMENTED = """# docdex for the team's docs: ask Ana before changing the embedder
[settings]
keep_versions = 5  # a week of pushes
reranker = "default"

# the handbook
[[sources]]
name = "handbook"  # the public one
location = "{location}"
"""


def commented_data(tmp_path) -> tuple[DataDir, Workspace]:
    ws = Workspace(tmp_path / "repo")
    data = DataDir(tmp_path / "data")
    data.ensure()
    data.config.write_text(COMMENTED.format(location=ws.bare), encoding="utf-8")
    return data, ws


def docdex(data: DataDir, *args: str) -> int:
    return main(["--data", str(data.root), *args])


def test_every_command_that_writes_docdex_toml_keeps_its_comments(tmp_path, capsys) -> None:
    data, ws = commented_data(tmp_path)
    assert docdex(data, "source", "add", "api", str(ws.bare)) == 0
    assert docdex(data, "source", "set", "handbook", "--description", "the handbook") == 0
    assert docdex(data, "settings", "set", "stale_after_s", "60") == 0
    assert docdex(data, "settings", "unset", "reranker") == 0
    assert docdex(data, "source", "remove", "api") == 0
    text = data.config.read_text(encoding="utf-8")
    for comment in ("# docdex for the team's docs", "# a week of pushes", "# the handbook"):
        assert comment in text
    assert 'name = "handbook"  # the public one' in text
    assert "reranker" not in text and "api" not in text
    config = load_config(data)
    assert config.settings.keep_versions == 5 and config.settings.stale_after_s == 60
    assert [s.description for s in config.sources] == ["the handbook"]


def test_settings_shows_each_value_and_its_default(tmp_path, capsys) -> None:
    data, _ = commented_data(tmp_path)
    assert docdex(data, "settings") == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line}
    assert set(Settings.__struct_fields__) <= set(lines)
    assert "5" in lines["keep_versions"] and "default 3" in lines["keep_versions"]
    assert docdex(data, "settings", "--json") == 0
    shown = {row["key"]: row for row in json.loads(capsys.readouterr().out)}
    assert shown["keep_versions"] == {"key": "keep_versions", "value": 5, "default": 3}
    assert shown["embedder"]["value"] == shown["embedder"]["default"] == "minilm"


def test_settings_are_checked_as_loading_checks_them(tmp_path, capsys) -> None:
    data, _ = commented_data(tmp_path)
    before = data.config.read_text(encoding="utf-8")
    assert docdex(data, "settings", "set", "keep_versions", "many") == 1
    assert "keep_versions" in capsys.readouterr().err
    assert docdex(data, "settings", "set", "cycle_timeout_s", "0") == 1  # ge=1
    assert "cycle_timeout_s" in capsys.readouterr().err
    assert docdex(data, "settings", "set", "keep_version", "4") == 1
    err = capsys.readouterr().err
    assert "unknown setting 'keep_version'" in err and "keep_versions" in err
    assert docdex(data, "settings", "set", "embedder", "e5") == 1
    assert "embedder 'e5' is neither" in capsys.readouterr().err
    assert docdex(data, "settings", "set", "late_interaction", "maybe") == 1
    capsys.readouterr()
    assert data.config.read_text(encoding="utf-8") == before  # nothing refused was written
    assert docdex(data, "settings", "set", "late_interaction", "true") == 0
    assert load_config(data).settings.late_interaction is True


def test_changing_the_embedder_says_what_it_costs(tmp_path, capsys) -> None:
    data, _ = commented_data(tmp_path)
    assert docdex(data, "settings", "set", "embedder", "minilm-int8") == 0
    said = capsys.readouterr().out
    assert "embedder = minilm-int8 (was minilm)" in said
    assert "embeds every page of every source again" in said
    assert docdex(data, "settings", "unset", "embedder") == 0
    assert "embedder = minilm (the default; was minilm-int8)" in capsys.readouterr().out
    assert docdex(data, "settings", "unset", "embedder") == 0  # already the default
    assert "not set" in capsys.readouterr().out
