"""Named static tokens: bearer tokens made by `docdex auth token NAME [--source S]...`, each
limited to some sources or not, kept hashed in state/oauth.json
(oauth/authorization_server/token_store.py) beside the OAuth clients. They work in every
`--auth` mode, beside $DOCDEX_TOKEN (every source, every scope), and end with `docdex auth
revoke NAME` at the server's next request (the store reads the file again when it changes).

A server requires tokens when $DOCDEX_TOKEN is set, OAuth is on, or the store holds a named
token when it starts; one started with none of these answers everyone (on loopback), so a
first named token takes effect at the next start.
"""

from __future__ import annotations

from pathlib import Path

from .grants import Grant, Verifier, stored_grant
from .oauth.authorization_server.token_store import STATIC_PREFIX, OAuthStore


class NamedTokens:
    """The named tokens of one data directory's state/."""

    def __init__(self, state_dir: Path) -> None:
        self.store = OAuthStore(state_dir)

    def any(self) -> bool:
        """Whether a named token exists now."""
        return self.store.path.exists() and bool(self.store.snapshot().static)

    def grant(self, token: str, resource_metadata: str = "") -> Grant | None:
        record = self.store.static_token(token) if token.startswith(STATIC_PREFIX) else None
        if record is None:
            return None
        return stored_grant(record.name, record.scopes, record.sources, resource_metadata)

    def verifier(self, resource_metadata: str) -> Verifier:
        async def verify(token: str) -> Grant | None:
            return self.grant(token, resource_metadata)

        return verify
