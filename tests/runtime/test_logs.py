"""Logs: JSON lines a machine can parse, readable text for people, the same setup in every
docdex process."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest

from docdex.cli import main
from docdex.index_format.config import Config, SourceConfig, save_config
from docdex.index_format.layout import DataDir
from docdex.index_format.queue import file_request
from docdex.indexer.run.pipeline import index_sources
from docdex.runtime.logs import LoggingError, LogSettings, configure_logging, log_event

from gitrepo import Workspace

PAGE = "# Logs\n\nEvery event on one line, with the source and the version.\n"


FORMAT_ENV, LEVEL_ENV = "DOCDEX_LOG_FORMAT", "DOCDEX_LOG_LEVEL"


@pytest.fixture(autouse=True)
def restore_logging(monkeypatch):
    """configure_logging changes the root logger (and `main` sets it up from the
    environment): undo it, and start from no log settings in the environment."""
    monkeypatch.delenv(FORMAT_ENV, raising=False)
    monkeypatch.delenv(LEVEL_ENV, raising=False)
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.fixture()
def ws(tmp_path) -> Workspace:
    ws = Workspace(tmp_path / "repo")
    ws.write("logs.md", PAGE)
    ws.commit_and_push()
    return ws


def json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_json_lines_carry_event_and_fields(capsys):
    configure_logging(LogSettings("json", "INFO"))
    log = logging.getLogger("docdex.test")
    log_event(log, "indexed", source="docs", version=7, paths={"a.md"})
    log.info("plain %s", "message")
    log_event(log, "hidden", logging.DEBUG, source="docs")
    lines = json_lines(capsys.readouterr().err)
    assert len(lines) == 2
    event, plain = lines
    assert (event["event"], event["source"], event["version"]) == ("indexed", "docs", 7)
    assert event["level"] == "info" and event["logger"] == "docdex.test"
    assert event["ts"].endswith("Z") and event["paths"] == ["a.md"]  # a set encodes as a list
    assert plain["event"] == "message" and plain["msg"] == "plain message"
    assert FORMAT_ENV not in os.environ  # children get the settings as flags, not from here


def test_text_lines_are_readable(capsys):
    configure_logging(LogSettings("text", "INFO"))
    log_event(logging.getLogger("docdex.test"), "indexed", source="docs", version=3, note="a b")
    line = capsys.readouterr().err.strip()
    assert "INFO" in line and "docdex.test: indexed source=docs version=3 note='a b'" in line


def test_bad_format_or_level_is_refused(tmp_path, capsys, monkeypatch):
    with pytest.raises(LoggingError, match="unknown log format 'xml'"):
        configure_logging(LogSettings("xml"))
    with pytest.raises(LoggingError, match="unknown log level 'LOUD'"):
        configure_logging(LogSettings("text", "LOUD"))
    with pytest.raises(SystemExit) as usage:  # a bad flag is a usage error
        main(["--data", str(tmp_path), "--log-level", "LOUD", "source", "list"])
    assert usage.value.code == 2 and "unknown log level 'LOUD'" in capsys.readouterr().err
    monkeypatch.setenv(LEVEL_ENV, "LOUD")  # a bad variable is a configuration error
    assert main(["--data", str(tmp_path), "source", "list"]) == 1
    refused = "DOCDEX_LOG_LEVEL must be DEBUG, INFO, WARNING or ERROR, not 'LOUD'"
    assert capsys.readouterr().err == f"docdex: error: {refused}\n"
    monkeypatch.setenv(LEVEL_ENV, "error")
    assert main(["--data", str(tmp_path), "--log-level", "debug", "source", "list"]) == 0
    assert logging.getLogger().level == logging.DEBUG  # the flag wins over the variable


def test_a_run_logs_one_indexed_event_per_source(tmp_path, ws, embedder, capsys):
    configure_logging(LogSettings("json", "INFO"))
    data = DataDir(tmp_path / "data")
    other = Workspace(tmp_path / "other")
    other.write("x.md", "# Other\n\nA second source so the run has two.\n")
    other.commit_and_push()
    config = Config(
        sources=[
            SourceConfig(name="docs", location=str(ws.bare)),
            SourceConfig(name="more", location=str(other.bare)),
        ]
    )
    report = index_sources(data, config, embedder=embedder)
    events = [e for e in json_lines(capsys.readouterr().err) if e["event"] == "indexed"]
    assert sorted(e["source"] for e in events) == ["docs", "more"]
    for event in events:
        assert event["version"] == report.version == 1 and event["status"] == "indexed"
        assert event["added"] == 1 and event["chunks_embedded"] == 1
        assert len(event["commit"]) == 40


def test_cli_json_logs_beside_unchanged_output(tmp_path, ws):
    data = tmp_path / "data"
    data.mkdir()
    DataDir(data).ensure()
    save_config(DataDir(data), Config(sources=[SourceConfig(name="docs", location=str(ws.bare))]))
    env = {**os.environ, "DOCDEX_LOG_LEVEL": "info"}
    env.pop(FORMAT_ENV, None)
    result = subprocess.run(
        [sys.executable, "-m", "docdex.cli", "--data", str(data), "--log-format", "json", "index"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert result.stdout.startswith("docs: indexed")  # the printed summary is as before
    events = json_lines(result.stderr)
    indexed = [e for e in events if e["event"] == "indexed"]
    assert [(e["source"], e["version"]) for e in indexed] == [("docs", 1)]

    quiet = subprocess.run(  # one-shot commands log warnings only unless asked
        [sys.executable, "-m", "docdex.cli", "--data", str(data), "index"],
        capture_output=True,
        text=True,
        env={k: v for k, v in env.items() if k != LEVEL_ENV},
        check=True,
    )
    assert quiet.stderr == "" and "nothing changed" in quiet.stdout


def test_the_workers_cycles_log_as_the_worker_does(tmp_path, ws):
    """The settings reach the cycle process on its command line: the worker's flags, not
    an environment variable, make the cycle's lines JSON too."""
    data = DataDir(tmp_path / "data")
    data.ensure()
    save_config(data, Config(sources=[SourceConfig(name="docs", location=str(ws.bare))]))
    file_request(data, "docs", "hook")
    command = [sys.executable, "-m", "docdex.cli", "--data", str(data.root)]
    env = {k: v for k, v in os.environ.items() if k not in (FORMAT_ENV, LEVEL_ENV)}
    done = subprocess.run(
        [*command, "--log-format", "json", "worker", "--once"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    events = json_lines(done.stderr)  # every line, the cycle's included, is JSON
    loggers = {e["logger"] for e in events}
    assert {"docdex.worker", "docdex.pipeline"} <= loggers, loggers
    assert [e["source"] for e in events if e["event"] == "indexed"] == ["docs"]
