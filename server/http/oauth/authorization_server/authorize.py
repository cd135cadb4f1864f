"""/authorize: the SDK's authorization request, with errors that never make docdex an open
redirector (RFC 9700 4.11.2).

The SDK's handler sends an error to the redirect URI as soon as it can find the client and
one of its URIs, even in a request it could not parse. With open registration anyone can
register any https URI, so that would let a stranger's link send a browser from docdex's
own address to the stranger's site. Here an error is shown on a page of docdex's own
(screens.authorize_error) unless the client and its redirect URI are both valid AND the owner
once authorized that client (provider.trusted); only then does it go to the redirect URI,
with `state` and `iss` (RFC 9207).
"""

from __future__ import annotations

from dataclasses import dataclass

from mcp.server.auth.errors import stringify_pydantic_error
from mcp.server.auth.handlers.authorize import AuthorizationRequest
from mcp.server.auth.provider import (
    AuthorizationErrorCode,
    AuthorizationParams,
    AuthorizeError,
    construct_redirect_uri,
)
from mcp.shared.auth import (
    InvalidRedirectUriError,
    InvalidScopeError,
    OAuthClientInformationFull,
)
from pydantic import AnyUrl, TypeAdapter, ValidationError
from starlette.datastructures import FormData, QueryParams
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from . import screens
from .provider import DocdexProvider
from .throttle import requester

_URI = TypeAdapter(AnyUrl)
NO_STORE = {"Cache-Control": "no-store"}


@dataclass
class AuthorizationEndpoint:
    provider: DocdexProvider

    async def handle(self, request: Request) -> Response:
        params = request.query_params if request.method == "GET" else await request.form()
        client = await self._client(params)
        redirect_uri = _redirect_uri(client, params) if client is not None else None
        if client is None or redirect_uri is None:
            return screens.authorize_error("invalid_request")
        trusted = self.provider.trusted(client.client_id)

        def refuse(error: AuthorizeError) -> Response:
            if not trusted:
                return screens.authorize_error(error.error)
            target = construct_redirect_uri(
                str(redirect_uri),
                error=error.error,
                error_description=error.error_description,
                state=_text(params, "state"),
                iss=self.provider.settings.issuer,
            )
            return RedirectResponse(target, status_code=302, headers=NO_STORE)

        try:
            auth = _parsed(params)
            scopes = client.validate_scope(auth.scope)
        except AuthorizeError as error:
            return refuse(error)
        except InvalidScopeError as error:
            return refuse(AuthorizeError("invalid_scope", error.message))
        asked = AuthorizationParams(
            state=auth.state,
            scopes=scopes,
            code_challenge=auth.code_challenge,
            redirect_uri=redirect_uri,
            redirect_uri_provided_explicitly=auth.redirect_uri is not None,
            resource=auth.resource,
        )
        try:
            consent = await self.provider.authorize(client, asked, requester(request))
        except AuthorizeError as error:
            return refuse(error)
        return RedirectResponse(consent, status_code=302, headers=NO_STORE)

    async def _client(self, params: QueryParams | FormData) -> OAuthClientInformationFull | None:
        client_id = _text(params, "client_id")
        return await self.provider.get_client(client_id) if client_id else None


def _redirect_uri(
    client: OAuthClientInformationFull, params: QueryParams | FormData
) -> AnyUrl | None:
    """The redirect URI the request names, if the client registered it (or the client's one
    URI when the request names none); None when neither holds."""
    try:
        given = (
            _URI.validate_python(params.get("redirect_uri")) if "redirect_uri" in params else None
        )
        return client.validate_redirect_uri(given)
    except (ValidationError, InvalidRedirectUriError):
        return None


def _parsed(params: QueryParams | FormData) -> AuthorizationRequest:
    try:
        return AuthorizationRequest.model_validate(dict(params))
    except ValidationError as invalid:
        wrong_type = any(
            e["loc"] == ("response_type",) and e["type"] == "literal_error"
            for e in invalid.errors()
        )
        error: AuthorizationErrorCode = (
            "unsupported_response_type" if wrong_type else "invalid_request"
        )
        raise AuthorizeError(error, stringify_pydantic_error(invalid)) from None


def _text(params: QueryParams | FormData, key: str) -> str | None:
    value = params.get(key)
    return value if isinstance(value, str) else None
