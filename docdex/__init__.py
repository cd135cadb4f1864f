"""docdex: documentation search for AI agents."""
