"""Logging for every docdex process: readable text on a terminal, JSON lines for machines.

`configure_logging` installs one stderr handler on the root logger (again and again is
fine: it replaces its own). `log_event` logs an event name plus fields; the text format
shows them as `event key=value ...`, the JSON format as one object per line:

    {"ts": "2025-01-01T12:00:00.123Z", "level": "info", "logger": "docdex.pipeline",
     "event": "indexed", "source": "docs", "version": 7, ...}

Plain log calls (`log.info("...")`) come out with event "message" and the text as "msg".
The chosen format and level are exported as DOCDEX_LOG_FORMAT / DOCDEX_LOG_LEVEL so child
processes (index cycles run by the worker) log the same way.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from typing import Any

import msgspec

FORMATS = ("text", "json")
FORMAT_ENV = "DOCDEX_LOG_FORMAT"
LEVEL_ENV = "DOCDEX_LOG_LEVEL"
QUIET_LOGGERS = ("mcp", "httpx", "httpx2", "uvicorn.access", "watchfiles")


class LoggingError(ValueError):
    """A log format or level that does not exist."""


def configure_logging(
    format: str | None = None, level: str | int | None = None, default_level: str = "INFO"
) -> None:
    """Send docdex's logs to stderr in `format` ("text" or "json") at `level`.

    None means the environment's DOCDEX_LOG_FORMAT / DOCDEX_LOG_LEVEL, else text and
    `default_level`. The format, and the level when given here, are exported to child
    processes through the environment.
    """
    fmt = (format or os.environ.get(FORMAT_ENV) or "text").lower()
    if fmt not in FORMATS:
        raise LoggingError(f"unknown log format {fmt!r}; use one of: {', '.join(FORMATS)}")
    lvl = _level(level if level is not None else os.environ.get(LEVEL_ENV) or default_level)
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, _StderrHandler)]:
        root.removeHandler(handler)
    handler = _StderrHandler()
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root.addHandler(handler)
    root.setLevel(lvl)
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(max(lvl, logging.WARNING))
    os.environ[FORMAT_ENV] = fmt
    if level is not None:
        os.environ[LEVEL_ENV] = logging.getLevelName(lvl)


def is_configured() -> bool:
    return any(isinstance(h, _StderrHandler) for h in logging.getLogger().handlers)


def log_event(logger: logging.Logger, event: str, level: int = logging.INFO, **fields: Any) -> None:
    """Log one event with structured fields (source, version, counts...)."""
    if logger.isEnabledFor(level):
        logger.log(level, event, extra={"event": event, "fields": fields})


def _level(level: str | int) -> int:
    if isinstance(level, int):
        return level
    value = logging.getLevelName(level.strip().upper())
    if not isinstance(value, int):
        raise LoggingError(f"unknown log level {level!r}; use DEBUG, INFO, WARNING or ERROR")
    return value


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever sys.stderr is at the time (pytest and friends replace it)."""

    _docdex = True  # older setup code looks for this mark before adding a handler

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property  # type: ignore[override]
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


def _timestamp(record: logging.LogRecord) -> str:
    seconds = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
    return f"{seconds}.{int(record.msecs):03d}Z"


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    return dict(getattr(record, "fields", None) or {})


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": _timestamp(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": getattr(record, "event", "message"),
        }
        if not hasattr(record, "event"):
            line["msg"] = record.getMessage()
        line.update(_fields(record))
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return msgspec.json.encode(line, enc_hook=str).decode()


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        text = f"{_timestamp(record)} {record.levelname:<7} {record.name}: {record.getMessage()}"
        pairs = " ".join(f"{k}={_text_value(v)}" for k, v in _fields(record).items())
        if pairs:
            text += " " + pairs
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


def _text_value(value: Any) -> str:
    text = value if isinstance(value, str) else msgspec.json.encode(value, enc_hook=str).decode()
    return text if text and " " not in text and "=" not in text else repr(text)
