"""A data directory that embeds with the float32 graph hears once, from `docdex index` or
`docdex serve`, that new ones use the int8 graph and how to switch."""

from __future__ import annotations

from docdex.cli import main
from docdex.index_format.config import Config, Settings, SourceConfig, save_config
from docdex.index_format.layout import DataDir
from docdex.serverproc import ServeProcess

from fixtures import build_workspace, index_workspace
from gitrepo import Workspace

SWITCH = "`docdex settings set embedder minilm-int8`"


def configured(data: DataDir, location: str, embedder: str) -> None:
    data.ensure()
    config = Config(settings=Settings(embedder=embedder), sources=[SourceConfig("docs", location)])
    save_config(data, config)


def index(data: DataDir) -> int:
    return main(["--data", str(data.root), "index"])


def test_a_float32_data_directory_hears_once_that_new_ones_use_int8(tmp_path, capsys) -> None:
    data = DataDir(tmp_path / "data")
    configured(data, str(build_workspace(tmp_path / "ws").bare), "minilm")
    assert index(data) == 0
    said = capsys.readouterr()
    assert "embeds with minilm (float32); new ones use minilm-int8" in said.err
    assert SWITCH in said.err and SWITCH not in said.out
    assert index(data) == 0  # nothing changed: the notice is not said again either
    assert SWITCH not in capsys.readouterr().err


def test_an_int8_data_directory_hears_nothing(tmp_path, capsys) -> None:
    ws = Workspace(tmp_path / "ws")  # no page: the run loads no model
    ws.write("README.txt", "not markdown")
    ws.commit_and_push("initial")
    data = DataDir(tmp_path / "data")
    configured(data, str(ws.bare), "minilm-int8")
    assert index(data) == 0
    assert SWITCH not in capsys.readouterr().err


def test_serve_says_it_too(tmp_path, embedder) -> None:
    data = DataDir(tmp_path / "data")
    index_workspace(data, build_workspace(tmp_path / "ws"), embedder)  # float32, no CLI
    with ServeProcess(data.root, tmp_path / "serve.log") as server:
        server.wait_serving()
        assert SWITCH in server.output()
