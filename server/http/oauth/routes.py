"""The OAuth routes, from the MCP SDK's handlers.

    /.well-known/oauth-protected-resource[/mcp]   RFC 9728: this resource, its authorization
                                                  server and scopes (every OAuth or JWT mode)
    /.well-known/oauth-authorization-server       RFC 8414 metadata        (--auth oauth)
    /authorize  /token  /register  /revoke        the SDK's handlers over DocdexProvider
    /oauth/consent                                the owner's page (consent.py)

The protected resource's metadata is every mode's; the rest is docdex's own authorization
server (authorization_server/, whose modules the names here are). The SDK's
`create_auth_routes` is the model; it is rebuilt here to pass the authenticator that checks
hashed client secrets (authenticator.py) to /token and /revoke, and to put docdex's own
handling where the SDK's falls short: /authorize's errors (authorize.py), /register's
bounds (registration.py), /token's resource check and /revoke (token_endpoints.py). This
module imports the SDK: setup.py builds these routes at their first request.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from mcp.server.auth.handlers.metadata import MetadataHandler, ProtectedResourceMetadataHandler
from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.handlers.token import TokenHandler
from mcp.server.auth.routes import build_metadata
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.server.transport_security import RequestBodyLimitMiddleware
from mcp.shared.auth import ProtectedResourceMetadata
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from pydantic import AnyHttpUrl, ConfigDict, TypeAdapter
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route, request_response
from starlette.types import ASGIApp

from .authorization_server.authenticator import HashedSecretAuthenticator
from .authorization_server.authorize import AuthorizationEndpoint
from .authorization_server.consent import Consent
from .authorization_server.provider import DocdexProvider
from .authorization_server.registration import MAX_REGISTRATION_BYTES, RegistrationEndpoint
from .authorization_server.token_endpoints import RevocationEndpoint, TokenEndpoint
from .paths import (
    AUTHORIZATION_SERVER,
    AUTHORIZE,
    CONSENT_PATH,
    PROTECTED_RESOURCE_PATHS,
    REGISTER,
    REVOKE,
    TOKEN,
)
from .settings import ALL_SCOPES, READ_SCOPE, AuthSettings

MAX_FORM_BYTES = 64 * 1024
_URL = TypeAdapter(AnyHttpUrl, config=ConfigDict(url_preserve_empty_path=True))


def url(text: str) -> AnyHttpUrl:
    """`text` as the SDK's URL type, rendered back exactly (no slash added to an empty path)."""
    return _URL.validate_python(text)


def protected_resource_routes(settings: AuthSettings) -> list[BaseRoute]:
    metadata = ProtectedResourceMetadata(
        resource=url(settings.resource),
        authorization_servers=[url(settings.issuer)],
        scopes_supported=list(ALL_SCOPES),
        resource_name="docdex",
    )
    handler = _cors(request_response(ProtectedResourceMetadataHandler(metadata).handle))
    return [Route(path, handler, methods=["GET", "OPTIONS"]) for path in PROTECTED_RESOURCE_PATHS]


def authorization_server_routes(provider: DocdexProvider, consent: Consent) -> list[BaseRoute]:
    registration = ClientRegistrationOptions(
        enabled=True, valid_scopes=list(ALL_SCOPES), default_scopes=[READ_SCOPE]
    )
    metadata = build_metadata(
        url(provider.settings.issuer), None, registration, RevocationOptions(enabled=True)
    )
    metadata.authorization_response_iss_parameter_supported = True  # consent.py sends iss
    metadata.token_endpoint_auth_methods_supported = [
        "client_secret_post",
        "client_secret_basic",
        "none",
    ]
    authenticator = HashedSecretAuthenticator(provider)
    token = TokenEndpoint(TokenHandler(provider, authenticator), provider.settings.resource)
    register = RegistrationEndpoint.over(
        RegistrationHandler(provider, registration), provider.clock
    )
    return [
        Route(
            AUTHORIZATION_SERVER,
            _cors(request_response(MetadataHandler(metadata).handle)),
            methods=["GET", "OPTIONS"],
        ),
        Route(
            AUTHORIZE,
            _limited(request_response(AuthorizationEndpoint(provider).handle)),
            methods=["GET", "POST"],
        ),
        _posted(TOKEN, token.handle),
        _posted(REGISTER, register.handle, MAX_REGISTRATION_BYTES),
        _posted(REVOKE, RevocationEndpoint(provider, authenticator).handle),
        Route(CONSENT_PATH, consent.page, methods=["GET"]),
        Route(CONSENT_PATH, consent.answer, methods=["POST"]),
    ]


def _posted(
    path: str, handle: Callable[[Request], Awaitable[Response]], max_bytes: int = MAX_FORM_BYTES
) -> Route:
    app = _cors(_limited(request_response(handle), max_bytes), ["POST", "OPTIONS"])
    return Route(path, app, methods=["POST", "OPTIONS"])


def _limited(app: ASGIApp, max_bytes: int = MAX_FORM_BYTES) -> ASGIApp:
    return RequestBodyLimitMiddleware(app, max_bytes)


def _cors(app: ASGIApp, methods: list[str] | None = None) -> ASGIApp:
    """Browser-based clients (the MCP Inspector) read metadata and call /token from another
    origin; the SDK allows it the same way."""
    return CORSMiddleware(
        app,
        allow_origins="*",
        allow_methods=methods or ["GET", "OPTIONS"],
        allow_headers=[MCP_PROTOCOL_VERSION_HEADER],
    )
