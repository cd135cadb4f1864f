"""The OAuth paths, named without the MCP SDK (routes.py builds their handlers from it; the
SDK's own constants for the authorization server's endpoints are the same, which
tests/server/http/test_oauth_store.py checks)."""

from __future__ import annotations

PROTECTED_RESOURCE = "/.well-known/oauth-protected-resource"
PROTECTED_RESOURCE_PATHS = (PROTECTED_RESOURCE + "/mcp", PROTECTED_RESOURCE)
AUTHORIZATION_SERVER = "/.well-known/oauth-authorization-server"
AUTHORIZE, TOKEN, REGISTER, REVOKE = "/authorize", "/token", "/register", "/revoke"
CONSENT_PATH = "/oauth/consent"
AS_PATHS = (AUTHORIZATION_SERVER, AUTHORIZE, TOKEN, REGISTER, REVOKE, CONSENT_PATH)


def resource_metadata_url(public_url: str) -> str:
    """Where a client reads this resource's metadata: the path form RFC 9728 gives the
    resource URI `PUBLIC_URL/mcp` (the root form answers the same)."""
    return public_url + PROTECTED_RESOURCE_PATHS[0]
