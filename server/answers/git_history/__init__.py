"""The answers read from the sources' git history rather than the index (adr/0043)."""
