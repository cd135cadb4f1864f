"""/token and /revoke, where the SDK's handlers fall short of the specifications:

/token    the SDK's handler, once every `resource` the request names is this server's
          resource URI; another is `invalid_target` (RFC 8707 2.2), before a code is spent
/revoke   RFC 7009: the client authenticates as at /token (a public client, whose
          token_endpoint_auth_method is none, by its client_id alone: the SDK's handler
          wanted a client_secret field even then), then its token and the one issued
          with it end; 200 whether or not the token was live
"""

from __future__ import annotations

from dataclasses import dataclass

from mcp.server.auth.handlers.token import TokenHandler
from mcp.server.auth.middleware.client_auth import AuthenticationError, ClientAuthenticator
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from docdex.server.http.oauth.settings import same_resource

from .provider import DocdexProvider

NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


@dataclass
class TokenEndpoint:
    handler: TokenHandler
    resource: str  # this server's resource URI

    async def handle(self, request: Request) -> Response:
        form = await request.form()  # Starlette keeps it for the SDK's handler
        for named in form.getlist("resource"):
            if not isinstance(named, str) or not same_resource(named, self.resource):
                shown = named[:80] if isinstance(named, str) else "a file"
                description = f"this server issues tokens for {self.resource} only, not {shown}"
                return oauth_error(400, "invalid_target", description)
        return await self.handler.handle(request)


@dataclass
class RevocationEndpoint:
    provider: DocdexProvider
    authenticator: ClientAuthenticator

    async def handle(self, request: Request) -> Response:
        try:
            client = await self.authenticator.authenticate_request(request)
        except AuthenticationError as exc:
            return oauth_error(401, "invalid_client", exc.message)
        token = (await request.form()).get("token")
        if not isinstance(token, str) or not token:
            return oauth_error(400, "invalid_request", "the token to revoke is missing")
        await self.provider.revoke_for(client.client_id, token)
        return Response(status_code=200, headers=NO_STORE)


def oauth_error(
    status: int, error: str, description: str, headers: dict[str, str] | None = None
) -> Response:
    """An OAuth error answer (RFC 6749 5.2), never cached."""
    body = {"error": error, "error_description": description}
    return JSONResponse(body, status_code=status, headers={**NO_STORE, **(headers or {})})
