"""docdex's authorization server in process, with an injected clock: tokens expire, refresh
tokens rotate once, codes are used once and expire, the consent page's throttle, the
settings that are refused, the guard's answers and the reindex scope of an MCP message."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from pathlib import Path

import pytest
from mcp.server.auth.provider import AuthorizationParams, AuthorizeError, TokenError
from mcp.shared.auth import OAuthClientInformationFull

from docdex.server.http.oauth.consent import MAX_FAILURES, WINDOW_S, Throttle
from docdex.server.http.oauth.guard import Grant, Guard
from docdex.server.http.oauth.provider import DocdexProvider, Lifetimes
from docdex.server.http.oauth.scopes import needed_scope, refused_scope
from docdex.server.http.oauth.settings import (
    ALL_SCOPES,
    AuthConfigError,
    AuthMode,
    JwtSettings,
    auth_settings,
)
from docdex.server.http.oauth.store import MAX_CLIENTS, OAuthStore, StoreFull, token_hash


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


def test_registration_is_bounded(store, clock):
    store.register("never-used", {}, None)
    clock.now += 2 * 86400  # a day later, a client never authorized is forgotten
    store.register("c1", {}, None)
    assert set(store.snapshot().clients) == {"c1"}
    state = store.snapshot()
    for n in range(MAX_CLIENTS - 1):
        state.clients[f"x{n}"] = state.clients["c1"]
    store.update(lambda s: s.clients.update(state.clients))
    with pytest.raises(StoreFull):
        store.register("one-too-many", {}, None)


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


def test_the_consent_throttle():
    clock = Clock()
    throttle = Throttle(clock)
    for _ in range(MAX_FAILURES):
        assert not throttle.blocked()
        throttle.failed()
    assert throttle.blocked()
    clock.now += WINDOW_S + 1
    assert not throttle.blocked()


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
    """What PostOnly does with a body: the reindex scope first."""
    message = await receive()
    if await refused_scope(scope, message["body"], send):
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
    assert needed_scope(REINDEX) == "docdex:reindex"
    search = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search_docs"}}
    assert needed_scope(json.dumps(search).encode()) == ""
    tricky = dict(search, params={"name": "search_docs", "arguments": {"query": "reindex"}})
    assert needed_scope(json.dumps(tricky).encode()) == ""
    assert needed_scope(b"not json reindex") == ""


def test_redirect_uris_that_registration_refuses(store, clock):
    from mcp.server.auth.provider import RegistrationError

    from docdex.server.http.oauth.provider import redirect_allowed

    for good in ("https://app.example/cb", "http://127.0.0.1:33418/cb", "cursor://oauth/cb"):
        assert redirect_allowed(good), good
    for bad in ("http://app.example/cb", "javascript:alert(1)", "https://a.example/cb#x"):
        assert not redirect_allowed(bad), bad
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
    from docdex.index_format.environment import read_environment

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
    from docdex.server.http.auth import BindRefused, check_bind

    check_bind("0.0.0.0", None, False, oauth=True)
    with pytest.raises(BindRefused):
        check_bind("0.0.0.0", None, False, oauth=False)


def test_the_consent_page_may_send_its_form_only_here_and_to_the_client():
    from docdex.server.http.oauth.consent import _source

    assert _source("https://claude.ai/api/mcp/auth_callback") == "https://claude.ai"
    assert _source("http://127.0.0.1:33418/cb") == "http://127.0.0.1:33418"
    assert _source("cursor://anysphere.cursor-mcp/oauth/callback") == "cursor:"
    assert _source("https://a.example;script-src */cb") == ""  # nothing injected
