"""The process's environment, read once: every variable docdex honours, checked.

Each entry point (`docdex`, `python -m docdex.indexer.triggers.cycle`, `python -m
docdex.demo`) builds one `Environment` from `os.environ` and passes on what each layer
needs; no module below an entry point reads the environment. A flag given on the command
line wins over its variable. An empty variable counts as unset.

    DOCDEX_DATA             the data directory                 $XDG_DATA_HOME/docdex
                                                               (~/.local/share/docdex)
    DOCDEX_CACHE            what is computed once per machine  $XDG_CACHE_HOME/docdex
                            (optimised model graphs, digests)  (~/.cache/docdex)
    DOCDEX_HOST             the address `docdex serve` binds   127.0.0.1
    DOCDEX_PORT             its port                           8085
    DOCDEX_TOKEN            the bearer token it requires       none
    DOCDEX_ALLOWED_HOSTS    more Host names it answers to      none (comma-separated)
    DOCDEX_AUTH             token, oauth or jwt (`--auth`)     token
    DOCDEX_PUBLIC_URL       the https address clients reach:   http://HOST:PORT on loopback
                            the OAuth resource and issuer
    DOCDEX_ADMIN_SECRET     the owner's secret on the OAuth    none (oauth needs one)
                            consent page
    DOCDEX_JWKS_URL, DOCDEX_JWT_ISSUER, DOCDEX_JWT_AUDIENCE
                            an identity provider's keys, its   none; the audience is the
                            tokens' iss and aud (--auth jwt)   resource URI (PUBLIC_URL/mcp)
    DOCDEX_HEADER_TIMEOUT   seconds to a request's whole head  10
    DOCDEX_IDLE_TIMEOUT     seconds a kept-alive connection    5
                            may wait for its next request
    DOCDEX_MAX_CONNECTIONS  open connections, past which the   1000
                            slowest heads are closed
    DOCDEX_LOG_FORMAT       text or json                       text
    DOCDEX_LOG_LEVEL        DEBUG, INFO, WARNING or ERROR      INFO for serve, mcp, watch
                                                               and worker, else WARNING
    DOCDEX_DEMO_EXIT        the demo exits after its search    no ("" and 0 say no)
    MALLOC_ARENA_MAX        glibc's own: when set, the server  unset (the server caps
                            leaves its malloc arenas alone     them at 2)

The variables a model needs are handed on as they are, read when needed, in the
`ModelEnvironment` the entry point builds with the cache directory
(model/model_environment.py): the one a `[models.NAME]` table's `api_key_env` names (an
endpoint's API key), HF_ENDPOINT and HF_TOKEN (`docdex model pull`'s hub and its token).
GIT_SSH_COMMAND is not read here: the ssh that fetches a remote source runs it, as git does
(indexer/sources/remote.py).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

import msgspec

from docdex.errors import ConfigError
from docdex.runtime.logs import FORMATS, LogFormat

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8085

PRINTABLE_TOKEN = (
    "printable ASCII (letters, digits, punctuation): clients send other characters in the "
    "Authorization header inconsistently (curl as UTF-8, browsers as Latin-1, Python's httpx "
    "not at all), so such a token could not be used. Choose another, e.g. from "
    "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`"
)
T = TypeVar("T")
D = TypeVar("D")


class ConnectionLimits(msgspec.Struct, frozen=True):
    """`docdex serve`'s connection deadlines and bound (server/http/connections.py)."""

    header_timeout: float = 10.0  # seconds from accept / previous response to a full head
    idle_timeout: float = 5.0  # seconds a keep-alive connection may wait for its next request
    max_connections: int = 1000  # open connections, past which the slowest are closed


class Environment(msgspec.Struct, frozen=True, kw_only=True):
    """What the environment says, checked; see the module's table for each variable."""

    data_dir: Path
    cache_dir: Path
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    token: str | None = None
    allowed_hosts: tuple[str, ...] = ()
    auth: str = ""  # "", token, oauth or jwt (checked where it is used: server/http/oauth/)
    public_url: str = ""
    admin_secret: str = ""  # held in memory only
    jwks_url: str = ""
    jwt_issuer: str = ""
    jwt_audience: str = ""
    connections: ConnectionLimits = ConnectionLimits()
    log_format: LogFormat | None = None  # None: the entry point's default
    log_level: str | None = None  # a level's name, upper case; None: the entry point's default
    demo_exit: bool = False
    malloc_arena_max: str = ""


def read_environment(environ: Mapping[str, str]) -> Environment:
    """The Environment `environ` describes (the caller passes `os.environ`). Raises
    ConfigError, naming the variable, for a value docdex cannot use."""
    values = _Values(environ)
    return Environment(
        data_dir=values.directory("DOCDEX_DATA", "XDG_DATA_HOME", ".local/share"),
        cache_dir=values.directory("DOCDEX_CACHE", "XDG_CACHE_HOME", ".cache"),
        host=values.text("DOCDEX_HOST") or DEFAULT_HOST,
        port=values.parsed("DOCDEX_PORT", _port, DEFAULT_PORT),
        token=values.parsed("DOCDEX_TOKEN", _token, None),
        allowed_hosts=tuple(values.names("DOCDEX_ALLOWED_HOSTS")),
        auth=values.parsed("DOCDEX_AUTH", _auth_mode, ""),
        public_url=values.text("DOCDEX_PUBLIC_URL"),
        admin_secret=values.text("DOCDEX_ADMIN_SECRET"),
        jwks_url=values.text("DOCDEX_JWKS_URL"),
        jwt_issuer=values.text("DOCDEX_JWT_ISSUER"),
        jwt_audience=values.text("DOCDEX_JWT_AUDIENCE"),
        connections=ConnectionLimits(
            header_timeout=values.parsed("DOCDEX_HEADER_TIMEOUT", _seconds, 10.0),
            idle_timeout=values.parsed("DOCDEX_IDLE_TIMEOUT", _seconds, 5.0),
            max_connections=values.parsed("DOCDEX_MAX_CONNECTIONS", _count, 1000),
        ),
        log_format=values.parsed("DOCDEX_LOG_FORMAT", _log_format, None),
        log_level=values.parsed("DOCDEX_LOG_LEVEL", _log_level, None),
        demo_exit=values.text("DOCDEX_DEMO_EXIT") not in ("", "0"),
        malloc_arena_max=values.text("MALLOC_ARENA_MAX"),
    )


class _Values:
    """The variables of one mapping, each stripped; "" when unset."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.environ = environ

    def text(self, name: str) -> str:
        return self.environ.get(name, "").strip()

    def names(self, name: str) -> list[str]:
        return [part.strip() for part in self.text(name).split(",") if part.strip()]

    def directory(self, name: str, xdg_name: str, under_home: str) -> Path:
        """$name, else $xdg_name/docdex, else ~/under_home/docdex."""
        if given := self.text(name):
            return Path(given)
        return Path(self.text(xdg_name) or Path.home() / under_home) / "docdex"

    def parsed(self, name: str, parse: Callable[[str], T], default: D) -> T | D:
        """`parse(value)` of $name, `default` when unset; a ValueError from `parse` becomes
        a ConfigError: "$name must be <its message>"."""
        text = self.text(name)
        if not text:
            return default
        try:
            return parse(text)
        except ValueError as exc:
            raise ConfigError(f"{name} must be {exc}") from None


def _port(text: str) -> int:
    port = _integer(text)
    if port is None or not 0 < port < 65536:
        raise ValueError(f"a port number (1-65535), not {text[:40]!r}")
    return port


def _token(text: str) -> str:
    if not (text.isascii() and text.isprintable()):
        raise ValueError(PRINTABLE_TOKEN)
    return text


AUTH_MODES = ("token", "oauth", "jwt")


def _auth_mode(text: str) -> str:
    if text.lower() not in AUTH_MODES:
        raise ValueError(f"one of {', '.join(AUTH_MODES)}, not {text[:40]!r}")
    return text.lower()


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not 0 < seconds < math.inf:
        raise ValueError(f"a number of seconds above 0, not {text[:40]!r}")
    return seconds


def _count(text: str) -> int:
    count = _integer(text)
    if count is None or count <= 0:
        raise ValueError(f"a whole number above 0, not {text[:40]!r}")
    return count


def _integer(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def _log_format(text: str) -> LogFormat:
    for name in FORMATS:
        if text.lower() == name:
            return name
    raise ValueError(f"one of {', '.join(FORMATS)}, not {text[:40]!r}")


def _log_level(text: str) -> str:
    if not isinstance(logging.getLevelName(text.upper()), int):
        raise ValueError(f"DEBUG, INFO, WARNING or ERROR, not {text[:40]!r}")
    return text.upper()
