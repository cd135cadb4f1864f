"""docdex as an OAuth protected resource: who may call /mcp and /api (guard.py), which scope
an MCP message needs (scopes.py), and an existing identity provider's JWTs checked against
its JWKS (jwks.py, `--auth jwt`). Checking a token needs nothing of the MCP SDK."""
