"""The environment is read once, at each entry point: every variable docdex honours, checked,
flags over variables, and no module below an entry point looks at `os.environ`."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from docdex.cli import main
from docdex.index_format.config import ConfigError
from docdex.model import files
from docdex.runtime.environment import ConnectionLimits, Environment, read_environment

from lint_imports import package_dirs
from paths import ROOT

# The modules that may read the process's environment: the entry points, and the harness
# that starts a server with its caller's environment (tests, benchmarks, the demo).
ENTRY_MODULES = {"docdex/cli/__init__.py", "docdex/demo.py", "indexer/triggers/cycle.py"}
LAUNCHERS = {"docdex/serverproc.py"}
ENVIRONMENT_NAMES = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}


@pytest.fixture(autouse=True)
def keep_the_cache(monkeypatch) -> None:
    """`main` points this process's model cache at its environment's: put it back after."""
    monkeypatch.setattr(files, "_cache_root", files._cache_root)


def test_unset_variables_give_the_defaults() -> None:
    home = Path.home()
    assert read_environment({}) == Environment(
        data_dir=home / ".local/share/docdex", cache_dir=home / ".cache/docdex"
    )
    xdg = read_environment({"XDG_DATA_HOME": "/xdg/data", "XDG_CACHE_HOME": "/xdg/cache"})
    assert (xdg.data_dir, xdg.cache_dir) == (Path("/xdg/data/docdex"), Path("/xdg/cache/docdex"))
    blank = read_environment({"DOCDEX_PORT": " ", "DOCDEX_TOKEN": "", "DOCDEX_HOST": ""})
    assert (blank.port, blank.token, blank.host) == (8085, None, "127.0.0.1")


def test_every_variable_is_read() -> None:
    environment = read_environment(
        {
            "DOCDEX_DATA": "/srv/docdex",
            "DOCDEX_CACHE": "/var/cache/docdex",
            "XDG_DATA_HOME": "/ignored",
            "DOCDEX_HOST": "0.0.0.0",
            "DOCDEX_PORT": "9000",
            "DOCDEX_TOKEN": "  s3cret-Token_~  ",
            "DOCDEX_ALLOWED_HOSTS": "docs.example.com, ,Other.example ",
            "DOCDEX_HEADER_TIMEOUT": "2.5",
            "DOCDEX_IDLE_TIMEOUT": "1",
            "DOCDEX_MAX_CONNECTIONS": "50",
            "DOCDEX_LOG_FORMAT": "JSON",
            "DOCDEX_LOG_LEVEL": "debug",
            "DOCDEX_DEMO_EXIT": "1",
            "MALLOC_ARENA_MAX": "4",
        }
    )
    assert environment == Environment(
        data_dir=Path("/srv/docdex"),
        cache_dir=Path("/var/cache/docdex"),
        host="0.0.0.0",
        port=9000,
        token="s3cret-Token_~",
        allowed_hosts=("docs.example.com", "Other.example"),
        connections=ConnectionLimits(header_timeout=2.5, idle_timeout=1.0, max_connections=50),
        log_format="json",
        log_level="DEBUG",
        demo_exit=True,
        malloc_arena_max="4",
    )
    assert read_environment({"DOCDEX_DEMO_EXIT": "0"}).demo_exit is False


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("DOCDEX_PORT", "http", "DOCDEX_PORT must be a port number (1-65535), not 'http'"),
        ("DOCDEX_PORT", "70000", "DOCDEX_PORT must be a port number"),
        ("DOCDEX_TOKEN", "sécret", "DOCDEX_TOKEN must be printable ASCII"),
        ("DOCDEX_TOKEN", "tab\tinside", "DOCDEX_TOKEN must be printable ASCII"),
        ("DOCDEX_HEADER_TIMEOUT", "soon", "DOCDEX_HEADER_TIMEOUT must be a number of seconds"),
        ("DOCDEX_IDLE_TIMEOUT", "inf", "DOCDEX_IDLE_TIMEOUT must be a number of seconds"),
        ("DOCDEX_MAX_CONNECTIONS", "0", "DOCDEX_MAX_CONNECTIONS must be a whole number above 0"),
        ("DOCDEX_MAX_CONNECTIONS", "2.5", "DOCDEX_MAX_CONNECTIONS must be a whole number"),
        ("DOCDEX_LOG_FORMAT", "xml", "DOCDEX_LOG_FORMAT must be one of text, json, not 'xml'"),
        ("DOCDEX_LOG_LEVEL", "LOUD", "DOCDEX_LOG_LEVEL must be DEBUG, INFO, WARNING or ERROR"),
    ],
)
def test_a_bad_value_is_refused_naming_its_variable(name: str, value: str, says: str) -> None:
    with pytest.raises(ConfigError) as refused:
        read_environment({name: value})
    assert str(refused.value).startswith(says)


def test_flags_win_over_variables(tmp_path, capsys) -> None:
    named, flagged = tmp_path / "named", tmp_path / "flagged"
    environ = {"DOCDEX_DATA": str(named), "HOME": str(tmp_path)}
    for data in (named, flagged):
        data.mkdir()
        (data / "docdex.toml").write_text(
            f'[[sources]]\nname = "{data.name}"\nlocation = "/nowhere"\n'
        )
    assert main(["source", "list", "--json"], environ) == 0
    assert [s["name"] for s in json.loads(capsys.readouterr().out)] == ["named"]
    assert main(["--data", str(flagged), "source", "list", "--json"], environ) == 0
    assert [s["name"] for s in json.loads(capsys.readouterr().out)] == ["flagged"]


def test_a_bad_variable_stops_the_command_in_one_line(tmp_path, capsys) -> None:
    environ = {"DOCDEX_DATA": str(tmp_path), "DOCDEX_PORT": "http"}
    assert main(["source", "list"], environ) == 1
    err = capsys.readouterr().err
    assert err == "docdex: error: DOCDEX_PORT must be a port number (1-65535), not 'http'\n"


def environment_reads(path: Path) -> list[int]:
    """The lines of `path` that touch the process's environment through `os`."""
    return sorted(
        node.lineno
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if _reads_environment(node)
    )


def _reads_environment(node: ast.AST) -> bool:
    if isinstance(node, ast.Attribute):  # os.environ, os.getenv(...)
        return node.attr in ENVIRONMENT_NAMES and ast.unparse(node.value) == "os"
    if isinstance(node, ast.ImportFrom):  # from os import environ
        return node.module == "os" and any(a.name in ENVIRONMENT_NAMES for a in node.names)
    return False


def test_only_the_entry_points_read_the_environment() -> None:
    readers = {}
    for source in sorted(set(package_dirs().values())):
        for path in sorted(source.rglob("*.py")):
            if lines := environment_reads(path):
                readers[path.relative_to(ROOT).as_posix()] = lines
    allowed = ENTRY_MODULES | LAUNCHERS
    assert {name: lines for name, lines in readers.items() if name not in allowed} == {}
    assert set(readers) == allowed  # each of them still needs to be on the list


def test_the_scan_finds_every_way_of_reading(tmp_path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import os\nfrom os import getenv\n"
        "a = os.environ.get('A')\nb = os.getenv('B')\nc = os.environb\nd = os.path.sep\n"
    )
    assert environment_reads(sample) == [2, 3, 4, 5]
