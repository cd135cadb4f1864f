"""Client authentication at /token and /revoke against the store's hashed secrets.

The SDK's `ClientAuthenticator` compares the secret a client sends with the one its record
holds in clear; the store keeps only a SHA-256 of it, so this one compares hashes instead
(constant-time). The methods are the SDK's: client_secret_post, client_secret_basic, and
none for a public client (which PKCE protects).
"""

from __future__ import annotations

import base64
import binascii
import hmac
from urllib.parse import unquote

from mcp.server.auth.middleware.client_auth import AuthenticationError, ClientAuthenticator
from mcp.shared.auth import OAuthClientInformationFull
from starlette.requests import Request

from .provider import DocdexProvider
from .token_store import token_hash


class HashedSecretAuthenticator(ClientAuthenticator):
    def __init__(self, provider: DocdexProvider) -> None:
        super().__init__(provider)
        self.docdex = provider

    async def authenticate_request(self, request: Request) -> OAuthClientInformationFull:
        form = await request.form()
        client_id = form.get("client_id")
        if not isinstance(client_id, str) or not client_id:
            raise AuthenticationError("Missing client_id")
        record = self.docdex.store.client(client_id)
        client = await self.docdex.get_client(client_id)
        if record is None or client is None:
            raise AuthenticationError("Invalid client_id")
        method = client.token_endpoint_auth_method or "client_secret_post"
        if method == "none" and not record.secret_sha256:
            return client
        if method not in ("client_secret_post", "client_secret_basic") or not record.secret_sha256:
            raise AuthenticationError(f"Unsupported auth method: {method}")
        sent = _basic_secret(request, client_id) if method == "client_secret_basic" else None
        if method == "client_secret_post":
            value = form.get("client_secret")
            sent = value if isinstance(value, str) else None
        if not sent:
            raise AuthenticationError("Client secret is required")
        if not hmac.compare_digest(token_hash(sent).encode(), record.secret_sha256.encode()):
            raise AuthenticationError("Invalid client_secret")
        return client


def _basic_secret(request: Request, client_id: str) -> str:
    header = request.headers.get("Authorization", "")
    if not header.startswith("Basic "):
        raise AuthenticationError("Missing or invalid Basic authentication in Authorization header")
    try:
        given_id, sep, secret = base64.b64decode(header[6:]).decode("utf-8").partition(":")
    except (ValueError, UnicodeDecodeError, binascii.Error):
        raise AuthenticationError("Invalid Basic authentication header") from None
    if not sep or unquote(given_id) != client_id:
        raise AuthenticationError("Client ID mismatch in Basic auth")
    return unquote(secret)
