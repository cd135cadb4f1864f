"""What an agent reads: the tools' text content as markdown, the JSON for programs staying
in `structuredContent` (docs/retrieval.md, "Hits with their context").

search_docs' text gives each hit its breadcrumb, `source:path:lines` and chunk, commit and
date, how it was found and how widened, then its text as written (markdown, unescaped), its
outline, the files it includes and where else the same text stands (its copies).
get_document's gives its id, lines and what follows, then the text. The other tools' answers
are short records, read as well as JSON: they stay JSON. A session that negotiated a
protocol without structured output (before 2025-06-18) gets the JSON as text, as the only
form it has.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar

import msgspec

from docdex.server.answers.shapes import Document
from docdex.server.engine import Hit, HitCopy, SearchResult

# The first protocol version with structuredContent: sessions on older ones read the JSON.
STRUCTURED_SINCE = "2025-06-18"
# The session's negotiated protocol version, set for each tool call ("" = not known).
protocol_version: ContextVar[str] = ContextVar("protocol_version", default="")

_encode = msgspec.json.Encoder().encode


def text_content(answer: msgspec.Struct, builtins: object) -> str:
    """The text content of a tool's answer (`builtins`: its JSON form)."""
    version = protocol_version.get()
    if version and version < STRUCTURED_SINCE:  # dated versions compare as strings
        return _encode(builtins).decode()
    render = _RENDERERS.get(type(answer))
    return render(answer) if render is not None else _encode(builtins).decode()


def search_text(result: SearchResult) -> str:
    count = f"{len(result.results)} hit{'s' * (len(result.results) != 1)}"
    head = [f"{count}, index version {result.index_version}"]
    if result.low_confidence:
        head.append("low confidence: nothing matched well; rephrase or try other terms")
    if result.omitted:
        head.append(f"{result.omitted} more left out to keep the answer within its cap")
    if result.note:
        head.append(result.note)
    head.append("cite a hit as source:path:lines; get_document(source:path#chunkN) reads it")
    blocks = ["; ".join(head) + "."]
    blocks += [_hit_text(n, hit) for n, hit in enumerate(result.results, 1)]
    return "\n\n".join(blocks) + "\n"


def _hit_text(rank: int, hit: Hit) -> str:
    place = f"`{hit.source}:{hit.path}:{hit.start_line}-{hit.end_line}`"
    facts = [place, f"#{hit.chunk_id.rpartition('#')[2]}"]
    facts += [f"ref {hit.ref}"] if hit.ref else []
    facts.append(f"commit {hit.commit[:12]}")
    facts += [hit.modified[:10]] if hit.modified else []
    facts.append(f"found by {_FOUND_BY.get(hit.match, hit.match)}")
    if hit.context:
        widened = "its section" if hit.context == "section" else "the chunks beside it"
        facts.append(f"lines {hit.chunk_start_line}-{hit.chunk_end_line} matched, with {widened}")
    lines = [f"## {rank}. {hit.heading or hit.title}", " · ".join(facts)]
    lines += [f"<{link}>" for link in (hit.url, hit.page_url) if link]
    parts = ["\n".join(lines), hit.text]
    if hit.truncated:
        parts.append(f"(cut to fit max_chars: get_document({hit.chunk_id}) has all of it)")
    if hit.included:
        parts.append("Included from: " + ", ".join(f"`{path}`" for path in hit.included))
    if hit.outline:
        section, *below = hit.outline
        outline = [f"Outline of {section.heading} (lines {section.start_line}-{section.end_line}):"]
        outline += [f"- {e.heading} (lines {e.start_line}-{e.end_line})" for e in below]
        parts.append("\n".join(outline))
    if hit.copies:
        parts.append("Same text also at: " + ", ".join(_copy_place(c) for c in hit.copies))
    return "\n\n".join(parts)


def _copy_place(copy: HitCopy) -> str:
    place = f"`{copy.source}:{copy.path}:{copy.start_line}-{copy.end_line}`"
    return f"{place} (ref {copy.ref})" if copy.ref else place


_FOUND_BY = {"both": "keywords and meaning", "bm25": "keywords", "dense": "meaning"}


def document_text(document: Document) -> str:
    name = document.chunk_id or document.doc_id
    title = document.heading or document.title
    facts = [
        f"`{document.source}:{document.path}:{document.start_line}-{document.end_line}`",
        f"of {document.last_line} lines",
    ]
    facts += [f"ref {document.ref}"] if document.ref else []
    facts.append(f"commit {document.commit[:12]}")
    facts += [document.modified[:10]] if document.modified else []
    lines = [f"# {title}", f"{name} · " + " · ".join(facts)]
    lines += [f"<{link}>" for link in (document.url, document.page_url) if link]
    if document.truncated:
        lines.append(
            f"More follows: get_document({document.doc_id}, cursor={document.next_cursor})"
        )
    around = [f"previous: {document.previous_chunk_id}"] if document.previous_chunk_id else []
    around += [f"next: {document.next_chunk_id}"] if document.next_chunk_id else []
    if around:
        lines.append(" · ".join(around))
    parts = ["\n".join(lines), document.text]
    if document.sections:
        parts.append(
            "Sections:\n"
            + "\n".join(
                f"- {s.heading} (lines {s.start_line}-{s.end_line}, {s.chunk_id})"
                for s in document.sections
            )
        )
    return "\n\n".join(parts) + "\n"


_RENDERERS: dict[type, Callable] = {SearchResult: search_text, Document: document_text}
