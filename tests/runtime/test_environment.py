"""The environment is read once, at each entry point: every variable docdex honours, checked,
flags over variables, and no module below an entry point looks at `os.environ`. What the
models need of it (the cache directory, the variables a configured model names) is handed
to them by argument: it reaches the models a command loads, and nothing of it stays behind
for what runs after the command in the same process."""

from __future__ import annotations

import ast
import json
import uuid
from pathlib import Path

import numpy as np
import pytest

from docdex.cli import main
from docdex.index_format.config import ConfigError
from docdex.index_format.layout import DataDir
from docdex.index_format.model_tables import EndpointEmbedder, OnnxEmbedder
from docdex.indexer.triggers import cycle
from docdex.model import files
from docdex.model.endpoint import RemoteEmbedder, endpoint_info
from docdex.model.onnx_dir import onnx_info
from docdex.model.protocol import EmbedderUnavailable
from docdex.runtime.environment import ConnectionLimits, Environment, read_environment

from embedserver import EmbeddingServer
from exports import export_dir
from fixtures import build_workspace
from lint_imports import package_dirs
from paths import ROOT

# The modules that may read the process's environment: the entry points, and the harness
# that starts a server with its caller's environment (tests, benchmarks, the demo).
ENTRY_MODULES = {"docdex/cli/__init__.py", "docdex/demo.py", "indexer/triggers/cycle.py"}
LAUNCHERS = {"docdex/serverproc.py"}
ENVIRONMENT_NAMES = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}
KEY_VARIABLE = "DOCDEX_ENVIRONMENT_TEST_KEY"


@pytest.fixture()
def server(embedder):
    """An embeddings and rerank endpoint on 127.0.0.1, backed by the real model."""
    with EmbeddingServer(lambda texts: np.stack([embedder.embed_query(t) for t in texts])) as s:
        yield s


@pytest.fixture()
def no_digest_in_memory(monkeypatch) -> None:
    """This process forgets the files it hashed, so that a digest is looked up in the cache
    directory (and stored there) again."""
    monkeypatch.setattr(files, "_sha_cache", {})


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


def data_dir(root: Path, toml: str) -> Path:
    DataDir(root).ensure()
    (root / "docdex.toml").write_text(toml)
    return root


def test_a_command_hands_the_models_its_cache_and_keys(
    tmp_path, server, no_digest_in_memory, capsys
) -> None:
    key = f"sk-test-{uuid.uuid4()}"
    models = f"""[settings]
embedder = "mini"
reranker = "rr"

[models.mini]
kind = "onnx"
path = "{export_dir(tmp_path / "export")}"

[models.rr]
kind = "rerank"
url = "{server.base}/rerank"
api_key_env = "{KEY_VARIABLE}"
"""
    data, cache = data_dir(tmp_path / "data", models), tmp_path / "cache"
    environ = {"DOCDEX_DATA": str(data), "DOCDEX_CACHE": str(cache), KEY_VARIABLE: key}
    assert main(["model", "list", "--json"], environ) == 0
    assert [row["ok"] for row in json.loads(capsys.readouterr().out)] == [True, True]
    assert list((cache / "onnx").glob("onnx-dir-*.onnx"))  # the export's optimised graph
    assert list((cache / "sha256").iterdir())  # the digests of its files
    assert server.headers[-1]["Authorization"] == f"Bearer {key}"


def test_a_search_sends_the_rerank_endpoint_the_key_its_command_holds(
    tmp_path, server, capsys
) -> None:
    key = f"sk-test-{uuid.uuid4()}"
    ws = build_workspace(tmp_path / "ws")
    models = f"""[settings]
reranker = "rr"

[[sources]]
name = "docs"
location = "{ws.bare}"

[models.rr]
kind = "rerank"
url = "{server.base}/rerank"
api_key_env = "{KEY_VARIABLE}"
"""
    environ = {"DOCDEX_DATA": str(data_dir(tmp_path / "data", models)), KEY_VARIABLE: key}
    assert main(["index"], environ) == 0
    capsys.readouterr()
    assert main(["search", "what does error E1234 mean?", "--json"], environ) == 0
    assert json.loads(capsys.readouterr().out)["results"][0]["path"] == "faq.md"
    assert server.requests and server.headers[-1]["Authorization"] == f"Bearer {key}"


def test_nothing_of_a_commands_environment_stays_behind(
    tmp_path, server, no_digest_in_memory
) -> None:
    """A model made after an in-process command has nothing of what the command was given:
    neither its key nor its cache directory."""
    data, cache = data_dir(tmp_path / "data", ""), tmp_path / "cache"
    environ = {"DOCDEX_DATA": str(data), "DOCDEX_CACHE": str(cache), KEY_VARIABLE: "s3cret"}
    assert main(["source", "list"], environ) == 0
    spec = EndpointEmbedder(url=server.url, model="m", api_key_env=KEY_VARIABLE, dimensions=384)
    with pytest.raises(EmbedderUnavailable, match=rf"needs an API key in \${KEY_VARIABLE}"):
        RemoteEmbedder(endpoint_info(spec, 250, 40), spec).embed_query("q")
    assert server.requests == []
    onnx_info(OnnxEmbedder(path=str(export_dir(tmp_path / "export"))), 250, 40)
    assert not cache.exists()


def test_an_index_cycle_keeps_the_models_digest_in_its_cache(
    tmp_path, no_digest_in_memory, capsys
) -> None:
    """The cycle the worker runs is an entry point: the shipped model it names (a run with
    no source to read names it all the same) is hashed into its own DOCDEX_CACHE."""
    data, cache = data_dir(tmp_path / "data", ""), tmp_path / "cache"
    assert cycle.main(["--data", str(data)], {"DOCDEX_CACHE": str(cache)}) == 0
    assert json.loads(capsys.readouterr().out)["sources"] == []
    [digest] = list((cache / "sha256").iterdir())
    assert len(digest.read_text()) == 64


def test_an_index_cycle_sends_the_key_its_environment_holds(tmp_path, server, capsys) -> None:
    key = f"sk-test-{uuid.uuid4()}"
    ws = build_workspace(tmp_path / "ws")
    models = f"""[settings]
embedder = "remote"

[[sources]]
name = "docs"
location = "{ws.bare}"

[models.remote]
kind = "openai"
url = "{server.url}"
model = "test-model"
api_key_env = "{KEY_VARIABLE}"
"""
    data = data_dir(tmp_path / "data", models)
    assert cycle.main(["--data", str(data)], {KEY_VARIABLE: key}) == 0
    [source] = json.loads(capsys.readouterr().out)["sources"]
    assert source["status"] == "indexed"
    assert {h["Authorization"] for h in server.headers} == {f"Bearer {key}"}


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
