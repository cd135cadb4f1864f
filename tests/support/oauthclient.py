"""The client side of an OAuth flow for the tests: the MCP SDK's OAuthClientProvider with
tokens kept in memory, an MCP session through it, and the redirect back from the consent
page that hands the code to the client; and one authorization by hand over HTTP
(`Authorization`), for the tests that look at each step."""

from __future__ import annotations

import asyncio
import re
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider, PKCEParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

REDIRECT = "http://127.0.0.1:9/callback"  # never opened: the test reads the Location itself


class Memory:
    """The client's token storage (the SDK's TokenStorage protocol), in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class Redirected:
    """What the consent page's redirect gave the client: call `received` with the page's
    303 answer; the SDK's `callback` then reads the code."""

    def __init__(self) -> None:
        self.result: AuthorizationCodeResult | None = None

    def received(self, answer: httpx2.Response) -> None:
        assert answer.status_code == 303, answer.text
        query = parse_qs(urlsplit(answer.headers["location"]).query)
        self.result = AuthorizationCodeResult(
            code=query["code"][0], state=query["state"][0], iss=query["iss"][0]
        )

    async def callback(self) -> AuthorizationCodeResult:
        assert self.result is not None
        return self.result


def client_metadata(name: str) -> OAuthClientMetadata:
    return OAuthClientMetadata(
        client_name=name,
        redirect_uris=[REDIRECT],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
    )


def form_field(page: str, name: str) -> str:
    """The value of a hidden field of the consent page's form."""
    return re.search(rf'name="{name}" value="([^"]+)"', page)[1]  # type: ignore[index]


def run_session(auth: OAuthClientProvider, calls: list[tuple[str, dict]]) -> list:
    """Each tool call's result, in one MCP session authorised by `auth`."""
    url = auth.context.server_url

    async def run() -> list:
        transport = httpx2.AsyncClient(auth=auth, timeout=60)
        async with transport, Client(streamable_http_client(url, http_client=transport)) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return asyncio.run(run())


def authorization_request(browser: httpx2.Client, **extra: str) -> dict[str, str]:
    """The /authorize parameters of a client `browser` registers on the spot (PKCE S256)."""
    return Authorization(register(browser), **extra).params


# --- one authorization by hand, over HTTP: register, /authorize, consent, /token ------------


def register(browser: httpx2.Client, *redirect_uris: str, **metadata: object) -> dict:
    """The registration of a client (201), by its redirect URIs (REDIRECT when none given)."""
    body = {"redirect_uris": list(redirect_uris) or [REDIRECT], **metadata}
    reply = browser.post("/register", json=body)
    assert reply.status_code == 201, reply.text
    return reply.json()


class Authorization:
    """One authorization request of a registered client: its PKCE pair and its parameters."""

    def __init__(self, client: dict, **extra: str) -> None:
        self.client = client
        self.pkce = PKCEParameters.generate()
        self.params = {
            "response_type": "code",
            "client_id": client["client_id"],
            "redirect_uri": client["redirect_uris"][0],
            "code_challenge": self.pkce.code_challenge,
            "code_challenge_method": "S256",
            "state": "st-" + self.pkce.code_challenge[:8],
            **extra,
        }

    def consent_page(self, browser: httpx2.Client) -> httpx2.Response:
        """The consent page /authorize sends the browser to."""
        asked = browser.get("/authorize", params=self.params)
        assert asked.status_code == 302, asked.text
        page = browser.get(asked.headers["location"])
        assert page.status_code == 200, page.text
        return page

    def code(self, browser: httpx2.Client, secret: str) -> str:
        """The code the owner's `secret` on the consent page sends back to the client."""
        answer = answer_consent(browser, self.consent_page(browser), secret)
        assert answer.status_code == 303, answer.text
        return parse_qs(urlsplit(answer.headers["location"]).query)["code"][0]

    def exchange(self, browser: httpx2.Client, code: str, **extra: str) -> httpx2.Response:
        """/token's answer for `code`, with this request's PKCE verifier."""
        return token_request(
            browser,
            self.client,
            grant_type="authorization_code",
            code=code,
            redirect_uri=self.params["redirect_uri"],
            code_verifier=self.pkce.code_verifier,
            **extra,
        )

    def tokens(self, browser: httpx2.Client, secret: str) -> dict:
        """The tokens of a whole authorization: consent with `secret`, then /token."""
        reply = self.exchange(browser, self.code(browser, secret))
        assert reply.status_code == 200, reply.text
        return reply.json()


def answer_consent(
    browser: httpx2.Client, page: httpx2.Response, secret: str, decision: str = "allow"
) -> httpx2.Response:
    form = {"request": form_field(page.text, "request"), "secret": secret, "decision": decision}
    return browser.post("/oauth/consent", data=form)


def token_request(browser: httpx2.Client, client: dict, path: str = "/token", **fields: str):
    """A form posted to /token or /revoke as `client` (its secret only if it has one)."""
    form = {"client_id": client["client_id"], **fields}
    if client.get("client_secret"):
        form["client_secret"] = client["client_secret"]
    return browser.post(path, data=form)
