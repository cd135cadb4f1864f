"""The embedding model both sides share: files, sessions, tokenizing, embedding."""
