"""JWTs of an existing identity provider, checked against a JWKS this test serves: a valid
token passes; a rotated key is fetched on its unknown kid (at most once per MIN_REFETCH_S);
an expired token, a wrong audience, a wrong issuer, `alg: none`, HMAC signed with the public
key and a symmetric key in the set are each refused; a `docdex_sources` claim limits a token
to those sources. Then a real `docdex serve --auth jwt` answers an MCP client holding such a
token, limited by its claim. Expiry follows an injected clock."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from docdex.index_format.layout import DataDir
from docdex.server.http.oauth.protected_resource.jwks import (
    CACHE_S,
    MIN_REFETCH_S,
    JwksVerifier,
    JwtRefused,
    fetch_url,
)
from docdex.serverproc import ServeProcess, call_tool

from fixtures import build_workspace, http, index_workspace

ISSUER = "https://idp.example"
AUDIENCE = "http://127.0.0.1:8085/mcp"
NOW = 1_800_000_000


class Clock:
    def __init__(self) -> None:
        self.now = float(NOW)

    def __call__(self) -> float:
        return self.now


class Jwks:
    """A JWKS endpoint on 127.0.0.1 whose key set the test changes."""

    def __init__(self) -> None:
        self.document: dict = {"keys": []}
        self.hits = 0
        self.hold: threading.Event | None = None  # answers wait for it: a slow provider
        self.held = threading.Event()  # set while an answer waits for `hold`
        jwks = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                jwks.hits += 1
                if jwks.hold is not None:
                    jwks.held.set()
                    jwks.hold.wait(60)
                    jwks.held.clear()
                body = json.dumps(jwks.document).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/jwks"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def jwks() -> Iterator[Jwks]:
    served = Jwks()
    yield served
    served.close()


class Key:
    def __init__(self, kid: str, private) -> None:
        self.kid, self.private = kid, private

    @classmethod
    def rsa(cls, kid: str) -> Key:
        return cls(kid, rsa.generate_private_key(public_exponent=65537, key_size=2048))

    @classmethod
    def ec(cls, kid: str) -> Key:
        return cls(kid, ec.generate_private_key(ec.SECP256R1()))

    @property
    def alg(self) -> str:
        return "RS256" if isinstance(self.private, rsa.RSAPrivateKey) else "ES256"

    def jwk(self) -> dict:
        public = jwt.PyJWK.from_dict(
            json.loads(
                jwt.algorithms.get_default_algorithms()[self.alg].to_jwk(self.private.public_key())
            )
        )
        return {**public._jwk_data, "kid": self.kid, "use": "sig"}

    def sign(self, **claims) -> str:
        body = {"iss": ISSUER, "aud": AUDIENCE, "exp": NOW + 300, "scope": "docdex:read", **claims}
        return jwt.encode(body, self.private, algorithm=self.alg, headers={"kid": self.kid})

    def public_pem(self) -> bytes:
        return self.private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )


def unsigned(header: dict, claims: dict, sign=lambda data: b"") -> str:
    def part(value) -> str:
        raw = value if isinstance(value, bytes) else json.dumps(value).encode()
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    head = f"{part(header)}.{part(claims)}"
    return f"{head}.{part(sign(head.encode()))}"


def refused(verifier: JwksVerifier, token: str, why: str) -> None:
    with pytest.raises(JwtRefused, match=why):
        verifier.claims(token)


def test_tokens_checked_against_the_jwks(jwks):
    k1, k2, e1 = Key.rsa("k1"), Key.rsa("k2"), Key.ec("e1")
    jwks.document = {"keys": [k1.jwk(), e1.jwk()]}
    clock = Clock()
    verifier = JwksVerifier(jwks.url, ISSUER, AUDIENCE, clock=clock)
    assert verifier.claims(k1.sign(sub="alice"))["sub"] == "alice"
    assert verifier.claims(e1.sign())["iss"] == ISSUER
    assert jwks.hits == 1  # cached

    # the provider rotates to k2: an unknown kid fetches the set again, not more often
    jwks.document = {"keys": [k2.jwk()]}
    clock.now += 5
    refused(verifier, k2.sign(), "no key 'k2'")  # fetched less than MIN_REFETCH_S ago
    assert jwks.hits == 1
    clock.now += MIN_REFETCH_S
    assert verifier.claims(k2.sign(exp=NOW + 3600))["aud"] == AUDIENCE
    assert jwks.hits == 2
    refused(verifier, k1.sign(), "no key 'k1'")  # retired with the old set
    assert jwks.hits == 2

    refused(verifier, k2.sign(exp=NOW - 60), "expired")
    clock.now = NOW + 3600 + 31  # past exp and its leeway, by the clock
    refused(verifier, k2.sign(exp=NOW + 3600), "expired")
    clock.now = float(NOW)
    refused(verifier, k2.sign(aud="https://other.example/mcp"), "Audience")
    refused(verifier, k2.sign(iss="https://evil.example"), "issuer")
    refused(verifier, k2.sign(nbf=NOW + 600), "not valid yet")
    refused(verifier, unsigned({"alg": "none", "kid": "k2"}, {"iss": ISSUER}), "'none'")
    pem = k2.public_pem()

    def with_public_key(data: bytes) -> bytes:
        return hmac.new(pem, data, hashlib.sha256).digest()

    claims = {"iss": ISSUER, "aud": AUDIENCE, "exp": NOW + 60}
    hs = unsigned({"alg": "HS256", "kid": "k2", "typ": "JWT"}, claims, with_public_key)
    refused(verifier, hs, "'HS256' is not accepted")
    ec_as_k2 = jwt.encode(claims, e1.private, algorithm="ES256", headers={"kid": "k2"})
    refused(verifier, ec_as_k2, "does not fit the key's type RSA")


def test_a_slow_key_set_never_delays_a_token_whose_key_is_cached(jwks):
    """A token with an invented kid sends the verifier to the provider again, and the
    provider holds that answer: a token whose key is cached is answered meanwhile, even once
    the cache is stale, and sixty invented kids make one fetch and hold no caller for long."""
    key, inventor = Key.rsa("k1"), Key.rsa("invented")
    jwks.document = {"keys": [key.jwk()]}
    clock = Clock()
    returned = threading.Event()  # set when a fetch of the set has returned (or failed)

    def fetch(url: str) -> bytes:
        try:
            return fetch_url(url)
        finally:
            returned.set()

    verifier = JwksVerifier(jwks.url, ISSUER, AUDIENCE, clock=clock, fetch=fetch)
    valid = key.sign(exp=NOW + 10 * int(CACHE_S))
    assert verifier.claims(valid)["iss"] == ISSUER  # the set, fetched once and cached
    returned.clear()
    jwks.hold = threading.Event()
    clock.now += MIN_REFETCH_S
    outcome: dict = {}

    def claims_of(name: str, token: str, done: threading.Event | None = None) -> None:
        try:
            outcome[name] = verifier.claims(token)
        except JwtRefused as exc:
            outcome[name] = str(exc)
        if done is not None:
            done.set()

    stray = threading.Thread(target=claims_of, args=("invented", inventor.sign()))
    try:
        stray.start()
        assert jwks.held.wait(30)  # its refetch is in flight, and the provider holds it
        answered = threading.Event()
        threading.Thread(target=claims_of, args=("valid", valid, answered), daemon=True).start()
        assert answered.wait(30) and not returned.is_set()  # answered while it is held
        assert outcome["valid"]["iss"] == ISSUER
        clock.now += CACHE_S  # the cache is stale: its keys still answer at once
        assert verifier.claims(valid)["iss"] == ISSUER and not returned.is_set()

        verify = verifier.grant_verifier("meta")

        async def sixty_invented_and_one_valid():
            invented = [Key(f"made-up-{n}", inventor.private).sign() for n in range(60)]
            strays = [asyncio.create_task(verify(token)) for token in invented]
            grant = await verify(valid)
            return grant, not returned.is_set(), await asyncio.gather(*strays)

        grant, still_held, refused_all = asyncio.run(sixty_invented_and_one_valid())
        assert grant is not None and grant.scopes == frozenset({"docdex:read"}) and still_held
        assert refused_all == [None] * 60
        assert jwks.hits == 2  # the first fetch, and the one refetch every kid waited for
    finally:
        jwks.hold.set()
    stray.join()
    assert outcome["invented"] == "no key 'invented' in the provider's key set"


def test_symmetric_keys_in_the_set_are_never_used(jwks):
    secret = b"shared-secret-of-32-bytes-length!"
    oct_key = {"kty": "oct", "kid": "h1", "k": base64.urlsafe_b64encode(secret).decode()}
    jwks.document = {"keys": [oct_key]}
    verifier = JwksVerifier(jwks.url, ISSUER, AUDIENCE, clock=Clock())
    token = jwt.encode({"iss": ISSUER, "aud": AUDIENCE, "exp": NOW + 60}, secret, "HS256")
    refused(verifier, token, "not accepted")


def test_serve_with_jwts_of_an_identity_provider(tmp_path, embedder, jwks):
    key = Key.rsa("k1")
    jwks.document = {"keys": [key.jwk()]}
    data = DataDir(tmp_path / "data")
    index_workspace(data, build_workspace(tmp_path), embedder)
    env = {"DOCDEX_JWKS_URL": jwks.url, "DOCDEX_JWT_ISSUER": ISSUER}
    args = ("--auth", "jwt")
    static = "static-token-beside-jwts-0123456789"  # /health's details, for wait_serving
    log = tmp_path / "serve.log"
    with ServeProcess(data.root, log, token=static, extra_args=args, env=env) as server:
        server.wait_serving()
        metadata = http(f"{server.url}/.well-known/oauth-protected-resource/mcp").json()
        assert metadata["authorization_servers"] == [ISSUER]
        assert metadata["resource"] == server.mcp_url
        exp = int(time.time()) + 600  # the server's clock is the real one
        good = key.sign(aud=server.mcp_url, exp=exp)
        assert not call_tool(server.mcp_url, "list_sources", {}, good).is_error
        reindex = call_tool_status(server, good, "reindex")
        assert reindex == 403
        both = key.sign(aud=server.mcp_url, exp=exp, scope="docdex:read docdex:reindex")
        assert call_tool_status(server, both, "reindex") == 200
        for bad in (key.sign(exp=exp), key.sign(aud=server.mcp_url, exp=exp - 3600)):
            assert call_tool_status(server, bad, "list_sources") == 401
        for claimed, seen in ((["docs"], ["docs"]), (["elsewhere"], [])):
            limited = key.sign(aud=server.mcp_url, exp=exp, docdex_sources=claimed)
            listed = call_tool(server.mcp_url, "list_sources", {}, limited).structured_content
            assert [s["name"] for s in listed["sources"]] == seen


def test_the_sources_claim_limits_a_token(jwks):
    key = Key.rsa("k1")
    jwks.document = {"keys": [key.jwk()]}
    verify = JwksVerifier(jwks.url, ISSUER, AUDIENCE, clock=Clock()).grant_verifier("meta")

    def grant(**claims):
        return asyncio.run(verify(key.sign(**claims)))

    assert grant().sources is None  # no claim: every source
    assert grant(docdex_sources=["a", "b"]).sources == frozenset({"a", "b"})
    assert grant(docdex_sources=[]).sources == frozenset()  # a list of none reads none
    assert grant(docdex_sources="a") is None  # not a list: refused, never read as "every"
    assert grant(docdex_sources=["a", 1]) is None


def call_tool_status(server: ServeProcess, token: str, name: str) -> int:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name}}
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {token}",
        "MCP-Protocol-Version": "2025-11-25",
    }
    return http(server.mcp_url, headers, method="POST", data=json.dumps(body).encode()).status
