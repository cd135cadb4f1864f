"""Logging for every docdex process: readable text on a terminal, JSON lines for machines.

`configure_logging` installs one stderr handler on the root logger (again and again is
fine: it replaces its own); each entry point calls it once, with the settings its flags and
environment chose. `log_event` logs an event name plus fields; the text format shows them
as `event key=value ...`, the JSON format as one object per line:

    {"ts": "2025-01-01T12:00:00.123Z", "level": "info", "logger": "docdex.pipeline",
     "event": "indexed", "source": "docs", "version": 7, ...}

Plain log calls (`log.info("...")`) come out with event "message" and the text as "msg".
A process that starts another docdex process (the server its worker, the worker an index
cycle) passes its `LogSettings` on the child's command line (`LogSettings.flags`), so that
the child logs the same way.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any, Literal

import msgspec

from docdex.errors import DocdexError

LogFormat = Literal["text", "json"]
FORMATS: tuple[LogFormat, ...] = ("text", "json")
QUIET_LOGGERS = ("mcp", "httpx", "httpx2", "uvicorn.access", "watchfiles")


class LoggingError(DocdexError, ValueError):
    """A log format or level that does not exist."""


class LogSettings(msgspec.Struct, frozen=True):
    """How a process logs: a format of FORMATS and a level's name."""

    format: str = "text"
    level: str = "INFO"

    def flags(self) -> list[str]:
        """The same settings as command-line flags, for a child docdex process."""
        return ["--log-format", self.format, "--log-level", self.level]


DEFAULT_LOGS = LogSettings()


def configure_logging(settings: LogSettings) -> None:
    """Send docdex's logs to stderr in `settings.format` at `settings.level`. Raises
    LoggingError for a format or level that does not exist."""
    if settings.format not in FORMATS:
        raise LoggingError(
            f"unknown log format {settings.format!r}; use one of: {', '.join(FORMATS)}"
        )
    level = level_number(settings.level)
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, _StderrHandler)]:
        root.removeHandler(handler)
    handler = _StderrHandler()
    handler.setFormatter(JsonFormatter() if settings.format == "json" else TextFormatter())
    root.addHandler(handler)
    root.setLevel(level)
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(max(level, logging.WARNING))


def level_number(name: str) -> int:
    """The number of the level called `name` (any case). Raises LoggingError for none."""
    value = logging.getLevelName(name.strip().upper())
    if not isinstance(value, int):
        raise LoggingError(f"unknown log level {name!r}; use DEBUG, INFO, WARNING or ERROR")
    return value


def log_event(logger: logging.Logger, event: str, level: int = logging.INFO, **fields: Any) -> None:
    """Log one event with structured fields (source, version, counts...)."""
    if logger.isEnabledFor(level):
        logger.log(level, event, extra={"event": event, "fields": fields})


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever sys.stderr is at the time (pytest and friends replace it)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
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
