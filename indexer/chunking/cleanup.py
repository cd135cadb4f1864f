"""Markup noise removal: the text a reader sees, for headings and for the embedder.

`heading_text` gives a heading or summary as a reader sees it. For chunk text,
`without_markers` drops admonition markers and template tags from a page's lines before
block parsing, and `render_tokens` turns block tokens into clean text (HTML tags, link
targets, emphasis marks and table pipes removed; code content kept).

Inline markdown goes through markdown-it's inline parser, except very long runs of inline
text: its cost per character is high on bracket-heavy input, so those take a rough
regex pass instead (linear time, good enough for an embedder).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, MutableMapping
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

_INLINE_PARSER = MarkdownIt("commonmark").enable("strikethrough")

INLINE_PARSE_LIMIT = 20_000  # characters of one inline run parsed by markdown-it

_INLINE_MARKUP = re.compile(r"[\\`*_~\[\]<>&!]")  # text without these parses to itself
_FENCE_OPEN = re.compile(r"^[ \t]*(`{3,}(?=[^`]*$)|~{3,})")
_MKDOCS_ADMONITION = re.compile(r'^[ \t]*(?:!!!|\?\?\?\+?)[ \t]*[\w\- \t]*?(?:"([^"]*)")?[ \t]*$')
_DOCUSAURUS_ADMONITION = re.compile(r"^[ \t]*:{3,}[ \t]*[\w-]*[ \t]*(?:\[([^\]]*)\])?(.*)$")
_GITHUB_ALERT = re.compile(r"^([ \t]*(?:>[ \t]?)+)[ \t]*\[![A-Za-z]+\][+-]?")
_BOLD_NOTE = re.compile(
    r"^([ \t]*(?:>[ \t]?)+)[ \t]*(?:\*\*|__)(?:note|tip|info|important|warning|caution|danger"
    r"|attention|hint|remark)(?::(?:\*\*|__)|(?:\*\*|__):?)",
    re.IGNORECASE,
)
# Bounded by the next delimiter character, so unclosed tags cannot make these quadratic.
_TEMPLATE_TAG = re.compile(r"\{%[^%]*%\}|\{\{<[^>]*>\}\}|\{\{%[^%]*%\}\}")
_HTML_TAG = re.compile(r"</?[A-Za-z][^<>]*>|<![^<>]*>|<\?[^<>]*\?>")
_PREFORMATTED = re.compile(r"<(?:pre|code|script|style)\b", re.IGNORECASE)
_HEADING_ATTRIBUTES = re.compile(r"\s*\{[ \t]*[#.][^{}]*\}\s*$")
# Runs that tidy() changes: two or more spaces, or other horizontal whitespace (a lone space
# is left alone, which makes tidy() about twice as fast on prose).
_SPACES = re.compile(r"[^\S\n]{2,}|[^\S \n]")
_SPACES_AROUND_NEWLINE = re.compile(r" ?\n ?")
_BLANK_LINES = re.compile(r"\n{3,}")
_ALL_WHITESPACE = re.compile(r"\s+")
_ROUGH_LINK = re.compile(r"!?\[([^\[\]\n]{0,500})\]\(([^()\s]{0,2000})[^()\n]{0,500}\)")
_ROUGH_EMPHASIS = re.compile(r"(?<![\w*~])(?:[*_]{1,3}|~~)(?=\w)|(?<=\w)(?:[*_]{1,3}|~~)(?![\w*~])")
_ROUGH_CODE_TICKS = re.compile(r"`+")

_BLOCK_ENDS = {"paragraph_close", "heading_close", "tr_close", "hr"}
_CELL_ENDS = {"th_close", "td_close"}


def normalise_newlines(text: str) -> str:
    """Drop a leading BOM; CRLF and lone CR become LF."""
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n")


def collapse_whitespace(text: str) -> str:
    return _ALL_WHITESPACE.sub(" ", text).strip()


def heading_text(markdown: str, env: MutableMapping[str, Any] | None = None) -> str:
    """A heading (or a <summary>) as a reader sees it, on one line."""
    text = inline_text(strip_template_tags(markdown), env, link_urls=False)
    return _HEADING_ATTRIBUTES.sub("", collapse_whitespace(text))


def without_markers(lines: list[str]) -> list[str]:
    """The page's lines with admonition markers and template tags removed, outside fences.

    The line count never changes, so block positions still match the file. MkDocs
    admonition bodies are indented four spaces; they are dedented so that they parse as
    prose, not as an indented code block.
    """
    out: list[str] = []
    prose_start = 0
    fence = ""
    dedent_admonition = False
    for line in lines:
        if fence:
            out.append(line)
            fence = "" if _closes_fence(line, fence) else fence
            continue
        opening = _FENCE_OPEN.match(line) if _starts_with(line, "`~") else None
        if opening:
            _strip_template_tags_from(out, prose_start)
            fence = opening.group(1)
            out.append(line)
            prose_start = len(out)
            continue
        if dedent_admonition and (not line.strip() or line.startswith(("    ", "\t"))):
            line = line[4:] if line.startswith("    ") else line[1:]
        else:
            dedent_admonition = False
        marker = _MKDOCS_ADMONITION.match(line) if _starts_with(line, "!?") else None
        if marker:
            dedent_admonition = True
            line = marker.group(1) or ""
        out.append(_without_inline_marker(line) if _starts_with(line, ":>") else line)
    _strip_template_tags_from(out, prose_start)
    return out


def render_tokens(tokens: list[Token], env: MutableMapping[str, Any] | None) -> str:
    """Text of a run of block tokens: inline markup rendered, code kept, HTML tags gone."""
    parts: list[str] = []
    for token in tokens:
        if token.type == "inline":
            parts.append(inline_text(token.content, env))
        elif token.type in ("fence", "code_block"):
            parts.append(token.content + "\n")
        elif token.type == "html_block":
            parts.append(html_block_text(token.content, env) + "\n")
        elif token.type in _CELL_ENDS:
            parts.append(" ")
        elif token.type in _BLOCK_ENDS:
            parts.append("\n")
    return "".join(parts)


def tidy(text: str) -> str:
    """Runs of spaces collapsed, lines trimmed, at most one blank line in a row."""
    text = _SPACES.sub(" ", text)
    text = _SPACES_AROUND_NEWLINE.sub("\n", text)
    return _BLANK_LINES.sub("\n\n", text).strip()


def inline_text(
    markdown: str, env: MutableMapping[str, Any] | None = None, *, link_urls: bool = True
) -> str:
    """Inline markdown to text: emphasis and link syntax gone, link text and code kept.

    With link_urls, a link without text keeps its target (a bare URL is still content).
    """
    if not _INLINE_MARKUP.search(markdown):
        return markdown
    if len(markdown) > INLINE_PARSE_LIMIT:
        return rough_inline_text(markdown)
    tokens = _INLINE_PARSER.parseInline(markdown, env if env is not None else {})
    children = tokens[0].children if tokens and tokens[0].children else []
    return "".join(_render_inline(children, link_urls))


def strip_html(text: str) -> str:
    """HTML tags and comments removed (their text content kept), entities decoded."""
    return html.unescape(_without_tags(text))


def strip_template_tags(text: str) -> str:
    """GitBook/Jinja `{% ... %}` and Hugo `{{< ... >}}` / `{{% ... %}}` tags removed."""
    if "{" not in text:
        return text
    return _TEMPLATE_TAG.sub(lambda m: "\n" * m.group().count("\n"), text)


def html_block_text(content: str, env: MutableMapping[str, Any] | None) -> str:
    """Text of an HTML block, tags removed. Writers put markdown inside HTML wrappers
    (`<summary>**Q**</summary>`), so it is rendered, unless the block holds code."""
    if _PREFORMATTED.search(content):
        return strip_html(content)
    return inline_text(_without_tags(content), env)


def _strip_template_tags_from(lines: list[str], start: int) -> None:
    if any("{" in line for line in lines[start:]):
        lines[start:] = strip_template_tags("\n".join(lines[start:])).split("\n")


def _closes_fence(line: str, fence: str) -> bool:
    marks = line.strip()
    return len(marks) >= len(fence) and marks == fence[0] * len(marks)


def _starts_with(line: str, characters: str) -> bool:
    """Whether the first non-blank character of the line is one of these."""
    first = line[:80].lstrip(" \t")[:1]
    return bool(first) and first in characters


def _without_inline_marker(line: str) -> str:
    docusaurus = _DOCUSAURUS_ADMONITION.match(line)
    if docusaurus:
        return " ".join(part.strip() for part in docusaurus.groups() if part and part.strip())
    line = _GITHUB_ALERT.sub(r"\1", line)
    return _BOLD_NOTE.sub(r"\1", line)


def _render_inline(children: list[Token], link_urls: bool) -> Iterable[str]:
    link_targets: list[tuple[str, int]] = []
    written = 0
    for child in children:
        piece = ""
        if child.type in ("text", "text_special", "code_inline"):
            piece = child.content
        elif child.type in ("softbreak", "hardbreak"):
            piece = "\n"
        elif child.type == "image":
            piece = "".join(_render_inline(child.children or [], link_urls=False))
        elif child.type == "html_inline" and child.content.lower().startswith("<br"):
            piece = " "
        elif child.type == "link_open":
            link_targets.append((str(child.attrs.get("href", "")), written))
        elif child.type == "link_close" and link_targets:
            href, written_at_open = link_targets.pop()
            if link_urls and written == written_at_open:
                piece = href
        if piece:
            written += len(piece)
            yield piece


def rough_inline_text(markdown: str) -> str:
    """Inline markdown to text by a rough regex pass, in linear time whatever the input
    (markdown-it's inline parser is slow on bracket-heavy runs)."""
    if not _INLINE_MARKUP.search(markdown):
        return markdown
    text = _ROUGH_LINK.sub(lambda m: m.group(1) or m.group(2), markdown)
    text = _ROUGH_CODE_TICKS.sub("", _ROUGH_EMPHASIS.sub("", text))
    return strip_html(text)


def _without_tags(text: str) -> str:
    return _HTML_TAG.sub(" ", _without_html_comments(text))


def _without_html_comments(text: str) -> str:
    if "<!--" not in text:
        return text
    kept: list[str] = []
    position = 0
    while True:
        start = text.find("<!--", position)
        if start < 0:
            kept.append(text[position:])
            break
        kept.append(text[position:start])
        end = text.find("-->", start + 4)
        if end < 0:
            break
        position = end + 3
    return " ".join(kept)
