"""Markdown to chunks: front matter, the dialects of docs sites (MDX, snippets, includes),
the text a reader sees, and heading-breadcrumbed chunks whose text is exact file text."""
