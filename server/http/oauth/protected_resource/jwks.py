"""JWTs of an existing identity provider, checked against its JWKS (`--auth jwt`).

A token is accepted when its signature verifies with a key of the provider's JWKS (by its
`kid`), with an asymmetric algorithm that fits the key's type, and its `iss` is the
configured issuer, its `aud` names this server (the resource URI, or DOCDEX_JWT_AUDIENCE)
and it has not expired (`exp` required, `nbf` honoured, by the clock given, 30 s leeway).
`alg: none`, HMAC algorithms (which would let a public key serve as a shared secret) and
symmetric (`oct`) keys in the set are refused.

The key set is fetched off the request path, in a thread of its own, one fetch at a time:
a token whose key is cached is checked at once, never waiting for a fetch, even when the
cache is older than CACHE_S (that starts a fetch in the background). A `kid` the set does
not hold starts a fetch (the provider rotated its keys), at most once per MIN_REFETCH_S so
that tokens with made-up kids cannot make docdex hammer the provider; such a token waits
for the fetch in flight at most FETCH_WAIT_S, asleep in the event loop rather than holding
a worker thread, and is refused if its key is still unknown.

Scopes come from `scope` (space-separated, RFC 9068) or `scp` (a list, as some providers
send them). A `docdex_sources` claim, a list of source names, limits the token to those
sources; without it the token reads every source, and one whose claim is not a list of
names is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import threading
import time
import urllib.request
from collections.abc import Callable
from typing import Any

import jwt
from jwt import PyJWK

from docdex.errors import DocdexError
from docdex.server.http.grants import Grant, Verifier

ALGORITHMS_OF_KEY = {
    "RSA": ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512"),
    "EC": ("ES256", "ES384", "ES512"),
    "OKP": ("EdDSA",),
}
ALGORITHMS = tuple(alg for algs in ALGORITHMS_OF_KEY.values() for alg in algs)
CACHE_S = 3600.0
MIN_REFETCH_S = 30.0
FETCH_WAIT_S = 2.0  # how long a token with an unknown kid waits for the fetch in flight
LEEWAY_S = 30.0
MAX_JWKS_BYTES = 1_000_000
SOURCES_CLAIM = "docdex_sources"
Fetch = Callable[[str], bytes]


class JwtRefused(DocdexError):
    """A bearer JWT this server does not accept, and why."""


def fetch_url(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as reply:  # noqa: S310 (https, or loopback)
        return reply.read(MAX_JWKS_BYTES + 1)[:MAX_JWKS_BYTES]


class KeyFetch:
    """One fetch of the key set, in flight: threads wait on `done`, coroutines on `wait`."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self._lock = threading.Lock()
        self._waiting: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []

    def finish(self) -> None:
        with self._lock:
            self.done.set()
            waiting, self._waiting = self._waiting, []
        for loop, event in waiting:
            with contextlib.suppress(RuntimeError):  # a loop closed since: nobody waits there
                loop.call_soon_threadsafe(event.set)

    async def wait(self, timeout: float) -> None:
        """Until the fetch ends, or `timeout` seconds, without holding a thread."""
        waiter = (asyncio.get_running_loop(), asyncio.Event())
        with self._lock:
            if self.done.is_set():
                return
            self._waiting.append(waiter)
        try:
            await asyncio.wait_for(waiter[1].wait(), timeout)
        except TimeoutError:
            with self._lock:
                if waiter in self._waiting:
                    self._waiting.remove(waiter)


class JwksVerifier:
    def __init__(
        self,
        jwks_url: str,
        issuer: str,
        audience: str,
        clock: Callable[[], float] = time.time,
        fetch: Fetch = fetch_url,
        fetch_wait: float = FETCH_WAIT_S,
    ) -> None:
        self.jwks_url, self.issuer, self.audience = jwks_url, issuer, audience
        self.clock, self.fetch, self.fetch_wait = clock, fetch, fetch_wait
        self.fetches = 0  # how often the key set was fetched (tests read it)
        self._keys: dict[str, PyJWK] = {}
        self._fetched_at = -math.inf  # when the last fetch started
        self._in_flight: KeyFetch | None = None
        self._lock = threading.Lock()  # over the fields above; never held across a fetch

    def claims(self, token: str, wait: bool = True) -> dict[str, Any]:
        """The token's claims once every check passed; JwtRefused says which did not. An
        unknown kid waits for the fetch it starts at most `fetch_wait` seconds, unless `wait`
        is False."""
        header = _header(token)
        key = self._key(header.get("kid"), self.fetch_wait if wait else 0.0)
        alg = header["alg"]
        if alg not in ALGORITHMS_OF_KEY.get(str(key.key_type), ()):
            raise JwtRefused(f"algorithm {alg} does not fit the key's type {key.key_type}")
        try:
            claims = jwt.decode(
                token,
                key=key.key,
                algorithms=[alg],
                audience=self.audience,
                issuer=self.issuer,
                options={
                    "require": ["exp", "iss", "aud"],
                    "verify_exp": False,
                    "verify_nbf": False,
                },
            )
        except jwt.PyJWTError as exc:
            raise JwtRefused(f"refused: {exc}") from None
        self._check_times(claims)
        sources_claimed(claims)
        return claims

    def grant_verifier(self, resource_metadata: str) -> Verifier:
        async def verify(token: str) -> Grant | None:
            try:
                _key, fetch = self._cached(_header(token).get("kid"))
                if fetch is not None:
                    await fetch.wait(self.fetch_wait)
                claims = self.claims(token, wait=False)  # no network: quick enough to run here
            except JwtRefused:
                return None
            client = claims.get("client_id") or claims.get("azp") or claims.get("sub") or "jwt"
            return Grant(
                client_id=str(client),
                scopes=frozenset(scopes_of(claims)),
                resource_metadata=resource_metadata,
                sources=sources_claimed(claims),
            )

        return verify

    def _check_times(self, claims: dict[str, Any]) -> None:
        now = self.clock()
        exp, nbf = claims.get("exp"), claims.get("nbf")
        if not isinstance(exp, int | float) or exp + LEEWAY_S <= now:
            raise JwtRefused("the token has expired")
        if nbf is not None and (not isinstance(nbf, int | float) or nbf - LEEWAY_S > now):
            raise JwtRefused("the token is not valid yet")

    def _key(self, kid: object, wait: float) -> PyJWK:
        key, fetch = self._cached(kid)
        if key is None and fetch is not None and fetch.done.wait(wait):
            key, _ = self._cached(kid)
        if key is None:
            raise JwtRefused(f"no key {kid!r} in the provider's key set")
        return key

    def _cached(self, kid: object) -> tuple[PyJWK | None, KeyFetch | None]:
        """The key `kid` names now, and when it names none the fetch in flight to wait for
        (None: none may start yet). Starts a fetch when the set is stale or lacks `kid`; never
        waits."""
        with self._lock:
            now = self.clock()
            key = self._find(kid)
            since = now - self._fetched_at
            if since >= CACHE_S or (key is None and since >= MIN_REFETCH_S):
                self._start_fetch(now)
            return key, (self._in_flight if key is None else None)

    def _start_fetch(self, now: float) -> None:
        """A fetch in a thread of its own, unless one is in flight (caller holds _lock)."""
        if self._in_flight is not None:
            return
        self._fetched_at = now
        self.fetches += 1
        fetch = self._in_flight = KeyFetch()
        threading.Thread(target=self._fetch, args=(fetch,), name="docdex-jwks", daemon=True).start()

    def _fetch(self, fetch: KeyFetch) -> None:
        """Fetch the key set; when that fails the keys held stay."""
        try:
            keys: dict[str, PyJWK] | None = signing_keys(json.loads(self.fetch(self.jwks_url)))
        except (OSError, ValueError, jwt.PyJWTError):
            keys = None
        with self._lock:
            if keys is not None:
                self._keys = keys
            self._in_flight = None
        fetch.finish()

    def _find(self, kid: object) -> PyJWK | None:
        if kid is None:
            return next(iter(self._keys.values())) if len(self._keys) == 1 else None
        return self._keys.get(kid) if isinstance(kid, str) else None


def _header(token: str) -> dict[str, Any]:
    """The token's header, once its algorithm is one accepted; JwtRefused otherwise."""
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as exc:
        raise JwtRefused(f"not a JWT: {exc}") from None
    alg = header.get("alg")
    if alg not in ALGORITHMS:
        raise JwtRefused(f"algorithm {alg!r} is not accepted (only {', '.join(ALGORITHMS)})")
    return header


def signing_keys(document: Any) -> dict[str, PyJWK]:
    """The asymmetric signing keys of a JWKS document, by kid ("" for one without)."""
    keys: dict[str, PyJWK] = {}
    for data in document.get("keys", []) if isinstance(document, dict) else []:
        if not isinstance(data, dict) or data.get("kty") not in ALGORITHMS_OF_KEY:
            continue  # "oct" (a shared secret) and unknown types are never used
        if data.get("use", "sig") != "sig":
            continue
        try:
            keys[str(data.get("kid", ""))] = PyJWK(data)
        except jwt.PyJWTError:
            continue
    return keys


def sources_claimed(claims: dict[str, Any]) -> frozenset[str] | None:
    """The sources the `docdex_sources` claim limits the token to (None: no claim, every
    source); JwtRefused when the claim is there but not a list of names, so that a provider's
    mistake limits nothing less than it meant."""
    if SOURCES_CLAIM not in claims:
        return None
    names = claims[SOURCES_CLAIM]
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise JwtRefused(f"the {SOURCES_CLAIM} claim must be a list of source names")
    return frozenset(names)


def scopes_of(claims: dict[str, Any]) -> list[str]:
    scope, scp = claims.get("scope"), claims.get("scp")
    if isinstance(scope, str):
        return scope.split()
    if isinstance(scp, list):
        return [s for s in scp if isinstance(s, str)]
    return scp.split() if isinstance(scp, str) else []
