"""Registered clients and issued tokens, kept in the data directory's state/.

    state/oauth.json   clients (their secrets hashed), live tokens (hashed) and the named
                       static tokens `docdex auth token` made (hashed), mode 0600
    state/oauth.lock   taken (flock) around every change, by the server and `docdex auth`

A token or client secret is 256 random bits; the file keeps only its SHA-256, so reading the
file gives no credential. Every change is read-modify-write under the lock and written
atomically (temporary file, fsync, rename, fsync of the directory); a reader that sees the
file change (another inode after the rename) reads it again, so `docdex auth revoke` in
another process takes effect at the server's next request. Expired tokens are dropped at
each write; a temporary file a killed writer left behind is removed when a store opens.
This module imports nothing of the MCP SDK: `docdex auth` reads it quickly.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import msgspec

from docdex.errors import DocdexError
from docdex.index_format.layout import remove_stale_temps, write_atomic

STORE_FILE = "oauth.json"
LOCK_FILE = "oauth.lock"
FILE_MODE = 0o600
ACCESS_PREFIX = "ddx_at_"
REFRESH_PREFIX = "ddx_rt_"
STATIC_PREFIX = "ddx_st_"
T = TypeVar("T")
Clock = Callable[[], float]


MAX_CLIENTS = 500
UNUSED_CLIENT_S = 86400  # a client registered this long ago and never authorized is dropped
STALE_TEMP_S = 3600  # a temporary file this old is a dead writer's, whatever its PID says


class StoreError(DocdexError):
    """The OAuth state file cannot be read or written."""


class StoreFull(StoreError):
    """No more clients may register: every one of them was authorized."""


class ClientRecord(msgspec.Struct, kw_only=True):
    """A registered client: its RFC 7591 metadata (no secret) and its secret's hash."""

    info: dict[str, Any]
    secret_sha256: str = ""  # "" for a public client (token_endpoint_auth_method "none")
    registered_at: float = 0.0
    last_issued_at: float = 0.0  # when it last got tokens (0: never authorized)


class TokenRecord(msgspec.Struct, kw_only=True):
    """An access or refresh token, by its hash: whose, for what, until when."""

    client_id: str
    scopes: list[str]
    resource: str  # the audience: this server's resource URI when it was issued
    issuer: str = ""
    expires_at: float
    issued_at: float
    pair: str = ""  # the hash of the token issued with it (refresh <-> access)
    family: str = ""  # every pair refreshed from one authorization shares it
    sources: list[str] | None = None  # the sources it may read (None: every source)


class StaticToken(msgspec.Struct, kw_only=True):
    """A named bearer token that does not expire (`docdex auth token NAME`), by its hash."""

    name: str
    scopes: list[str]
    sources: list[str] | None = None  # the sources it may read (None: every source)
    created_at: float = 0.0


class Retired(msgspec.Struct, kw_only=True):
    """A refresh token used once already: presented again, it was stolen or replayed."""

    family: str
    expires_at: float


class StoreState(msgspec.Struct, kw_only=True):
    clients: dict[str, ClientRecord] = {}
    access: dict[str, TokenRecord] = {}
    refresh: dict[str, TokenRecord] = {}
    retired: dict[str, Retired] = {}  # by hash, until the token would have expired
    static: dict[str, StaticToken] = {}  # by hash


class TokenPair(msgspec.Struct, frozen=True, kw_only=True):
    access_token: str
    refresh_token: str
    expires_in: int
    scopes: list[str]


class _Grant(NamedTuple):
    """Who a new pair is for and what it allows."""

    client_id: str
    scopes: list[str]
    resource: str
    issuer: str
    family: str
    sources: list[str] | None


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


_decode = msgspec.json.Decoder(StoreState).decode
_encode = msgspec.json.Encoder().encode


class OAuthStore:
    """The state file of one data directory's state/ folder. `clock`: seconds since the
    epoch (tests pass another, to expire tokens without waiting)."""

    def __init__(self, state_dir: Path, clock: Clock = time.time) -> None:
        self.path = Path(state_dir) / STORE_FILE
        self.lock_path = Path(state_dir) / LOCK_FILE
        self.clock = clock
        self._mutex = threading.Lock()
        self._seen: tuple[int, ...] | None = None
        self._state = StoreState()
        with contextlib.suppress(OSError):  # a read-only state/ keeps them: nothing breaks
            remove_stale_temps(self.path, STALE_TEMP_S)

    # --- reading ----------------------------------------------------------------------------

    def snapshot(self) -> StoreState:
        """The state as the file holds it now (read again only when the file changed)."""
        with self._mutex:
            return self._fresh()

    def client(self, client_id: str) -> ClientRecord | None:
        return self.snapshot().clients.get(client_id)

    def access_token(self, token: str) -> TokenRecord | None:
        """The live access token `token`, or None (unknown, revoked or expired)."""
        return self._live(self.snapshot().access.get(token_hash(token)))

    def refresh_token(self, token: str) -> TokenRecord | None:
        return self._live(self.snapshot().refresh.get(token_hash(token)))

    def static_token(self, token: str) -> StaticToken | None:
        return self.snapshot().static.get(token_hash(token))

    def _live(self, record: TokenRecord | None) -> TokenRecord | None:
        return record if record is not None and record.expires_at > self.clock() else None

    # --- changing ---------------------------------------------------------------------------

    def register(self, client_id: str, info: dict[str, Any], secret: str | None) -> None:
        """Record a client. Registration is open to anyone who reaches the server, so
        clients never authorized are forgotten after a day, and past MAX_CLIENTS the one
        registered longest ago and never authorized makes room; StoreFull when every client
        was authorized."""
        now = self.clock()
        record = ClientRecord(
            info=info, secret_sha256=token_hash(secret) if secret else "", registered_at=now
        )

        def add(state: StoreState) -> None:
            unused = sorted(
                (c.registered_at, k) for k, c in state.clients.items() if not c.last_issued_at
            )
            for registered_at, key in unused:
                if registered_at < now - UNUSED_CLIENT_S or len(state.clients) >= MAX_CLIENTS:
                    del state.clients[key]
            if len(state.clients) >= MAX_CLIENTS:
                raise StoreFull(
                    f"{MAX_CLIENTS} clients are registered and authorized already: remove "
                    "unused ones with `docdex auth revoke CLIENT_ID`"
                )
            state.clients[client_id] = record

        self.update(add)

    def forget_unauthorized(self, client_id: str) -> bool:
        """Forget a client the owner never authorized (False: none such)."""

        def drop(state: StoreState) -> bool:
            client = state.clients.get(client_id)
            if client is None or client.last_issued_at:
                return False
            del state.clients[client_id]
            return True

        return self.update(drop)

    def issue(
        self,
        client_id: str,
        scopes: list[str],
        resource: str,
        issuer: str,
        access_ttl: int,
        refresh_ttl: int,
        sources: list[str] | None = None,
        family: str | None = None,
    ) -> TokenPair:
        """A new access token and refresh token for a registered client, reading `sources`
        only (None: every source); `family` names the authorization they come from, which
        `end_family` ends (None: a new one)."""
        grant = _Grant(
            client_id, list(scopes), resource, issuer, family or secrets.token_hex(16), sources
        )

        def add(state: StoreState) -> TokenPair:
            if client_id not in state.clients:
                raise StoreError(f"no client {client_id!r} is registered")
            return self._add_pair(state, grant, access_ttl, refresh_ttl)

        return self.update(add)

    def rotate(
        self, refresh_token: str, scopes: list[str], access_ttl: int, refresh_ttl: int
    ) -> TokenPair | None:
        """A new pair for a live refresh token, which ends with the access token issued with
        it; None when it is not live (revoked, expired, used already). A refresh token used
        a second time ends every token refreshed from the same authorization (OAuth 2.1
        section 4.3.1): either its thief or its owner holds the newer ones."""
        key = token_hash(refresh_token)

        def swap(state: StoreState) -> TokenPair | None:
            if key in state.retired:
                _end_family(state, state.retired[key].family)
                return None
            old = self._live(state.refresh.pop(key, None))
            if old is None or old.client_id not in state.clients:
                return None
            state.access.pop(old.pair, None)
            state.retired[key] = Retired(family=old.family, expires_at=old.expires_at)
            grant = _Grant(
                old.client_id, list(scopes), old.resource, old.issuer, old.family, old.sources
            )
            return self._add_pair(state, grant, access_ttl, refresh_ttl)

        return self.update(swap)

    def replayed(self, token: str) -> bool:
        """Whether `token` is a refresh token used already; if so, every token refreshed
        from the same authorization ends (see `rotate`)."""
        key = token_hash(token)
        if key not in self.snapshot().retired:
            return False

        def end(state: StoreState) -> bool:
            retired = state.retired.get(key)
            if retired is not None:
                _end_family(state, retired.family)
            return retired is not None

        return self.update(end)

    def end_family(self, family: str) -> None:
        """End every token of one authorization, refreshed ones included."""
        self.update(lambda state: _end_family(state, family))

    def revoke_token(self, token: str) -> None:
        """End an access or refresh token and the one issued with it."""
        key = token_hash(token)

        def drop(state: StoreState) -> None:
            for mine, other in ((state.access, state.refresh), (state.refresh, state.access)):
                record = mine.pop(key, None)
                if record is not None:
                    other.pop(record.pair, None)

        self.update(drop)

    def add_static(self, name: str, scopes: list[str], sources: list[str] | None) -> str:
        """A new named token (returned once: the file keeps its hash); StoreError when a
        client or token already has that name."""
        token = STATIC_PREFIX + secrets.token_urlsafe(32)
        record = StaticToken(name=name, scopes=scopes, sources=sources, created_at=self.clock())

        def add(state: StoreState) -> None:
            if name in state.clients or any(t.name == name for t in state.static.values()):
                raise StoreError(f"a token or client named {name!r} exists already")
            state.static[token_hash(token)] = record

        self.update(add)
        return token

    def revoke_client(self, client_id: str) -> int:
        """Forget a client, or a named static token, and end every token it holds; how many
        tokens ended (-1: no such client or token)."""

        def drop(state: StoreState) -> int:
            named = [key for key, t in state.static.items() if t.name == client_id]
            for key in named:
                del state.static[key]
            if state.clients.pop(client_id, None) is None:
                return len(named) or -1
            ended = 0
            for table in (state.access, state.refresh):
                for key in [k for k, r in table.items() if r.client_id == client_id]:
                    del table[key]
                    ended += 1
            return ended

        return self.update(drop)

    def update(self, change: Callable[[StoreState], T]) -> T:
        """`change(state)` on the file's current state, under the lock, then written back."""
        with self._mutex, self._locked():
            state = self._load()  # a copy of its own: a failed write leaves the cache as it was
            result = change(state)
            self._prune(state)
            self._write(state)
            return result

    def _add_pair(
        self, state: StoreState, grant: _Grant, access_ttl: int, refresh_ttl: int
    ) -> TokenPair:
        now = self.clock()
        state.clients[grant.client_id].last_issued_at = now
        access = ACCESS_PREFIX + secrets.token_urlsafe(32)
        refresh = REFRESH_PREFIX + secrets.token_urlsafe(32)
        a_key, r_key = token_hash(access), token_hash(refresh)
        for table, key, ttl, pair in (
            (state.access, a_key, access_ttl, r_key),
            (state.refresh, r_key, refresh_ttl, a_key),
        ):
            table[key] = TokenRecord(
                client_id=grant.client_id,
                scopes=grant.scopes,
                resource=grant.resource,
                issuer=grant.issuer,
                family=grant.family,
                sources=grant.sources,
                expires_at=now + ttl,
                issued_at=now,
                pair=pair,
            )
        return TokenPair(
            access_token=access, refresh_token=refresh, expires_in=access_ttl, scopes=grant.scopes
        )

    def _prune(self, state: StoreState) -> None:
        now = self.clock()
        for table in (state.access, state.refresh, state.retired):
            for key in [k for k, r in table.items() if r.expires_at <= now]:
                del table[key]

    # --- the file ---------------------------------------------------------------------------

    def _fresh(self) -> StoreState:
        """The cached state, read again when the file is another one (caller holds _mutex)."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._seen, self._state = None, StoreState()
            return self._state
        except OSError as exc:
            raise StoreError(f"cannot read {self.path}: {exc.strerror}") from None
        if _identity(st) != self._seen:
            self._state, self._seen = self._load(), _identity(st)
        return self._state

    def _load(self) -> StoreState:
        try:
            return _decode(self.path.read_bytes())
        except FileNotFoundError:
            return StoreState()
        except (OSError, msgspec.DecodeError) as exc:
            raise StoreError(f"cannot read {self.path}: {exc}") from None

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def _write(self, state: StoreState) -> None:
        try:
            write_atomic(self.path, _encode(state), FILE_MODE)
        except OSError as exc:
            raise StoreError(f"cannot write {self.path}: {exc.strerror or exc}") from None
        self._state, self._seen = state, _identity(os.stat(self.path))


def _end_family(state: StoreState, family: str) -> None:
    for table in (state.access, state.refresh):
        for key in [k for k, r in table.items() if r.family == family]:
            del table[key]
    for key in [k for k, r in state.retired.items() if r.family == family]:
        del state.retired[key]


def _identity(st: os.stat_result) -> tuple[int, ...]:
    """What tells one version of the file from the next (a rename brings another inode)."""
    return (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)
