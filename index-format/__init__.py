"""The on-disk format, the only contract between the indexer and the server (FORMAT.md)."""
