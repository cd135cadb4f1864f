"""A real `docdex serve --auth oauth` on 127.0.0.1 over a small real index, driven by the MCP
SDK's own OAuth client (OAuthClientProvider): discovery from the 401, dynamic registration,
the consent form (posted over HTTP with the admin secret), the token, searches through a
real MCP session, a step-up to the reindex scope, refresh with rotation, revocation by the
client and by `docdex auth revoke`; beside it the static DOCDEX_TOKEN still works."""

from __future__ import annotations

import json
import os
import re
import stat
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2
import pytest
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import OAuthClientInformationFull

from docdex.cli import main as docdex_main
from docdex.index_format.layout import DataDir
from docdex.serverproc import ServeProcess, call_tool

from fixtures import build_workspace, http, index_workspace
from oauthclient import (
    Authorization,
    Memory,
    Redirected,
    answer_consent,
    client_metadata,
    form_field,
    register,
    run_session,
    token_request,
)

SECRET = "owner-secret-for-the-consent-page"
STATIC = "static-token-beside-oauth-0123456789"
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
LIST_TOOLS = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()


@pytest.fixture(scope="module")
def server(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("oauth")
    data = DataDir(root / "data")
    index_workspace(data, build_workspace(root), embedder)
    env = {"DOCDEX_ADMIN_SECRET": SECRET}
    with ServeProcess(
        data.root, root / "serve.log", token=STATIC, extra_args=("--auth", "oauth"), env=env
    ) as server:
        server.wait_serving()
        yield server


class Owner(Redirected):
    """The person at the browser: opens the authorization URL, reads the consent form and
    posts it with the admin secret; the redirect's code goes back to the client."""

    def __init__(self, server: ServeProcess, secret: str = SECRET, tick_reindex: bool = False):
        super().__init__()
        self.server, self.secret = server, secret
        self.tick_reindex = tick_reindex  # the owner ticks "also allow reindex" if unticked
        self.consents = 0
        self.pages: list[str] = []

    async def redirect(self, authorization_url: str) -> None:
        async with httpx2.AsyncClient() as browser:
            asked = await browser.get(authorization_url)
            assert asked.status_code == 302, asked.text
            page = await browser.get(asked.headers["location"])
            assert page.status_code == 200 and "Admin secret" in page.text
            assert "script" not in page.headers["content-security-policy"]
            self.pages.append(page.text)
            form = {"request": form_field(page.text, "request"), "secret": self.secret}
            form["decision"] = "allow"
            if 'name="reindex" checked' in page.text or (  # as a browser submits the form
                self.tick_reindex and 'name="reindex"' in page.text
            ):
                form["reindex"] = "on"
            answer = await browser.post(f"{self.server.url}/oauth/consent", data=form)
        self.received(answer)
        self.consents += 1


def oauth_client(server: ServeProcess, owner: Owner, storage: Memory) -> OAuthClientProvider:
    metadata = client_metadata("test agent")
    return OAuthClientProvider(server.mcp_url, metadata, storage, owner.redirect, owner.callback)


def mcp_status(server: ServeProcess, token: str | None) -> tuple[int, str]:
    headers = dict(MCP_HEADERS, **({"Authorization": f"Bearer {token}"} if token else {}))
    reply = http(server.mcp_url, headers, method="POST", data=LIST_TOOLS)
    return reply.status, header(reply, "www-authenticate")


def header(reply, name: str) -> str:
    return next((v for k, v in reply.headers.items() if k.lower() == name), "")


def test_discovery_from_the_401(server):
    status, challenge = mcp_status(server, None)
    assert status == 401
    metadata_url = f"{server.url}/.well-known/oauth-protected-resource/mcp"
    assert challenge.startswith("Bearer ") and f'resource_metadata="{metadata_url}"' in challenge
    assert "error=" not in challenge  # no token sent: no error code (RFC 6750)
    assert 'scope="docdex:read"' in challenge  # a first authorization asks to read only
    resource = http(metadata_url).json()
    assert resource["resource"] == server.mcp_url
    assert resource["authorization_servers"] == [server.url]
    assert resource["scopes_supported"] == ["docdex:read", "docdex:reindex"]
    assert http(f"{server.url}/.well-known/oauth-protected-resource").json() == resource
    issuer = http(f"{server.url}/.well-known/oauth-authorization-server").json()
    assert issuer["issuer"] == server.url
    assert issuer["code_challenge_methods_supported"] == ["S256"]
    assert issuer["registration_endpoint"] == f"{server.url}/register"
    assert issuer["revocation_endpoint"] == f"{server.url}/revoke"
    status, challenge = mcp_status(server, "ddx_at_made-up")
    assert status == 401 and 'error="invalid_token"' in challenge


def test_url_only_client_connects_searches_refreshes_and_is_revoked(server):
    owner, storage = Owner(server), Memory()
    auth = oauth_client(server, owner, storage)
    found, sources = run_session(
        auth, [("search_docs", {"query": "error code E1234"}), ("list_sources", {})]
    )
    assert not found.is_error and found.structured_content["results"][0]["path"] == "faq.md"
    assert sources.structured_content["sources"][0]["name"] == "docs"
    assert owner.consents == 1 and storage.tokens is not None
    assert storage.tokens.scope == "docdex:read" and storage.tokens.refresh_token
    assert 'name="reindex">' in owner.pages[0]  # it asked to read only: offered, unticked
    first = storage.tokens

    # the client takes its token for expired: it refreshes, the refresh token rotates
    auth.context.token_expiry_time = 1.0  # 1970
    (again,) = run_session(auth, [("search_docs", {"query": "install prefix"})])
    assert not again.is_error and owner.consents == 1
    assert storage.tokens.access_token != first.access_token
    assert storage.tokens.refresh_token != first.refresh_token
    assert mcp_status(server, first.access_token)[0] == 401  # the old pair ended
    assert mcp_status(server, storage.tokens.access_token)[0] == 200
    # the rotated-out refresh token comes back (stolen, replayed): refused, and every token
    # refreshed from that authorization ends with it
    reused = refresh(server, storage.client_info, first.refresh_token)
    assert reused.status == 400 and reused.json()["error"] == "invalid_grant"
    assert mcp_status(server, storage.tokens.access_token)[0] == 401

    # the client signs in again, then revokes its token: refused from then on
    (fine,) = run_session(auth, [("list_sources", {})])
    assert not fine.is_error and owner.consents == 2
    revoked = post_form(server, "/revoke", storage.client_info, token=storage.tokens.access_token)
    assert revoked.status == 200
    assert mcp_status(server, storage.tokens.access_token)[0] == 401


def test_reindex_needs_its_scope_and_the_client_steps_up(server):
    owner, storage = Owner(server), Memory()
    auth = oauth_client(server, owner, storage)
    run_session(auth, [("list_sources", {})])
    read_only = storage.tokens.access_token
    assert storage.tokens.scope == "docdex:read"
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "reindex"}}
    ).encode()
    headers = dict(MCP_HEADERS, Authorization=f"Bearer {read_only}")
    refused = http(server.mcp_url, headers, method="POST", data=body)
    assert refused.status == 403
    challenge = header(refused, "www-authenticate")
    assert 'error="insufficient_scope"' in challenge and "docdex:reindex" in challenge

    (receipt,) = run_session(auth, [("reindex", {"source": "docs"})])  # the client steps up
    assert not receipt.is_error, receipt
    assert owner.consents == 2 and "docdex:reindex" in storage.tokens.scope.split()
    assert "also allow reindex" in owner.pages[1]


def test_the_owner_allows_reindex_to_a_client_that_asked_to_read_only(server):
    owner, storage = Owner(server, tick_reindex=True), Memory()
    auth = oauth_client(server, owner, storage)
    (receipt,) = run_session(auth, [("reindex", {"source": "docs"})])
    assert not receipt.is_error, receipt
    assert owner.consents == 1  # no step-up: the first consent allowed both
    assert set(storage.tokens.scope.split()) == {"docdex:read", "docdex:reindex"}
    assert "also allow reindex" in owner.pages[0]
    assert "search and read" in owner.pages[0]


def test_a_client_asking_both_scopes_at_first_gets_both_in_one_consent(server):
    with httpx2.Client(base_url=server.url) as browser:
        asked = Authorization(register(browser), scope="docdex:read docdex:reindex")
        page = asked.consent_page(browser)
        assert 'name="reindex" checked' in page.text
        form = {"request": form_field(page.text, "request"), "secret": SECRET}
        answer = browser.post("/oauth/consent", data={**form, "decision": "allow", "reindex": "on"})
        code = parse_qs(urlsplit(answer.headers["location"]).query)["code"][0]
        tokens = asked.exchange(browser, code).json()
    assert set(tokens["scope"].split()) == {"docdex:read", "docdex:reindex"}
    receipt = call_tool(server.mcp_url, "reindex", {"source": "docs"}, token=tokens["access_token"])
    assert not receipt.is_error, receipt


def test_docdex_auth_lists_and_revokes_clients(server, capsys):
    owner, storage = Owner(server), Memory()
    run_session(oauth_client(server, owner, storage), [("list_sources", {})])
    client_id = storage.client_info.client_id
    data = ["--data", str(server.data)]
    assert docdex_main([*data, "auth", "clients", "--json"], environ={}) == 0
    listed = {c["client_id"]: c for c in json.loads(capsys.readouterr().out)}
    assert listed[client_id]["client_name"] == "test agent"
    assert listed[client_id]["tokens"] >= 1
    assert mcp_status(server, storage.tokens.access_token)[0] == 200

    assert docdex_main([*data, "auth", "revoke", client_id], environ={}) == 0
    assert client_id in capsys.readouterr().out
    assert mcp_status(server, storage.tokens.access_token)[0] == 401
    assert docdex_main([*data, "auth", "revoke", client_id], environ={}) == 1


def test_the_state_file_holds_no_token_and_only_its_owner_reads_it(server):
    owner, storage = Owner(server), Memory()
    run_session(oauth_client(server, owner, storage), [("list_sources", {})])
    state = server.data / "state" / "oauth.json"
    assert stat.S_IMODE(os.stat(state).st_mode) == 0o600
    text = state.read_text()
    assert storage.tokens.access_token not in text and storage.tokens.refresh_token not in text
    assert storage.client_info.client_secret and storage.client_info.client_secret not in text
    assert SECRET not in text


def test_consent_refuses_a_wrong_secret_a_denial_and_another_resource(server):
    with browser_at(server, 1) as browser:
        asked = Authorization(register(browser), state="s1")
        asked.tokens(browser, SECRET)  # the owner authorized this client once: it is trusted
        elsewhere = browser.get(
            "/authorize", params={**asked.params, "resource": "https://evil.example/mcp"}
        )
        assert "error=invalid_target" in elsewhere.headers["location"]
        plain = browser.get("/authorize", params={**asked.params, "code_challenge_method": "plain"})
        assert plain.status_code in (302, 400) and "code=" not in plain.headers.get("location", "")

        consent = asked.consent_page(browser)
        request_id = re.search(r'name="request" value="([^"]+)"', consent.text)[1]  # type: ignore[index]
        wrong = browser.post(
            "/oauth/consent", data={"request": request_id, "secret": "guess", "decision": "allow"}
        )
        assert wrong.status_code == 403 and "Wrong admin secret" in wrong.text
        denied = browser.post("/oauth/consent", data={"request": request_id, "decision": "deny"})
        assert denied.status_code == 303
        query = parse_qs(urlsplit(denied.headers["location"]).query)
        assert query["error"] == ["access_denied"] and query["state"] == ["s1"]
        again = browser.post(
            "/oauth/consent", data={"request": request_id, "secret": SECRET, "decision": "allow"}
        )
        assert again.status_code == 410  # answered once


# --- what strangers try ------------------------------------------------------------------------


def test_a_strangers_wrong_secrets_never_refuse_the_owners_right_one(server):
    """A stranger at the owner's own address types wrong secrets, far more than the ten that
    once closed the page to everyone: the owner's right secret still passes, on a request the
    owner opened before and on one opened after."""
    with browser_at(server, 2) as owner, browser_at(server, 2) as stranger:
        mine = register(owner)
        before = Authorization(mine).consent_page(owner)
        theirs = register(stranger)
        answers: list[httpx2.Response] = []
        for _ in range(6):  # each request takes a few wrong secrets before it is withdrawn
            page = Authorization(theirs).consent_page(stranger)
            while True:
                answers.append(
                    answer_consent(stranger, page, "not-the-secret-" + str(len(answers)))
                )
                if answers[-1].status_code != 403:
                    break
            if answers[-1].status_code == 410:  # the client itself was forgotten
                break
        assert len(answers) >= 10
        assert all(a.status_code in (403, 410, 429) for a in answers)
        assert answers[-1].status_code == 410  # a never-authorized client has a budget of its own
        gone = stranger.get("/authorize", params=Authorization(theirs).params)
        assert gone.status_code == 400 and "location" not in gone.headers

        for page in (before, Authorization(mine).consent_page(owner)):
            answer = answer_consent(owner, page, SECRET)
            assert answer.status_code == 303, answer.text
            assert "code=" in answer.headers["location"]


def test_authorize_errors_never_send_the_browser_to_an_untrusted_client(server):
    """With open registration, anyone may register https://evil.example as a redirect URI;
    an error of /authorize or a denial must not make docdex's own address redirect there
    (RFC 9700 4.11.2) unless the owner once authorized that client."""
    evil = "https://evil.example/cb"
    with browser_at(server, 3) as browser:
        client = register(browser, evil)
        asked = Authorization(client, state="s9")
        broken = {k: v for k, v in asked.params.items() if k != "response_type"}
        for params in (
            broken,
            {**asked.params, "scope": "not-a-scope"},
            {**asked.params, "resource": "https://evil.example/mcp"},
            {**asked.params, "redirect_uri": "https://evil.example/other"},
            {**asked.params, "client_id": "no-such-client"},
            {"client_id": client["client_id"], "redirect_uri": evil},
        ):
            reply = browser.get("/authorize", params=params)
            assert reply.status_code == 400, (params, reply.status_code)
            assert "location" not in reply.headers and "evil.example" not in reply.text
            assert reply.headers["content-type"].startswith("text/html")
            assert "evil" not in reply.headers["content-security-policy"]
        denied = answer_consent(browser, asked.consent_page(browser), "", decision="deny")
        assert denied.status_code == 200 and "location" not in denied.headers
        assert "refused" in denied.text

        trusted = Authorization(register(browser), state="s10")  # REDIRECT, on loopback
        trusted.tokens(browser, SECRET)
        reply = browser.get("/authorize", params={**trusted.params, "scope": "not-a-scope"})
        assert reply.status_code == 302
        query = parse_qs(urlsplit(reply.headers["location"]).query)
        assert query["error"] == ["invalid_scope"] and query["state"] == ["s10"]
        assert query["iss"] == [server.url]


def test_token_refuses_a_resource_naming_another_server(server):
    with browser_at(server, 4) as browser:
        asked = Authorization(register(browser))
        code = asked.code(browser, SECRET)
        foreign = asked.exchange(browser, code, resource="https://evil.example/mcp")
        assert foreign.status_code == 400 and foreign.json()["error"] == "invalid_target"
        tokens = asked.exchange(browser, code, resource=server.mcp_url)
        assert tokens.status_code == 200, tokens.text
        refreshed = token_request(
            browser,
            asked.client,
            grant_type="refresh_token",
            refresh_token=tokens.json()["refresh_token"],
            resource="https://evil.example/mcp",
        )
        assert refreshed.status_code == 400 and refreshed.json()["error"] == "invalid_target"
        assert mcp_status(server, tokens.json()["access_token"])[0] == 200


def test_a_reused_code_ends_the_tokens_its_first_exchange_gave(server):
    with browser_at(server, 5) as browser:
        asked = Authorization(register(browser))
        code = asked.code(browser, SECRET)
        first = asked.exchange(browser, code)
        assert first.status_code == 200
        tokens = first.json()
        refreshed = token_request(
            browser, asked.client, grant_type="refresh_token", refresh_token=tokens["refresh_token"]
        )
        assert refreshed.status_code == 200  # a descendant of the code's tokens
        assert mcp_status(server, refreshed.json()["access_token"])[0] == 200

        again = asked.exchange(browser, code)  # the code comes back: stolen, or replayed
        assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
        assert mcp_status(server, refreshed.json()["access_token"])[0] == 401
        last = token_request(
            browser,
            asked.client,
            grant_type="refresh_token",
            refresh_token=refreshed.json()["refresh_token"],
        )
        assert last.status_code == 400


def test_a_public_client_revokes_with_its_client_id_only(server):
    with browser_at(server, 6) as browser:
        client = register(browser, token_endpoint_auth_method="none")
        assert "client_secret" not in client
        tokens = Authorization(client).tokens(browser, SECRET)
        assert mcp_status(server, tokens["access_token"])[0] == 200
        revoked = token_request(browser, client, "/revoke", token=tokens["access_token"])
        assert revoked.status_code == 200, revoked.text
        assert mcp_status(server, tokens["access_token"])[0] == 401
        other = register(browser)  # a confidential client still needs its secret
        refused = browser.post(
            "/revoke", data={"client_id": other["client_id"], "token": tokens["refresh_token"]}
        )
        assert refused.status_code == 401


REFUSED_REDIRECTS = {  # each URI, and the words of the reason given for it
    "ws://127.0.0.1:9/cb": "the scheme ws:",
    "ftp://files.example/cb": "the scheme ftp:",
    "about:blank": "the scheme about:",
    "blob:https://app.example/0b1c": "the scheme blob:",
    "view-source:https://app.example/cb": "the scheme view-source:",
    "jar:https://app.example/a.jar!/cb": "the scheme jar:",
    "javascript:alert(1)": "the scheme javascript:",
    "data:text/html,hi": "the scheme data:",
    "file:///tmp/cb": "the scheme file:",
    "wss://app.example/cb": "the scheme wss:",
    "https://app.example/cb#": "fragment",
    "https://app.example/cb#x": "fragment",
    "http://127.0.0.1:9/cb#": "fragment",
    "https://user@app.example/cb": "user name",
    "com.example.app://me@callback": "user name",
    "http://app.example/cb": "plain HTTP",
    "https://a_b.example/cb": "not a DNS name",
}
ACCEPTED_REDIRECTS = (
    "https://app.example/cb",
    "https://app.example:8443/oauth/cb?x=1",
    "http://127.0.0.1:33418/cb",
    "http://localhost:8080/cb",
    "http://[::1]:5000/cb",
    "com.example.app:/oauth2redirect",
    "com.example.app://callback",
    "cursor://anysphere.cursor-mcp/oauth/callback",
)


def test_registration_names_why_a_redirect_uri_is_refused(server):
    with browser_at(server, 7) as browser:
        for uri, reason in REFUSED_REDIRECTS.items():
            reply = browser.post("/register", json={"redirect_uris": [uri]})
            assert reply.status_code == 400, uri
            described = reply.json()["error_description"]
            assert reason in described, (uri, described)
            if reason != "plain HTTP":
                assert "plain HTTP" not in described, (uri, described)


def test_the_consent_page_lets_its_form_reach_every_accepted_redirect_uri(server):
    with browser_at(server, 8) as browser:
        for uri in ACCEPTED_REDIRECTS:
            page = Authorization(register(browser, uri)).consent_page(browser)
            policy = page.headers["content-security-policy"]
            sources = policy.split("form-action")[1].split(";")[0].split()
            assert sources[0] == "'self'" and len(sources) == 2, (uri, policy)
            assert csp_source_matches(sources[1], uri), (uri, sources)


def csp_source_matches(source: str, uri: str) -> bool:
    """Whether `source` is a valid CSP source expression (CSP3's grammar, no wildcard) that
    a browser would match against `uri`."""
    scheme_source = re.fullmatch(r"([a-z][a-z0-9+.\-]*):", source)
    if scheme_source:
        return uri.startswith(scheme_source[1] + ":")
    host_source = re.fullmatch(
        r"([a-z][a-z0-9+.\-]*)://([a-z0-9\-]+(?:\.[a-z0-9\-]+)*)(?::([0-9]+))?", source
    )
    if not host_source:
        return False
    parts = urlsplit(uri)
    port = str(parts.port) if parts.port else ""
    return (parts.scheme, parts.hostname, port) == (
        host_source[1],
        host_source[2],
        host_source[3] or "",
    )


def test_static_token_and_other_resources(server):
    assert not call_tool(server.mcp_url, "list_sources", {}, STATIC).is_error
    assert mcp_status(server, STATIC)[0] == 200
    assert server.get("/api/search", {"q": "install"})[0] == 200  # the static token
    assert http(f"{server.url}/api/search?q=install").status == 401
    assert "index_version" not in http(f"{server.url}/health").json()  # details need a token


def browser_at(server: ServeProcess, n: int) -> httpx2.Client:
    """A browser whose requests come, as a proxy on loopback says, from 198.51.100.N: each test
    its own address, so that what one registers counts against no other's budget."""
    return httpx2.Client(base_url=server.url, headers={"X-Forwarded-For": f"198.51.100.{n}"})


def refresh(server: ServeProcess, client: OAuthClientInformationFull | None, token: str):
    return post_form(server, "/token", client, grant_type="refresh_token", refresh_token=token)


def post_form(server: ServeProcess, path: str, client, **fields: str):
    assert client is not None
    form = {"client_id": client.client_id, "client_secret": client.client_secret, **fields}
    body = urlencode(form).encode()
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    return http(server.url + path, headers, method="POST", data=body)
