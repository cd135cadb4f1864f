"""Markup noise removal: the text a reader sees, for headings and for the embedder.

`heading_text` gives a heading or summary as a reader sees it. For chunk text,
`without_markers` reduces the markup of docs generators (docdex.markdown) in a
page's lines before block parsing: admonition, container and alert markers to the titles a
reader sees, directives to their words, heading ids and template tags to nothing; and
`render_tokens` turns block tokens into clean text (HTML tags, scripts, link targets,
emphasis marks and table pipes removed; code content kept).

Inline markdown goes through markdown-it's inline parser, except very long runs of inline
text: its cost per character is high on bracket-heavy input, so those take a rough
regex pass instead (linear time, good enough for an embedder). The text of a run is
cached, with the reference definitions it may read in the key: the versions of a docs site
repeat their paragraphs.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping, MutableMapping
from functools import lru_cache
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

from docdex.markdown import admonitions, alerts, attribute_lists, containers, directives, fences
from docdex.markdown.template_tags import strip_template_tags

_INLINE_PARSER = MarkdownIt("commonmark").enable("strikethrough")

INLINE_PARSE_LIMIT = 20_000  # characters of one inline run parsed by markdown-it
INLINE_CACHE_SIZE = 1 << 15  # inline runs whose text is kept (about 30 MB on PowerShell-Docs)

_INLINE_MARKUP = re.compile(r"[\\`*_~\[\]<>&!]")  # text without these parses to itself
_QUOTE_PREFIX = re.compile(r"^[ \t]*(?:>[ \t]?)+")
_BOLD_NOTE = re.compile(
    r"^([ \t]*(?:>[ \t]?)+)[ \t]*(?:\*\*|__)(?:note|tip|info|important|warning|caution|danger"
    r"|attention|hint|remark)(?::(?:\*\*|__)|(?:\*\*|__):?)",
    re.IGNORECASE,
)
_HTML_TAG = re.compile(r"</?[A-Za-z][^<>]*>|<![^<>]*>|<\?[^<>]*\?>")
_PREFORMATTED = re.compile(r"<(?:pre|code)\b", re.IGNORECASE)
_HIDDEN_ELEMENT = re.compile(r"<(script|style)\b[^<>]*>", re.IGNORECASE)  # content unseen
_ALL_WHITESPACE = re.compile(r"\s+")
_ROUGH_LINK = re.compile(r"!?\[([^\[\]\n]{0,500})\]\(([^()\s]{0,2000})[^()\n]{0,500}\)")
_ROUGH_EMPHASIS = re.compile(r"(?<![\w*~])(?:[*_]{1,3}|~~)(?=\w)|(?<=\w)(?:[*_]{1,3}|~~)(?![\w*~])")
_ROUGH_CODE_TICKS = re.compile(r"`+")

References = tuple[tuple[str, str, str], ...]  # (label, href, title) of each definition

# What a line that opens a fence or holds a marker starts with (after its indentation).
_MARKER_STARTS = frozenset("`~!?:>#{")
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
    """A heading (or a <summary>) as a reader sees it, on one line: no template tags, no
    trailing `{#id}`."""
    text = inline_text(strip_template_tags(markdown), env, link_urls=False)
    return attribute_lists.split_heading_id(collapse_whitespace(text))[0].rstrip()


def without_markers(lines: list[str]) -> list[str]:
    """The page's lines as the parser should read them: outside fences, admonition,
    container and alert markers reduced to the titles they show, one-line directives to
    their words, heading ids and template tags removed; inside fences, mdBook's include
    lines removed (they stand for a file's code, not their own text).

    The line count never changes, so block positions still match the file. MkDocs
    admonition bodies are indented four spaces a level; they are dedented so that they
    parse as prose, not as an indented code block. The indented options below a
    mkdocstrings `::: module.Name` line are configuration, removed.
    """
    out: list[str] = []
    prose_start = 0
    fence = ""
    body = _Body()
    for line in lines:
        if body.depth or body.options:
            line = body.line(line, in_fence=bool(fence))
        if not fence and line.lstrip(" \t")[:1] not in _MARKER_STARTS:  # most lines
            out.append(line)
            continue
        if fence:
            out.append("" if directives.mdbook_directive(line) else line)
            fence = "" if fences.closes_fence(line, fence) else fence
            continue
        fence = fences.fence_opening(line)
        if fence:
            _strip_template_tags_from(out, prose_start)
            out.append(line)
            prose_start = len(out)
            continue
        out.append(_without_marker(line, body))
    _strip_template_tags_from(out, prose_start)
    return out


class _Body:
    """Where the line being read sits: how many MkDocs admonitions deep (each one's body
    four columns in), and whether under a mkdocstrings directive's options."""

    def __init__(self) -> None:
        self.depth = 0
        self.options = False

    def line(self, line: str, in_fence: bool) -> str:
        """The line as it reads at its admonition's indentation ("" for options)."""
        if not (self.depth or self.options) or not line.strip():
            return "" if self.options and not line.strip() else line
        indent = _columns(line)
        if self.options and indent >= 4 * (self.depth + 1):
            return ""
        self.options = False
        while self.depth and indent < 4 * self.depth and not in_fence:
            self.depth -= 1
        return _dedent(line, 4 * self.depth)


def _without_marker(line: str, body: _Body) -> str:
    first = line[:80].lstrip(" \t")[:1]
    if first in ("!", "?") and (admonition := admonitions.mkdocs_admonition(line)):
        body.depth += 1
        return admonition.title or ""
    if first == ":":
        return _without_colon_marker(line, body)
    if first == ">":
        return _without_alert_marker(line)
    if first == "#":
        return attribute_lists.heading_line_without_markup(line)[0]
    if first == "{" and attribute_lists.is_attribute_line(line):
        return ""
    return line


def _without_colon_marker(line: str, body: _Body) -> str:
    if target := directives.autodoc_target(line):
        body.options = True
        return target
    if directive := directives.docfx_directive(line):
        name, attributes = directive
        return attributes.get("alt-text", "") if name == "image" else ""
    if container := containers.colon_fence(line):
        return container.title or ""
    return line


def _without_alert_marker(line: str) -> str:
    prefix = _QUOTE_PREFIX.match(line)
    if prefix and (alert := alerts.alert(line[prefix.end() :])):
        return prefix.group() + (alert.title or "")
    return _BOLD_NOTE.sub(r"\1", line)


def _columns(line: str) -> int:
    """The indentation of a line in columns (a tab to the next multiple of four)."""
    columns = 0
    for char in line:
        if char == " ":
            columns += 1
        elif char == "\t":
            columns += 4 - columns % 4
        else:
            break
    return columns


def _dedent(line: str, columns: int) -> str:
    """The line with up to `columns` columns of its indentation removed."""
    removed = 0
    for index, char in enumerate(line):
        if removed >= columns or char not in " \t":
            return " " * (removed - columns) + line[index:]
        removed += 1 if char == " " else 4 - removed % 4
    return ""


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
    """Runs of whitespace within a line collapsed to a space, lines trimmed, at most one
    blank line in a row, none first or last. Only LF ends a line (other line breaks are
    spaces here). Line by line with str.split: several times faster than regexes."""
    kept: list[str] = []
    blank = True  # the line before is blank (or there is none)
    for line in text.split("\n"):
        line = " ".join(line.split())
        if line or not blank:
            kept.append(line)
            blank = not line
    if kept and not kept[-1]:
        kept.pop()
    return "\n".join(kept)


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
    references = env.get("references") if env and "[" in markdown else None
    return _cached_inline_text(markdown, link_urls, _link_targets(references or {}))


def _link_targets(references: Mapping[str, Mapping[str, str]]) -> References:
    """What a reference link reads of the page's definitions: each label's target and title."""
    return tuple((label, ref["href"], ref["title"]) for label, ref in references.items())


@lru_cache(maxsize=INLINE_CACHE_SIZE)
def _cached_inline_text(markdown: str, link_urls: bool, references: References) -> str:
    """Inline markdown to text, given the definitions its reference links may read. Cached:
    a site's versions repeat their paragraphs (PowerShell-Docs two in three of them)."""
    definitions = {label: {"href": href, "title": title} for label, href, title in references}
    tokens = _INLINE_PARSER.parseInline(markdown, {"references": definitions} if references else {})
    children = tokens[0].children if tokens and tokens[0].children else []
    return "".join(_render_inline(children, link_urls))


def strip_html(text: str) -> str:
    """HTML tags and comments removed (their text content kept), entities decoded."""
    return html.unescape(_without_tags(text))


def html_block_text(content: str, env: MutableMapping[str, Any] | None) -> str:
    """Text of an HTML block, tags removed and scripts and styles left out. Writers put
    markdown inside HTML wrappers (`<summary>**Q**</summary>`), so it is rendered, unless
    the block holds code."""
    content = _without_hidden_elements(content)
    if _PREFORMATTED.search(content):
        return strip_html(content)
    return inline_text(_without_tags(content), env)


def _without_hidden_elements(content: str) -> str:
    """`<script>` and `<style>` elements removed, content and all (a VitePress page's
    `<script setup>`): no reader sees them. An unclosed one runs to the end."""
    if "<" not in content:
        return content
    kept: list[str] = []
    position = 0
    lowered = content.lower()
    while opening := _HIDDEN_ELEMENT.search(content, position):
        kept.append(content[position : opening.start()])
        close = lowered.find(f"</{opening.group(1).lower()}", opening.end())
        if close < 0:
            return " ".join(kept)
        position = lowered.find(">", close) + 1 or len(content)
    kept.append(content[position:])
    return " ".join(kept)


def _strip_template_tags_from(lines: list[str], start: int) -> None:
    if any("{" in line for line in lines[start:]):
        lines[start:] = strip_template_tags("\n".join(lines[start:])).split("\n")


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
