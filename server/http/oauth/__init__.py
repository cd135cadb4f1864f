"""OAuth 2.1 for `docdex serve` (docs/adr/0038-oauth.md): docdex as a protected resource
(guard.py, scopes.py), its own authorization server (provider.py, store.py, consent.py,
authenticator.py, routes.py) or an existing identity provider's JWTs (jwks.py), put together
by setup.py. Only setup.py's callers import the MCP SDK through it; guard.py, scopes.py,
settings.py and store.py import none of it."""
