"""A token limited to one source sees that source only, everywhere: a real `docdex serve
--auth oauth` over a real index of two sources, "alpha" and "bravo", and two tokens limited
to alpha, a named static token (`docdex auth token NAME --source alpha`) and an OAuth grant
the owner limited to alpha on the consent page. Every tool, resource, the instructions and
every HTTP route answer each of them without a name, path, title or word of bravo; an id or a
source of bravo is refused exactly as one of a source never indexed. A server with only a
named token (no DOCDEX_TOKEN, no OAuth) requires it and limits it the same way."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from urllib.parse import urlencode

import httpx2
import msgspec
import pytest
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import OAuthToken

from docdex.cli import main as docdex_main
from docdex.index_format.config import Config, SourceConfig, save_config
from docdex.index_format.layout import DataDir
from docdex.index_format.queue import pending_requests
from docdex.indexer.run.pipeline import index_sources
from docdex.server.http.oauth.authorization_server.token_store import OAuthStore
from docdex.serverproc import ServeProcess, mcp_client

from fixtures import http, pushed_workspace, wait_for
from oauthclient import (
    Memory,
    Redirected,
    authorization_request,
    client_metadata,
    form_field,
    run_session,
)

SECRET = "owner-secret-for-the-consent-page"
UNLIMITED = "every-source-static-token-0123456789"
ALPHA = {
    "guide/start.md": "# Getting started\n\nThe lighthouse keeper logs the tide at dawn.\n",
    "faq.md": "# FAQ\n\n## When does the harbour open?\n\nThe lighthouse harbour opens at six.\n",
}
BRAVO_PAGE = "hidden-zebrafinch/ledger.md"
BRAVO = {BRAVO_PAGE: "# Zebrafinch ledger\n\nThe zebrafinch ledger keeps the quokkavault code.\n"}
# what no answer to an alpha-only caller may hold: bravo's name, path, title, words, description
BRAVO_MARKS = ("bravo", "zebrafinch", "quokkavault", "treasury")
NOSUCH = "nosuch"  # a source never indexed: what bravo must look like


def leaks(text: str) -> list[str]:
    return [mark for mark in BRAVO_MARKS if mark in text.lower()]


def as_nosuch(text: str) -> str:
    """An answer about bravo, as it would read about a source never indexed."""
    return text.replace("bravo", NOSUCH)


@pytest.fixture(scope="module")
def data(tmp_path_factory, embedder) -> DataDir:
    root = tmp_path_factory.mktemp("limits")
    data = DataDir(root / "data")
    sources = [
        SourceConfig(
            name="alpha",
            location=str(pushed_workspace(root / "alpha", ALPHA).bare),
            description="Lighthouse handbook",
        ),
        SourceConfig(
            name="bravo",
            location=str(pushed_workspace(root / "bravo", BRAVO).bare),
            description="Treasury notes",
        ),
    ]
    config = Config(sources=sources)
    data.ensure()
    save_config(data, config)
    assert index_sources(data, config, embedder=embedder).published
    return data


@pytest.fixture(scope="module")
def named_token(data) -> str:
    """A named static token that reads alpha only (and may reindex it)."""
    return OAuthStore(data.state).add_static(
        "alpha-reader", ["docdex:read", "docdex:reindex"], ["alpha"]
    )


@pytest.fixture(scope="module")
def server(data, named_token, tmp_path_factory):
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    env = {"DOCDEX_ADMIN_SECRET": SECRET}
    args = ("--auth", "oauth")
    with ServeProcess(data.root, log, token=UNLIMITED, extra_args=args, env=env) as server:
        server.wait_serving()
        yield server


# --- what a caller sees, over MCP and HTTP ----------------------------------------------------


class McpView(msgspec.Struct):
    instructions: str
    answers: dict[str, str]  # a call's name -> its answer as JSON text
    errors: dict[str, str]  # a call's name -> its error text


def mcp_view(server: ServeProcess, token: str, bravo_ids: list[str], reindex: bool) -> McpView:
    """Every tool, the resources and the instructions, as `token` gets them; `bravo_ids`:
    real ids of bravo's page and chunk, each asked for beside an id of a source never
    indexed."""
    calls = {
        "search lighthouse": ("search_docs", {"query": "lighthouse"}),
        "search zebrafinch": ("search_docs", {"query": "zebrafinch quokkavault ledger"}),
        "search ref": ("search_docs", {"query": "ledger", "ref": "main"}),
        "query_docs": ("query_docs", {}),
        "query ledger": ("query_docs", {"title_contains": "ledger"}),
        "list_sources": ("list_sources", {}),
        "get alpha": ("get_document", {"doc_id": "alpha:faq.md"}),
    }
    refused = {
        f"search source {name}": ("search_docs", {"query": "ledger", "source": name})
        for name in ("bravo", NOSUCH)
    }
    refused |= {
        f"query source {name}": ("query_docs", {"source": name}) for name in ("bravo", NOSUCH)
    }
    for i, doc_id in enumerate(bravo_ids):
        refused[f"get bravo {i}"] = ("get_document", {"doc_id": doc_id})
        refused[f"get nosuch {i}"] = ("get_document", {"doc_id": as_nosuch(doc_id)})
        refused[f"get bravo ref {i}"] = ("get_document", {"doc_id": doc_id, "ref": "main"})
        refused[f"get nosuch ref {i}"] = (
            "get_document",
            {"doc_id": as_nosuch(doc_id), "ref": "main"},
        )
    if reindex:
        calls["reindex"] = ("reindex", {})
        refused |= {f"reindex {name}": ("reindex", {"source": name}) for name in ("bravo", NOSUCH)}

    async def run() -> McpView:
        async with mcp_client(server.mcp_url, token) as client:
            answers, errors = {}, {}
            for name, (tool, arguments) in {**calls, **refused}.items():
                result = await client.call_tool(tool, arguments)
                if result.is_error:
                    errors[name] = result.content[0].text  # type: ignore[union-attr]
                else:  # the text content is markdown for people; the JSON is for programs
                    answers[name] = json.dumps(result.structured_content)
            answers["resources"] = (await client.list_resources()).model_dump_json()
            answers["templates"] = (await client.list_resource_templates()).model_dump_json()
            read = await client.read_resource("docdex://alpha/faq.md")
            answers["read alpha"] = read.model_dump_json()
            for name in ("bravo", NOSUCH):
                try:
                    await client.read_resource(f"docdex://{name}/{BRAVO_PAGE}")
                except Exception as exc:  # the SDK raises MCPError with the server's message
                    errors[f"read {name}"] = str(exc)
            return McpView(client.instructions or "", answers, errors)

    return asyncio.run(run())


def get(server: ServeProcess, path: str, token: str | None, **params: str):
    query = ("?" + urlencode(params)) if params else ""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return http(f"{server.url}{path}{query}", headers)


def bravo_ids(server: ServeProcess) -> list[str]:
    """Real ids of bravo's page and of one of its chunks, found with the unlimited token."""
    hits = get(server, "/api/search", UNLIMITED, q="zebrafinch ledger", source="bravo").json()
    chunk = hits["results"][0]["chunk_id"]
    assert chunk.startswith("bravo:") and "#" in chunk
    return [chunk.partition("#")[0], chunk]


def check_alpha_only(server: ServeProcess, token: str, reindex: bool = False) -> None:
    """Everything `token` can ask holds alpha and nothing of bravo; bravo's ids and name are
    refused as a source never indexed."""
    ids = bravo_ids(server)
    view = mcp_view(server, token, ids, reindex)
    for name, text in view.answers.items():
        assert not leaks(text), (name, text)
    assert not leaks(view.instructions) and "alpha: Lighthouse handbook" in view.instructions
    lighthouse = json.loads(view.answers["search lighthouse"])["results"]
    assert lighthouse and {hit["source"] for hit in lighthouse} == {"alpha"}
    unique = json.loads(view.answers["search zebrafinch"])["results"]
    assert all(hit["source"] == "alpha" for hit in unique)  # whatever alpha holds, if anything
    assert {p["source"] for p in json.loads(view.answers["query_docs"])["documents"]} == {"alpha"}
    assert json.loads(view.answers["query ledger"])["total"] == 0
    listed = json.loads(view.answers["list_sources"])["sources"]
    assert [s["name"] for s in listed] == ["alpha"]
    uris = [r["uri"] for r in json.loads(view.answers["resources"])["resources"]]
    assert uris and all(uri.startswith("docdex://alpha/") for uri in uris)
    assert "lighthouse" in view.answers["read alpha"]
    # bravo as a source never indexed: the same refusal, word for word
    pairs = [
        ("search source bravo", "search source nosuch"),
        ("query source bravo", "query source nosuch"),
        ("read bravo", "read nosuch"),
        *((f"get bravo {i}", f"get nosuch {i}") for i in range(len(ids))),
        *((f"get bravo ref {i}", f"get nosuch ref {i}") for i in range(len(ids))),
        *([("reindex bravo", "reindex nosuch")] if reindex else []),
    ]
    for bravo, nosuch in pairs:
        assert as_nosuch(view.errors[bravo]) == view.errors[nosuch], (bravo, view.errors)
        assert "alpha" in view.errors[nosuch] or "no document" in view.errors[nosuch]
    check_http(server, token, ids)


def check_http(server: ServeProcess, token: str, ids: list[str]) -> None:
    answers = {
        "search": get(server, "/api/search", token, q="zebrafinch quokkavault"),
        "search all": get(server, "/api/search", token, q="lighthouse"),
        "sources": get(server, "/api/sources", token),
        "page": get(server, "/api/page", token, doc_id="alpha:faq.md"),
        "health": get(server, "/health", token),
        "clients": get(server, "/api/clients", token),
        "clients.txt": get(server, "/clients.txt", token),
        "shell": get(server, "/", token),
    }
    for name, reply in answers.items():
        assert reply.status == 200, (name, reply.body)
        assert not leaks(reply.body.decode()), (name, reply.body)
    found = answers["search all"].json()["results"]
    assert found and {hit["source"] for hit in found} == {"alpha"}
    assert [s["name"] for s in answers["sources"].json()["sources"]] == ["alpha"]
    health = answers["health"].json()
    assert list(health["sources"]) == ["alpha"] and health["total_sources"] == 1
    for path, status, params in [
        ("/api/search", 400, [{"q": "ledger", "source": "bravo"}]),
        ("/api/page", 404, [{"doc_id": doc_id} for doc_id in ids]),
    ]:
        for bravo in params:
            nosuch = {key: as_nosuch(value) for key, value in bravo.items()}
            mine, never = get(server, path, token, **bravo), get(server, path, token, **nosuch)
            assert mine.status == never.status == status, (path, mine.body)
            assert as_nosuch(mine.body.decode()) == never.body.decode()


# --- the tests --------------------------------------------------------------------------------


def test_the_unlimited_token_sees_both_sources(server):
    """What the limited tokens must not see is there."""
    names = [s["name"] for s in get(server, "/api/sources", UNLIMITED).json()["sources"]]
    assert names == ["alpha", "bravo"]
    assert bravo_ids(server)[0] == f"bravo:{BRAVO_PAGE}"
    assert leaks(json.dumps(get(server, "/health", UNLIMITED).json()))


@pytest.fixture(scope="module")
def granted(server) -> tuple[Owner, OAuthToken]:
    """A URL-only client connected with the SDK's OAuth client; the owner ticked alpha."""
    owner = Owner(server, ["alpha"])
    storage = Memory()
    auth = OAuthClientProvider(server.mcp_url, CLIENT, storage, owner.redirect, owner.callback)
    (listed,) = run_session(auth, [("list_sources", {})])
    assert [s["name"] for s in listed.structured_content["sources"]] == ["alpha"]
    assert storage.tokens is not None
    return owner, storage.tokens


def test_a_named_token_limited_to_alpha_sees_alpha_only(server, named_token, data):
    check_alpha_only(server, named_token, reindex=True)
    assert {r.source for r in pending_requests(data) if r.origin == "reindex"} == {"alpha"}


def test_an_oauth_grant_limited_on_the_consent_page_sees_alpha_only(server, granted):
    owner, tokens = granted
    assert not leaks(owner.first_page)  # the page before the secret names no source
    assert "bravo" in owner.sources_page  # the owner, signed in, chooses among all
    check_alpha_only(server, tokens.access_token)


def test_no_source_ticked_is_every_source(server):
    owner, storage = Owner(server, []), Memory()
    auth = OAuthClientProvider(server.mcp_url, CLIENT, storage, owner.redirect, owner.callback)
    (listed,) = run_session(auth, [("list_sources", {})])
    assert [s["name"] for s in listed.structured_content["sources"]] == ["alpha", "bravo"]


def test_the_sources_form_needs_the_secret_first(server):
    with httpx2.Client(base_url=server.url) as browser:
        asked = authorization_request(browser)
        page = browser.get(browser.get("/authorize", params=asked).headers["location"])
        request_id = form_field(page.text, "request")
        forged = {"request": request_id, "owner": "guessed", "source": "alpha", "decision": "allow"}
        refused = browser.post("/oauth/consent", data=forged)
        assert refused.status_code == 403 and "Sign in again" in refused.text
        assert not leaks(refused.text)
        wrong = browser.post(
            "/oauth/consent", data={"request": request_id, "secret": "guess", "decision": "allow"}
        )
        assert wrong.status_code == 403 and not leaks(wrong.text)


def test_auth_clients_shows_each_clients_sources(server, named_token, granted, capsys):
    assert docdex_main(["--data", str(server.data), "auth", "clients", "--json"], environ={}) == 0
    listed = {c["client_id"]: c for c in json.loads(capsys.readouterr().out)}
    assert listed["alpha-reader"]["kind"] == "token"
    assert listed["alpha-reader"]["sources"] == ["alpha"]
    assert any(c["kind"] == "oauth" and c["sources"] == ["alpha"] for c in listed.values())
    assert docdex_main(["--data", str(server.data), "auth", "clients"], environ={}) == 0
    assert "alpha-reader (named token)" in capsys.readouterr().out


def test_the_url_only_entry_is_shown_beside_the_header_entries(server):
    body = get(server, "/api/clients", UNLIMITED).json()
    assert body["url_only"]["url"] == server.mcp_url  # the public URL + /mcp
    assert body["configs"]  # the header and stdio entries stay
    text = get(server, "/clients.txt", None).body.decode()
    assert "(OAuth):\n" in text and server.mcp_url in text


def test_a_server_with_only_a_named_token_requires_it(data, tmp_path):
    """No DOCDEX_TOKEN, no OAuth: the named token alone makes the server require tokens."""
    token = OAuthStore(data.state).add_static("second-reader", ["docdex:read"], ["alpha"])
    with ServeProcess(data.root, tmp_path / "serve.log") as server:
        server.wait_ready()
        wait_for(lambda: get(server, "/api/sources", token).status == 200, 120, "serving")
        assert get(server, "/api/sources", None).status == 401
        assert get(server, "/api/sources", UNLIMITED).status == 401
        assert "index_version" not in get(server, "/health", None).json()
        check_http(server, token, [f"bravo:{BRAVO_PAGE}", f"bravo:{BRAVO_PAGE}#chunk0"])
        assert docdex_auth(data, "revoke", "second-reader") == 0
        assert get(server, "/api/sources", token).status == 401


def test_docdex_auth_token_prints_a_token_that_works(data, server, capsys):
    assert docdex_auth(data, "token", "cli-reader", "--source", "alpha") == 0
    token = capsys.readouterr().out.strip()
    assert token.startswith("ddx_st_") and token not in (data.state / "oauth.json").read_text()
    assert [s["name"] for s in get(server, "/api/sources", token).json()["sources"]] == ["alpha"]
    assert docdex_auth(data, "token", "other", "--source", NOSUCH) == 1  # no such source configured
    assert docdex_auth(data, "token", "cli-reader") == 1  # the name is taken


def docdex_auth(data: DataDir, *args: str) -> int:
    return docdex_main(["--data", str(data.root), "auth", *args], environ={})


# --- reindex needs its scope, however the call is written ------------------------------------

# One reindex call, written as JSON allows: what is decoded (the SDK decodes it) is `reindex`.
REINDEX_CALLS = {
    "plain": '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"reindex"}}',
    "an escaped letter": (
        r'{"jsonrpc":"2.0","id":2,"method":"tools/call",'
        r'"params":{"name":"\u0072eindex","arguments":{}}}'
    ),
    "mixed escapes": (
        r'{"jsonrpc":"2.0","id":3,"method":"tools\/call",'
        r'"params":{"n\u0061me":"r\u0065ind\u0065\u0078","arguments":{"source":""}}}'
    ),
    "every letter escaped, upper-case hex": (
        r'{"jsonrpc":"2.0","id":4,"method":"tools\u002Fcall",'
        r'"params":{"name":"\u0072\u0065\u0069\u006E\u0064\u0065\u0078"}}'
    ),
    "named twice, the last name counts": (
        '{"jsonrpc":"2.0","id":5,"method":"tools/call",'
        '"params":{"name":"search_docs","name":"reindex","arguments":{"query":"x"}}}'
    ),
}


def post_mcp(server: ServeProcess, token: str, body: str) -> tuple[int, dict[str, str], bytes]:
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
        "Authorization": f"Bearer {token}",
    }
    reply = http(server.mcp_url, headers, method="POST", data=body.encode())
    return reply.status, {k.lower(): v for k, v in reply.headers.items()}, reply.body


@pytest.fixture(scope="module")
def read_only_token(data) -> str:
    """`docdex auth token reader --no-reindex`: reads every source, may not reindex."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert docdex_auth(data, "token", "reader", "--no-reindex") == 0
    return out.getvalue().strip()


def test_a_reindex_call_without_its_scope_is_refused_however_it_is_written(
    server, read_only_token, granted, data
):
    """Neither a named token made with --no-reindex nor an OAuth grant of docdex:read alone
    can call reindex: each spelling gets the 403 step-up challenge, a batch is no request."""
    tokens = {"named --no-reindex": read_only_token, "OAuth docdex:read": granted[1].access_token}
    filed = {r.id for r in pending_requests(data)}
    for who, token in tokens.items():
        search = '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"list_sources"}}'
        assert post_mcp(server, token, search)[0] == 200, who  # the token itself works
        for how, body in REINDEX_CALLS.items():
            status, headers, reply = post_mcp(server, token, body)
            assert status == 403, (who, how, status, reply[:300])
            challenge = headers["www-authenticate"]
            assert 'error="insufficient_scope"' in challenge, (who, how, challenge)
            assert 'scope="docdex:read docdex:reindex"' in challenge  # what to step up to
            assert "resource_metadata=" in challenge
        for how in ("plain", "mixed escapes"):
            status, _headers, reply = post_mcp(server, token, f"[{REINDEX_CALLS[how]}]")
            assert status == 400 and json.loads(reply)["error"]["code"] == -32600, (who, reply)
    assert {r.id for r in pending_requests(data)} == filed  # nothing was asked of the indexer


# --- an OAuth client, and the owner at the consent page ---------------------------------------

CLIENT = client_metadata("limited agent")


class Owner(Redirected):
    """The person at the browser: signs in with the admin secret, then ticks `sources`."""

    def __init__(self, server: ServeProcess, sources: list[str]):
        super().__init__()
        self.server, self.sources = server, sources
        self.first_page = self.sources_page = ""

    async def redirect(self, authorization_url: str) -> None:
        async with httpx2.AsyncClient(base_url=self.server.url) as browser:
            asked = await browser.get(authorization_url)
            page = await browser.get(asked.headers["location"])
            self.first_page = page.text
            request = form_field(page.text, "request")
            form = {"request": request, "secret": SECRET, "decision": "allow"}
            chooser = await browser.post("/oauth/consent", data=form)
            assert chooser.status_code == 200, chooser.text
            self.sources_page = chooser.text
            chosen = [("source", name) for name in self.sources]
            fields = [("request", form["request"]), ("owner", form_field(chooser.text, "owner"))]
            body = urlencode([*fields, *chosen, ("decision", "allow")])
            headers = {"Content-Type": "application/x-www-form-urlencoded"}
            answer = await browser.post("/oauth/consent", content=body, headers=headers)
        self.received(answer)
