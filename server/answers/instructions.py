"""The MCP server's instructions, built from the index: which sources there are and what
each holds, what the tools are for, and how to cite. A client reads them when it connects,
so they follow the sources as they change."""

from __future__ import annotations

from docdex.server.engine import RESOURCE_TEMPLATE

from .shapes import SourceInfo

MAX_LISTED_SOURCES = 30

USAGE = f"""\
Tools: search_docs finds the sections that answer a question, an identifier or an error \
message (write the query in English); get_document reads a section (chunk_id) or a page \
(doc_id), a window at a time (follow next_cursor); query_docs lists pages by path, title \
or date; list_sources shows each source's indexed commit and freshness; changes lists \
the pages changed between two points of a source's history (a tag, a branch, a commit, a \
date or an age such as 7d: "what changed since v2?"), and search_docs(changed_since=...) \
searches only those; get_document(doc_id, ref=<commit or tag>) reads a page as it was \
then; reindex asks the indexer to re-read a source. Pages are also resources: {RESOURCE_TEMPLATE}.
Cite what you use as source:path:start_line-end_line, with the commit when it matters; \
these come with every hit. When a search says low_confidence, rephrase rather than trust \
its results."""


def server_instructions(sources: list[SourceInfo]) -> str:
    return f"{_what_is_indexed(sources)}\n{USAGE}"


def _what_is_indexed(sources: list[SourceInfo]) -> str:
    if not sources:
        return (
            "docdex searches markdown documentation from git repositories. No source is "
            "configured yet (`docdex source add`), so every search comes back empty."
        )
    lines = ["docdex searches markdown documentation from git repositories. Sources:"]
    lines += [f"- {_source_line(s)}" for s in sources[:MAX_LISTED_SOURCES]]
    if len(sources) > MAX_LISTED_SOURCES:
        lines.append(f"- and {len(sources) - MAX_LISTED_SOURCES} more (list_sources)")
    return "\n".join(lines)


def _source_line(source: SourceInfo) -> str:
    about = f": {source.description}" if source.description else ""
    if not source.indexed:
        return f"{source.name}{about} (not indexed yet)"
    return f"{source.name}{about} ({source.files} pages)"
