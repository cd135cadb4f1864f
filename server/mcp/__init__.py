"""MCP: the tools, the page resources and the instructions over `Docs`, served over
streamable HTTP (mounted by server/http/) or stdin/stdout (`docdex mcp`)."""
