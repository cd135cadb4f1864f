"""docdex's own authorization server (`--auth oauth`): the MCP SDK's provider protocol over
the store of clients and hashed tokens (provider.py, token_store.py), the requests waiting
for the owner (pending.py) and the consent page where the owner answers them (consent.py,
screens.py), and the endpoints where the SDK's handlers fall short: /authorize's errors
(authorize.py), /register's bounds (registration.py), /token and /revoke (token_endpoints.py,
authenticator.py); which redirect URIs a client may register (redirects.py) and the budgets
of attempts (throttle.py)."""
