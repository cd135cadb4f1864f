"""OAuth 2.1 for `docdex serve` (docs/adr/0038-oauth.md): docdex as a protected resource
(protected_resource/: the guard of /mcp and /api, the scopes a message needs, an existing
identity provider's JWTs), its own authorization server (authorization_server/: the
provider over the hashed token store, the consent page, the endpoints where the SDK falls
short), their routes from the MCP SDK's handlers (routes.py) and their settings and paths,
put together by setup.py. Only setup.py's callers import the MCP SDK through it; the
protected resource, settings.py and the token store import none of it."""
