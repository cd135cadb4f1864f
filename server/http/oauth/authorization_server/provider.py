"""docdex's own authorization server: the MCP SDK's provider protocol over the store.

    /authorize ─> `authorize`: a pending request, the browser sent to the consent page
    consent.py  ─> `approve` / `deny`: a code (or an error) back to the client's redirect_uri
    /token      ─> `exchange_authorization_code` (PKCE S256, checked by the SDK's handler),
                   `exchange_refresh_token` (the refresh token rotates: the old one and its
                   access token end)
    /revoke     ─> `revoke_for` (token_endpoints.py): the token and the one issued with it

Pending requests (pending.py) and codes live in memory (minutes long; a restart only means
signing in again); clients and tokens in the store. Every request is bound to this server's
resource URI: a `resource` naming another is refused (`invalid_target`, RFC 8707). A code
presented a second time ends every token its first exchange gave (RFC 6749 4.1.2).

What a wrong admin secret costs falls on whoever typed it, never on the owner's right one
(`wrong_secret`, over the budgets of throttle.WrongSecrets).
"""

from __future__ import annotations

import enum
import secrets
import time
from typing import Any

import anyio
import msgspec
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    RegistrationError,
    TokenError,
    construct_redirect_uri,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from docdex.server.http.oauth.paths import CONSENT_PATH
from docdex.server.http.oauth.settings import ALL_SCOPES, READ_SCOPE, AuthSettings, same_resource

from .pending import Pending, PendingFull, PendingRequests
from .redirects import redirect_refusal
from .throttle import MAX_WRONG_PER_REQUEST, WrongSecrets
from .token_store import Clock, OAuthStore, StoreFull, TokenPair, TokenRecord


class Lifetimes(msgspec.Struct, frozen=True, kw_only=True):
    """Seconds each credential lives."""

    access: int = 3600
    refresh: int = 30 * 86400
    code: int = 300
    consent: int = 600  # a consent page left open this long must be asked again


LIFETIMES = Lifetimes()


class SourcedCode(AuthorizationCode):
    """A code that carries the sources the owner let the client read (None: every one)."""

    sources: list[str] | None = None


class WrongSecret(enum.Enum):
    """What became of a request a wrong admin secret was typed into."""

    AGAIN = "again"  # it may be answered again
    WITHDRAWN = "withdrawn"  # it ended
    FORGOTTEN = "forgotten"  # its client, never authorized, was forgotten with its requests


class _Spent(msgspec.Struct, frozen=True):
    """A code exchanged already: the family of the tokens it gave, until it would expire."""

    family: str
    expires_at: float


class DocdexProvider(OAuthAuthorizationServerProvider[SourcedCode, RefreshToken, AccessToken]):
    def __init__(
        self,
        store: OAuthStore,
        settings: AuthSettings,
        lifetimes: Lifetimes = LIFETIMES,
        clock: Clock = time.time,
    ) -> None:
        self.store = store
        self.settings = settings
        self.lifetimes = lifetimes
        self.clock = clock
        self._pending = PendingRequests(clock)
        self._codes: dict[str, SourcedCode] = {}
        self._spent: dict[str, _Spent] = {}
        self._wrong = WrongSecrets(clock)

    # --- clients ----------------------------------------------------------------------------

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        """The client's metadata; its secret stays in the store as a hash (authenticator.py
        checks it), so this record carries none."""
        record = self.store.client(client_id)
        if record is None:
            return None
        return OAuthClientInformationFull.model_validate({**record.info, "client_id": client_id})

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        """Store a client; it may ask for every scope (the owner decides at consent what each
        authorization grants), so a later step-up to reindex needs no new registration."""
        for uri in client_info.redirect_uris or []:
            refusal = redirect_refusal(str(uri))
            if refusal is not None:
                raise RegistrationError("invalid_redirect_uri", f"{str(uri)[:80]} {refusal}")
        client_info.scope = " ".join(ALL_SCOPES)
        info = client_info.model_dump(mode="json", exclude={"client_secret"}, exclude_none=True)
        try:
            await anyio.to_thread.run_sync(
                self.store.register, client_info.client_id, info, client_info.client_secret
            )
        except StoreFull as exc:
            raise RegistrationError("invalid_client_metadata", str(exc)) from None

    # --- authorization ----------------------------------------------------------------------

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams, requester: str = ""
    ) -> str:
        """The consent page's address for this request, from `requester` (an address)."""
        self._check_resource(params.resource, AuthorizeError)
        if self._wrong.shut_out(requester, client.client_id):
            raise AuthorizeError(
                "temporarily_unavailable",
                "too many wrong admin secrets were typed for this client from this address",
            )
        self._expire()
        request = Pending(
            client_id=client.client_id,
            client_name=client.client_name or client.client_id,
            redirect_uri=str(params.redirect_uri),
            redirect_uri_explicit=params.redirect_uri_provided_explicitly,
            state=params.state,
            scopes=list(params.scopes or [READ_SCOPE]),
            code_challenge=params.code_challenge,
            expires_at=self.clock() + self.lifetimes.consent,
            requester=requester,
        )
        try:
            request_id = self._pending.add(request)
        except PendingFull as exc:
            raise AuthorizeError("temporarily_unavailable", str(exc)) from None
        return f"{self.settings.public_url}{CONSENT_PATH}?request={request_id}"

    def pending(self, request_id: str) -> Pending | None:
        """The request waiting under `request_id`, while it may still be answered."""
        return self._pending.get(request_id)

    def trusted(self, client_id: str) -> bool:
        """Whether the owner ever authorized the client (it got tokens): only then does
        docdex send a browser to its redirect URI without the owner's secret (RFC 9700
        4.11.2)."""
        record = self.store.client(client_id)
        return record is not None and record.last_issued_at > 0

    async def wrong_secret(self, request_id: str) -> WrongSecret:
        """Charge a wrong admin secret typed into the request to the budgets of whoever
        could have typed it. It never decides about a right secret."""
        request = self._pending.get(request_id)
        if request is None:
            return WrongSecret.WITHDRAWN
        client_id = request.client_id
        pressed, forget = self._wrong.charge(request.requester, client_id, self.trusted(client_id))
        if forget:
            self._pending.drop_client(client_id)
            await anyio.to_thread.run_sync(self.store.forget_unauthorized, client_id)
            return WrongSecret.FORGOTTEN
        if pressed or self._pending.wrong_secret(request_id) >= MAX_WRONG_PER_REQUEST:
            self._pending.drop(request_id)
            return WrongSecret.WITHDRAWN
        return WrongSecret.AGAIN

    def approve(
        self, request_id: str, scopes: list[str], sources: list[str] | None = None
    ) -> str | None:
        """The redirect that carries a new code for the request (None: no such request),
        whose tokens have the owner's `scopes` (which may add reindex to what the client
        asked) and read `sources` only (None: every source). The request is answered once."""
        request = self._take(request_id)
        if request is None:
            return None
        code = secrets.token_urlsafe(32)
        self._codes[code] = SourcedCode(
            sources=sources,
            code=code,
            scopes=[s for s in ALL_SCOPES if s in scopes],
            expires_at=self.clock() + self.lifetimes.code,
            client_id=request.client_id,
            code_challenge=request.code_challenge,
            redirect_uri=request.redirect_uri,  # type: ignore[arg-type]  # pydantic parses it
            redirect_uri_provided_explicitly=request.redirect_uri_explicit,
            resource=self.settings.resource,
        )
        return construct_redirect_uri(
            request.redirect_uri, code=code, state=request.state, iss=self.settings.issuer
        )

    def deny(self, request_id: str) -> str | None:
        request = self._take(request_id)
        if request is None:
            return None
        return construct_redirect_uri(
            request.redirect_uri,
            error="access_denied",
            error_description="the owner of this docdex server refused",
            state=request.state,
            iss=self.settings.issuer,
        )

    def _take(self, request_id: str) -> Pending | None:
        return self._pending.take(request_id)

    def _expire(self) -> None:
        now = self.clock()
        for table in (self._codes, self._spent):
            for key in [k for k, c in table.items() if c.expires_at <= now]:
                del table[key]

    # --- tokens -----------------------------------------------------------------------------

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> SourcedCode | None:
        if await self._reused(authorization_code):
            return None
        code = self._codes.get(authorization_code)
        if code is None or code.client_id != client.client_id or code.expires_at <= self.clock():
            return None
        return code

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: SourcedCode
    ) -> OAuthToken:
        if self._codes.pop(authorization_code.code, None) is None:  # used once only
            await self._reused(authorization_code.code)
            raise TokenError("invalid_grant", "the authorization code was used already")
        family = secrets.token_hex(16)  # known before the tokens are, should the code return
        self._spent[authorization_code.code] = _Spent(family, authorization_code.expires_at)
        pair = await anyio.to_thread.run_sync(
            self.store.issue,
            client.client_id,
            authorization_code.scopes,
            self.settings.resource,
            self.settings.issuer,
            self.lifetimes.access,
            self.lifetimes.refresh,
            authorization_code.sources,
            family,
        )
        return _oauth_token(pair)

    async def _reused(self, code: str) -> bool:
        """Whether `code` was exchanged already; if so, the tokens of that exchange and every
        token refreshed from them end (RFC 6749 4.1.2: stolen, or replayed)."""
        spent = self._spent.get(code)  # kept: each return ends what a racing exchange added
        if spent is None or spent.expires_at <= self.clock():
            return False
        await anyio.to_thread.run_sync(self.store.end_family, spent.family)
        return True

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        record = self.store.refresh_token(refresh_token)
        if record is None:
            await anyio.to_thread.run_sync(self.store.replayed, refresh_token)
            return None
        if record.client_id != client.client_id:
            return None
        return RefreshToken(**_token_fields(refresh_token, record))

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        pair = await anyio.to_thread.run_sync(
            self.store.rotate,
            refresh_token.token,
            scopes,
            self.lifetimes.access,
            self.lifetimes.refresh,
        )
        if pair is None:
            raise TokenError("invalid_grant", "the refresh token was used already or revoked")
        return _oauth_token(pair)

    async def load_access_token(self, token: str) -> AccessToken | None:
        record = self.store.access_token(token)
        return None if record is None else self.access(token, record)

    def access(self, token: str, record: TokenRecord) -> AccessToken:
        return AccessToken(**_token_fields(token, record), claims={"iss": record.issuer})

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        await anyio.to_thread.run_sync(self.store.revoke_token, token.token)

    async def revoke_for(self, client_id: str, token: str) -> None:
        """End `token` (access or refresh) and its pair if it is `client_id`'s; a token of
        another client, or none, is left as it is (RFC 7009 answers 200 either way)."""
        record = self.store.access_token(token) or self.store.refresh_token(token)
        if record is not None and record.client_id == client_id:
            await anyio.to_thread.run_sync(self.store.revoke_token, token)

    def _check_resource(self, resource: str | None, error: type[AuthorizeError]) -> None:
        if resource is not None and not same_resource(resource, self.settings.resource):
            raise error(
                "invalid_target",
                f"this server issues tokens for {self.settings.resource} only, not {resource[:80]}",
            )


def _oauth_token(pair: TokenPair) -> OAuthToken:
    return OAuthToken(
        access_token=pair.access_token,
        token_type="Bearer",
        expires_in=pair.expires_in,
        scope=" ".join(pair.scopes),
        refresh_token=pair.refresh_token,
    )


def _token_fields(token: str, record: TokenRecord) -> dict[str, Any]:
    """What the SDK's AccessToken and RefreshToken take of a stored token."""
    return {
        "token": token,
        "client_id": record.client_id,
        "scopes": record.scopes,
        "expires_at": int(record.expires_at),
        "resource": record.resource,
    }
