"""docdex's authorization server in process, with an injected clock: tokens expire, refresh
tokens rotate once, codes are used once and expire, the consent page's throttle, the
settings that are refused, the guard's answers and the reindex scope of an MCP message."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
import uvicorn
from mcp.server.auth.provider import AuthorizationParams, AuthorizeError, TokenError
from mcp.shared.auth import OAuthClientInformationFull

from docdex.server.http.oauth.authorization_server.pending import MAX_PENDING
from docdex.server.http.oauth.authorization_server.provider import DocdexProvider, Lifetimes
from docdex.server.http.oauth.authorization_server.redirects import csp_source, redirect_refusal
from docdex.server.http.oauth.authorization_server.registration import (
    MAX_FIELD_CHARS,
    MAX_LIST_ITEMS,
    MAX_REGISTRATION_BYTES,
    REGISTRATION_WINDOW_S,
    REGISTRATIONS_PER_REQUESTER,
)
from docdex.server.http.oauth.authorization_server.throttle import (
    MAX_WRONG_OVERALL,
    MAX_WRONG_PER_REQUEST,
    MAX_WRONG_UNTRUSTED,
    WINDOW_S,
)
from docdex.server.http.oauth.authorization_server.token_store import (
    MAX_CLIENTS,
    OAuthStore,
    StoreFull,
    token_hash,
)
from docdex.server.http.oauth.protected_resource.guard import Grant, Guard
from docdex.server.http.oauth.protected_resource.scopes import needed_scope, refused_scope
from docdex.server.http.oauth.settings import (
    ALL_SCOPES,
    AuthConfigError,
    AuthMode,
    JwtSettings,
    auth_settings,
)
from docdex.server.http.oauth.setup import oauth_parts
from docdex.server.mcp.envelope import parse

from oauthclient import REDIRECT, Authorization, answer_consent, register


class Clock:
    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(tmp_path: Path, clock: Clock) -> OAuthStore:
    return OAuthStore(tmp_path / "state", clock)


SETTINGS = auth_settings(AuthMode.OAUTH, "", "127.0.0.1", 8085, admin_secret="s" * 16)
LIFETIMES = Lifetimes(access=60, refresh=600, code=30, consent=120)


def provider_of(store: OAuthStore, clock: Clock) -> DocdexProvider:
    return DocdexProvider(store, SETTINGS, LIFETIMES, clock)


def client(provider: DocdexProvider, name: str = "c1") -> OAuthClientInformationFull:
    info = OAuthClientInformationFull(
        client_id=name,
        client_secret="secret-" + name,
        redirect_uris=["http://127.0.0.1:9/cb"],  # type: ignore[list-item]
        token_endpoint_auth_method="client_secret_post",
    )
    asyncio.run(provider.register_client(info))
    return info


def test_access_tokens_expire_by_the_clock_and_refresh_tokens_rotate_once(store, clock):
    store.register("c1", {"client_name": "one"}, "secret")
    pair = store.issue("c1", ["docdex:read"], SETTINGS.resource, SETTINGS.issuer, 60, 600)
    assert store.access_token(pair.access_token).client_id == "c1"
    clock.now += 61
    assert store.access_token(pair.access_token) is None  # expired
    new = store.rotate(pair.refresh_token, ["docdex:read"], 60, 600)
    assert new is not None and store.access_token(new.access_token) is not None
    assert store.rotate(pair.refresh_token, ["docdex:read"], 60, 600) is None  # used once
    clock.now += 601
    assert store.rotate(new.refresh_token, ["docdex:read"], 60, 600) is None  # expired
    store.revoke_token("ddx_at_unknown")  # any write drops what expired
    assert not store.snapshot().access and not store.snapshot().refresh


def test_the_file_is_private_hashed_and_seen_by_another_process(store, clock, tmp_path):
    store.register("c1", {}, "the-client-secret")
    pair = store.issue("c1", ["docdex:read"], SETTINGS.resource, SETTINGS.issuer, 60, 600)
    text = store.path.read_text()
    assert pair.access_token not in text and "the-client-secret" not in text
    assert token_hash(pair.access_token) in text
    assert stat.S_IMODE(os.stat(store.path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(store.lock_path).st_mode) == 0o600
    other = OAuthStore(tmp_path / "state", clock)  # `docdex auth revoke` elsewhere
    assert other.revoke_client("c1") == 2
    assert store.access_token(pair.access_token) is None  # the server sees the change
    assert other.revoke_client("c1") == -1


def test_a_refresh_token_used_twice_ends_its_family(store):
    store.register("c1", {}, None)
    first = store.issue("c1", ["docdex:read"], SETTINGS.resource, SETTINGS.issuer, 60, 600)
    other = store.issue("c1", ["docdex:read"], SETTINGS.resource, SETTINGS.issuer, 60, 600)
    second = store.rotate(first.refresh_token, ["docdex:read"], 60, 600)
    assert second is not None
    assert store.rotate(first.refresh_token, ["docdex:read"], 60, 600) is None  # replayed
    assert store.access_token(second.access_token) is None  # the whole family ended
    assert store.refresh_token(second.refresh_token) is None
    assert store.access_token(other.access_token) is not None  # another authorization stays


def test_revoking_one_token_ends_its_pair(store):
    store.register("c1", {}, None)
    pair = store.issue("c1", ["docdex:read"], SETTINGS.resource, SETTINGS.issuer, 60, 600)
    store.revoke_token(pair.refresh_token)
    assert store.access_token(pair.access_token) is None
    assert store.refresh_token(pair.refresh_token) is None


def test_a_client_never_authorized_is_forgotten_after_a_day(store, clock):
    store.register("never-used", {}, None)
    clock.now += 2 * 86400
    store.register("c1", {}, None)
    assert set(store.snapshot().clients) == {"c1"}


def test_codes_are_used_once_and_expire(store, clock):
    provider = provider_of(store, clock)
    info = client(provider)
    assert asyncio.run(provider.get_client("c1")).client_secret is None  # hash only
    params = AuthorizationParams(
        state="s",
        scopes=["docdex:read", "docdex:reindex"],
        code_challenge="x" * 43,
        redirect_uri="http://127.0.0.1:9/cb",  # type: ignore[arg-type]
        redirect_uri_provided_explicitly=True,
        resource=SETTINGS.resource,
    )
    consent = asyncio.run(provider.authorize(info, params))
    request_id = consent.rpartition("request=")[2]
    redirect = provider.approve(request_id, ["docdex:read"])  # the owner left reindex off
    code_value = redirect.split("code=")[1].split("&")[0]
    code = asyncio.run(provider.load_authorization_code(info, code_value))
    assert code.scopes == ["docdex:read"] and code.resource == SETTINGS.resource
    token = asyncio.run(provider.exchange_authorization_code(info, code))
    assert token.scope == "docdex:read" and token.expires_in == 60
    with pytest.raises(TokenError):
        asyncio.run(provider.exchange_authorization_code(info, code))
    assert provider.approve(request_id, ["docdex:read"]) is None  # answered once

    later = asyncio.run(provider.authorize(info, params)).rpartition("request=")[2]
    clock.now += LIFETIMES.consent + 1
    assert provider.pending(later) is None  # a consent page left open too long
    fresh = asyncio.run(provider.authorize(info, params)).rpartition("request=")[2]
    code_value = provider.approve(fresh, list(ALL_SCOPES)).split("code=")[1].split("&")[0]
    clock.now += LIFETIMES.code + 1
    assert asyncio.run(provider.load_authorization_code(info, code_value)) is None

    elsewhere = params.model_copy(update={"resource": "https://other.example/mcp"})
    with pytest.raises(AuthorizeError) as refused:
        asyncio.run(provider.authorize(info, elsewhere))
    assert refused.value.error == "invalid_target"


def test_settings_refused():
    with pytest.raises(AuthConfigError, match="plain HTTP"):
        auth_settings(AuthMode.OAUTH, "http://docs.example.com", "0.0.0.0", 1, "s" * 16)
    with pytest.raises(AuthConfigError, match="--public-url"):
        auth_settings(AuthMode.OAUTH, "", "0.0.0.0", 1, "s" * 16)
    with pytest.raises(AuthConfigError, match="no path"):
        auth_settings(AuthMode.OAUTH, "https://docs.example.com/docdex", "0.0.0.0", 1, "s" * 16)
    with pytest.raises(AuthConfigError, match="DOCDEX_ADMIN_SECRET"):
        auth_settings(AuthMode.OAUTH, "https://docs.example.com", "0.0.0.0", 1, "short")
    with pytest.raises(AuthConfigError, match="DOCDEX_JWKS_URL"):
        auth_settings(AuthMode.JWT, "https://docs.example.com", "0.0.0.0", 1)
    jwt = JwtSettings(jwks_url="http://idp.example/jwks", issuer="https://idp.example")
    with pytest.raises(AuthConfigError, match="plain HTTP"):
        auth_settings(AuthMode.JWT, "https://docs.example.com", "0.0.0.0", 1, jwt=jwt)
    ok = auth_settings(AuthMode.OAUTH, "https://Docs.example.com/", "0.0.0.0", 1, "s" * 16)
    assert ok.resource == "https://Docs.example.com/mcp" and ok.issuer == "https://Docs.example.com"
    assert ok.public_host == "docs.example.com"
    assert auth_settings(AuthMode.TOKEN, "", "0.0.0.0", 1).mode is AuthMode.TOKEN


def test_serve_refuses_plain_http_on_a_public_address(tmp_path, capsys):
    from docdex.cli import main

    environ = {"DOCDEX_ADMIN_SECRET": "s" * 16, "DOCDEX_PUBLIC_URL": "http://docs.example.com"}
    argv = ["--data", str(tmp_path), "serve", "--auth", "oauth", "--host", "0.0.0.0"]
    assert main(argv, environ=environ) == 1
    assert "plain HTTP" in capsys.readouterr().err


# --- the guard and the reindex scope, over a stub app ----------------------------------------


def call(app, path: str, headers: dict[str, str], body: bytes = b"") -> tuple[int, dict, dict]:
    sent: list[dict] = []

    async def receive():
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
    }
    asyncio.run(app(scope, receive, send))
    head = {k.decode(): v.decode() for k, v in sent[0].get("headers", [])}
    payload = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return sent[0]["status"], head, json.loads(payload)


async def scoped_app(scope, receive, send):
    """What PostOnly does with a body: parsed, then the reindex scope first."""
    message = await receive()
    if await refused_scope(scope, parse(message["body"]).message, send):
        return
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b'{"ok": true}'})


def guard(token: str | None = "static-token") -> Guard:
    metadata = "http://127.0.0.1:8085/.well-known/oauth-protected-resource/mcp"

    async def verify(sent: str) -> Grant | None:
        scopes = {"reader": {"docdex:read"}, "other": {"openid"}}.get(sent)
        if scopes is None:
            return None
        return Grant(client_id=sent, scopes=frozenset(scopes), resource_metadata=metadata)

    return Guard(scoped_app, metadata, [verify], token, frozenset({"/health"}))


REINDEX = json.dumps(
    {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "reindex"}}
).encode()


def test_guard_answers():
    app = guard()
    status, head, _ = call(app, "/mcp", {})
    assert status == 401 and head["www-authenticate"].startswith('Bearer scope="docdex:read", ')
    assert 'resource_metadata="http://127.0.0.1:8085/' in head["www-authenticate"]
    status, head, _ = call(app, "/mcp", {"Authorization": "Bearer nope"})
    assert status == 401 and 'error="invalid_token"' in head["www-authenticate"]
    status, head, _ = call(app, "/api/search", {"Authorization": "Bearer other"})
    assert status == 403 and 'scope="docdex:read"' in head["www-authenticate"]
    assert call(app, "/mcp", {"Authorization": "Bearer reader"})[0] == 200
    assert call(app, "/health", {})[0] == 200
    assert call(app, "/.well-known/oauth-protected-resource", {})[0] == 200
    status, head, body = call(app, "/mcp", {"Authorization": "Bearer reader"}, REINDEX)
    assert status == 403 and body["error"] == "insufficient_scope"
    assert 'scope="docdex:read docdex:reindex"' in head["www-authenticate"]
    assert call(app, "/mcp", {"Authorization": "Bearer static-token"}, REINDEX)[0] == 200
    assert call(guard(None), "/mcp", {"Authorization": "Bearer static-token"})[0] == 401


def test_needed_scope():
    assert needed_scope(json.loads(REINDEX)) == "docdex:reindex"
    search = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search_docs"}}
    assert needed_scope(search) == ""
    tricky = dict(search, params={"name": "search_docs", "arguments": {"query": "reindex"}})
    assert needed_scope(tricky) == ""
    assert needed_scope("reindex") == ""


def test_redirect_uris_that_registration_refuses(store, clock):
    from mcp.server.auth.provider import RegistrationError

    for good in (
        "https://app.example/cb",
        "http://127.0.0.1:33418/cb",
        "http://[::1]:8080/cb",
        "com.example.app:/cb",
        "cursor://anysphere.cursor-mcp/oauth/callback",  # one word: an app's own, no browser's
    ):
        assert redirect_refusal(good) is None and csp_source(good), good
    for bad, why in (
        ("http://app.example/cb", "plain HTTP"),
        ("javascript:alert(1)", "the scheme javascript:"),
        ("chrome-extension://abc/cb", "the scheme chrome-extension:"),  # a browser's own
        ("https://a.example/cb#", "fragment"),
        ("https://me:pw@a.example/cb", "user name"),
        ("https://a.example:99999/cb", "not a URI"),
        ("https://" + "a" * 2000 + ".example/", "longer than"),
    ):
        refusal = redirect_refusal(bad)
        assert refusal is not None and why in refusal, (bad, refusal)
        assert csp_source(bad) == "", bad
    provider = provider_of(store, clock)
    info = OAuthClientInformationFull(
        client_id="c2",
        redirect_uris=["http://app.example/cb"],  # type: ignore[list-item]
    )
    with pytest.raises(RegistrationError):
        asyncio.run(provider.register_client(info))


def test_the_paths_are_the_sdks():
    from mcp.server.auth import routes

    from docdex.server.http.oauth import paths

    assert (paths.AUTHORIZE, paths.TOKEN, paths.REGISTER, paths.REVOKE) == (
        routes.AUTHORIZATION_PATH,
        routes.TOKEN_PATH,
        routes.REGISTRATION_PATH,
        routes.REVOCATION_PATH,
    )


def test_the_variables_are_read():
    from docdex.index_format.config import ConfigError
    from docdex.runtime.environment import read_environment

    environment = read_environment(
        {
            "DOCDEX_AUTH": "OAuth",
            "DOCDEX_PUBLIC_URL": "https://docs.example.com",
            "DOCDEX_ADMIN_SECRET": "a-secret-of-some-length",
            "DOCDEX_JWKS_URL": "https://id.example.com/jwks",
            "DOCDEX_JWT_ISSUER": "https://id.example.com",
            "DOCDEX_JWT_AUDIENCE": "docdex",
        }
    )
    assert environment.auth == "oauth" and environment.public_url == "https://docs.example.com"
    assert environment.admin_secret == "a-secret-of-some-length"
    assert (environment.jwks_url, environment.jwt_issuer, environment.jwt_audience) == (
        "https://id.example.com/jwks",
        "https://id.example.com",
        "docdex",
    )
    with pytest.raises(ConfigError, match="DOCDEX_AUTH must be one of token, oauth, jwt"):
        read_environment({"DOCDEX_AUTH": "basic"})


def test_serve_refuses_oauth_without_an_admin_secret(tmp_path, capsys):
    from docdex.cli import main

    argv = ["--data", str(tmp_path), "serve", "--auth", "oauth"]
    assert main(argv, environ={}) == 1
    assert "DOCDEX_ADMIN_SECRET" in capsys.readouterr().err


def test_oauth_may_bind_beyond_loopback_without_the_static_token():
    from docdex.server.http.access import BindRefused, check_bind

    check_bind("0.0.0.0", None, False, oauth=True)
    with pytest.raises(BindRefused):
        check_bind("0.0.0.0", None, False, oauth=False)


def test_the_consent_page_may_send_its_form_only_here_and_to_the_client():
    assert csp_source("https://claude.ai/api/mcp/auth_callback") == "https://claude.ai"
    assert csp_source("http://127.0.0.1:33418/cb") == "http://127.0.0.1:33418"
    assert csp_source("com.example.app://oauth/callback") == "com.example.app:"
    assert csp_source("http://[::1]:33418/cb") == "http:"  # a CSP host cannot name IPv6
    assert csp_source("https://a.example;script-src */cb") == ""  # nothing injected


# --- the authorization server's routes under uvicorn, on the test's clock ----------------------

OWNER_SECRET = "the-owner-secret-0123456789"


@pytest.fixture
def served(tmp_path: Path, clock: Clock) -> Iterator[str]:
    """The routes `--auth oauth` adds, served by uvicorn on 127.0.0.1 in a thread, on the
    test's clock; its address. uvicorn believes X-Forwarded-For from loopback, as from a
    proxy there, so each browser below comes from an address of its own."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)  # connections wait in the backlog until uvicorn serves them
    port = sock.getsockname()[1]
    settings = auth_settings(AuthMode.OAUTH, "", "127.0.0.1", port, admin_secret=OWNER_SECRET)
    from starlette.applications import Starlette

    app = Starlette(routes=oauth_parts(settings, tmp_path / "state", clock, LIFETIMES).routes)
    server = uvicorn.Server(
        uvicorn.Config(app, log_config=None, log_level="warning", access_log=False, lifespan="off")
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    yield settings.public_url
    server.should_exit = True
    thread.join()
    sock.close()


def browser(url: str, address: str) -> httpx2.Client:
    return httpx2.Client(base_url=url, headers={"X-Forwarded-For": address}, timeout=60)


def test_the_right_secret_passes_whatever_strangers_typed(served, clock):
    """Strangers at many addresses spend every budget of wrong secrets there is; the owner's
    right secret still passes, from an address of the owner's and from a stranger's."""
    with browser(served, "192.0.2.1") as owner:
        trusted = register(owner)
        Authorization(trusted).tokens(owner, OWNER_SECRET)  # authorized once: trusted
    for n in range(MAX_WRONG_OVERALL // MAX_WRONG_PER_REQUEST + 1):
        with browser(served, f"203.0.113.{n}") as stranger:
            page = Authorization(register(stranger)).consent_page(stranger)
            tries = range(MAX_WRONG_PER_REQUEST)
            answers = [answer_consent(stranger, page, f"guess-{n}-{i}") for i in tries]
            assert answers[0].status_code in (403, 410)
    with browser(served, "203.0.113.200") as stranger:  # the budget of all is spent now:
        page = Authorization(register(stranger)).consent_page(stranger)
        assert answer_consent(stranger, page, "one-more-guess").status_code == 410
        again = stranger.get("/authorize", params=Authorization({**trusted}).params)
        assert again.status_code == 302  # the owner's client is not shut out
    for address in ("192.0.2.1", "203.0.113.1"):
        with browser(served, address) as owner:
            mistyped = answer_consent(owner, Authorization(trusted).consent_page(owner), "typo")
            assert mistyped.status_code == 429  # a request takes one wrong secret now
            for client in (trusted, register(owner)):
                answer = answer_consent(
                    owner, Authorization(client).consent_page(owner), OWNER_SECRET
                )
                assert answer.status_code == 303 and "code=" in answer.headers["location"]
    clock.now += WINDOW_S + 1  # the window passes: a wrong secret leaves its request open
    with browser(served, "192.0.2.1") as owner:
        page = Authorization(trusted).consent_page(owner)
        assert answer_consent(owner, page, "typo").status_code == 403
        assert answer_consent(owner, page, OWNER_SECRET).status_code == 303


def test_wrong_secrets_end_the_request_then_the_client_that_sent_them(served):
    with browser(served, "203.0.113.5") as stranger:
        client = register(stranger)
        statuses: list[int] = []
        for _ in range(MAX_WRONG_UNTRUSTED):
            page = Authorization(client).consent_page(stranger)
            for _ in range(MAX_WRONG_PER_REQUEST):
                statuses.append(answer_consent(stranger, page, "guess").status_code)
                if statuses[-1] != 403:
                    break
            if statuses[-1] == 410:
                break
        assert statuses[:MAX_WRONG_PER_REQUEST] == [403] * (MAX_WRONG_PER_REQUEST - 1) + [429]
        assert len(statuses) == MAX_WRONG_UNTRUSTED  # then the client is forgotten
        assert stranger.get("/authorize", params=Authorization(client).params).status_code == 400


def test_registration_is_bounded_per_requester_and_in_size(served, clock):
    with browser(served, "203.0.113.9") as storm:
        big = storm.post(
            "/register",
            json={"redirect_uris": [REDIRECT], "client_name": "x" * MAX_REGISTRATION_BYTES},
        )
        assert big.status_code == 413
        for field, value in (
            ("client_name", "x" * (MAX_FIELD_CHARS + 1)),
            ("contacts", ["a@example.com"] * (MAX_LIST_ITEMS + 1)),
            ("jwks", {"keys": [{"k": "x" * MAX_FIELD_CHARS}]}),
        ):
            reply = storm.post("/register", json={"redirect_uris": [REDIRECT], field: value})
            assert reply.status_code == 400 and field in reply.json()["error_description"], field
        for _ in range(REGISTRATIONS_PER_REQUESTER):  # the refused ones did not count
            register(storm)
        refused = storm.post("/register", json={"redirect_uris": [REDIRECT]})
        assert refused.status_code == 429 and "retry-after" in refused.headers
    with browser(served, "203.0.113.10") as other:
        register(other)  # another address is not refused
    clock.now += REGISTRATION_WINDOW_S + 1
    with browser(served, "203.0.113.9") as storm:
        register(storm)


def test_an_ipv6_requester_is_counted_by_its_64(served):
    """One subscriber holds a whole /64: its addresses share one budget of registrations."""
    for n in range(REGISTRATIONS_PER_REQUESTER):
        with browser(served, f"2001:db8:1:2::{n + 1:x}") as one:
            register(one)
    with browser(served, "2001:db8:1:2:ffff::9") as same:
        assert same.post("/register", json={"redirect_uris": [REDIRECT]}).status_code == 429
    with browser(served, "2001:db8:1:3::1") as other:
        register(other)


def test_a_full_store_forgets_its_oldest_never_authorized_client(store, clock):
    store.register("authorized", {}, None)
    store.issue("authorized", ["docdex:read"], SETTINGS.resource, SETTINGS.issuer, 60, 600)

    def fill(state):
        for n in range(MAX_CLIENTS - 1):
            record = state.clients["authorized"].__copy__()
            record.registered_at, record.last_issued_at = clock.now + n, 0.0
            state.clients[f"c{n}"] = record

    store.update(fill)
    clock.now += MAX_CLIENTS
    store.register("newcomer", {}, None)
    clients = store.snapshot().clients
    assert len(clients) == MAX_CLIENTS and "newcomer" in clients and "authorized" in clients
    assert "c0" not in clients and "c1" in clients  # the oldest never authorized went

    def authorize_all(state):
        for record in state.clients.values():
            record.last_issued_at = clock.now

    store.update(authorize_all)
    with pytest.raises(StoreFull):  # none to forget: every client was authorized
        store.register("one-too-many", {}, None)


def test_a_flood_of_authorization_requests_evicts_only_its_own(served):
    with browser(served, "192.0.2.1") as owner, browser(served, "203.0.113.7") as stranger:
        page = Authorization(register(owner)).consent_page(owner)
        theirs = register(stranger)
        first = Authorization(theirs).consent_page(stranger)
        for _ in range(250):
            assert (
                stranger.get("/authorize", params=Authorization(theirs).params).status_code == 302
            )
        assert answer_consent(owner, page, OWNER_SECRET).status_code == 303
        assert answer_consent(stranger, first, "guess").status_code == 410  # its own oldest went


def test_pending_requests_past_the_bound_are_refused_not_evicted(store, clock):
    provider = provider_of(store, clock)
    info = client(provider)
    params = AuthorizationParams(
        state=None,
        scopes=["docdex:read"],
        code_challenge="x" * 43,
        redirect_uri="http://127.0.0.1:9/cb",  # type: ignore[arg-type]
        redirect_uri_provided_explicitly=True,
        resource=None,
    )

    def begin(requester: str) -> str:
        return asyncio.run(provider.authorize(info, params, requester)).rpartition("request=")[2]

    owners = begin("192.0.2.1")
    for n in range(MAX_PENDING - 1):  # strangers, each at an address of its own
        begin(f"10.0.{n // 200}.{n % 200}")
    with pytest.raises(AuthorizeError) as refused:
        begin("10.1.0.1")
    assert refused.value.error == "temporarily_unavailable"
    assert provider.pending(owners) is not None  # nobody's request was evicted for it
    clock.now += LIFETIMES.consent + 1
    assert provider.pending(begin("10.1.0.1")) is not None  # expired ones made room


def test_a_temporary_file_a_killed_write_left_is_removed_when_the_store_opens(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    dead = int(ended.stdout)  # a process that has exited
    left = state / f".tmp-{dead}-oauth.json"
    stale = state / f".tmp-{os.getppid()}-oauth.json"  # a live PID, but hours old: reused
    busy = state / f".tmp-{os.getpid()}-oauth.json"  # a live writer's, just made
    other = state / f".tmp-{dead}-other.json"  # another file's: not the store's
    for path in (left, stale, busy, other):
        path.write_bytes(b'{"clients": {')
    hours_ago = time.time() - 3 * 3600
    os.utime(stale, (hours_ago, hours_ago))
    OAuthStore(state)
    assert not left.exists() and not stale.exists()
    assert busy.exists() and other.exists()
