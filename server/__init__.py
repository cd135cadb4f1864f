"""The reading side: the search engine (engine/), what tools and routes answer (answers/),
a page's markdown rendered for the search page (rendering/), MCP (mcp/) and HTTP (http/),
the served version and its swaps (versions.py), start-up (boot.py)."""
