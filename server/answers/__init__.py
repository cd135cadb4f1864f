"""What every tool and route answers, from one leased engine each (`Docs`): pages, chunks
and sources as msgspec Structs, paged and clipped to fit an agent's context, with
permalinks, freshness and /health. The MCP and HTTP layers only translate these answers."""
