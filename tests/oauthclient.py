"""The client side of an OAuth flow for the tests: the MCP SDK's OAuthClientProvider with
tokens kept in memory, an MCP session through it, and the redirect back from the consent
page that hands the code to the client."""

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
    client = browser.post("/register", json={"redirect_uris": [REDIRECT]}).json()
    return {
        "response_type": "code",
        "client_id": client["client_id"],
        "redirect_uri": REDIRECT,
        "code_challenge": PKCEParameters.generate().code_challenge,
        "code_challenge_method": "S256",
        **extra,
    }
