"""A page's markdown as HTML for the search page, rendered on the server with markdown-it-py
and safe whatever the document holds (docs/adr/0016-web-page.md).

Documentation is untrusted. Raw HTML is off, so markdown-it escapes it as text. Every link
target passes an allowlist (`link_target`): http(s) and mailto stay links; a relative link to
a markdown file becomes a link to that page's view; `#anchor` points at the heading's id;
anything else (javascript:, vbscript:, data:, file:, protocol-relative, other relative files)
is rendered as its text. A link written as the docs site's address (`/guide/install`,
`../install/`) becomes a link to the page the index holds at that address (site_map.py),
and stays text when it holds none. Images are never fetched: an http(s) image becomes a link
to it, any other the words "image: ALT". No `style` attribute is written (table alignment
becomes a class), so the Content-Security-Policy's `style-src 'self'` refuses nothing here.

What docs generators add to markdown (callouts, components, heading ids, template tags,
directives) is rendered as what it stands for by dialects.py.

Each top-level block is wrapped in `<div class="blk" id="L12" data-first="12" data-last="18">`
with the file lines it came from (the page text is line-aligned with the file): the page
numbers its blocks with them and highlights the blocks of a search hit's section.

A view of a page (`render_view`) renders its first MARKDOWN_CHARS as markdown and shows the
rest as written (escaped, in line-numbered blocks of the same kind): markdown-it's time
grows with the blocks it renders, and a heading-dense view of 400 KB took seconds.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from html import escape
from typing import Any, NamedTuple
from urllib.parse import unquote, urlencode

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.token import Token

from docdex.markdown.deep_blocks import DeepBlocksAsCode

from .dialects import add_rules, view_source
from .site_map import SITE_EXTENSIONS, SiteMap

MARKDOWN_CHARS = 64_000  # of a view rendered as markdown; the rest is shown as written
PLAIN_BLOCK_LINES = 40  # lines per block of the part shown as written
SAFE_SCHEMES = frozenset({"http", "https", "mailto"})
ID_PREFIX = "doc-"  # heading ids never collide with the page's own element ids
_SCHEME = re.compile(r"^([a-z][a-z0-9+.\-]*):", re.IGNORECASE)
_IGNORED = re.compile(r"[\x00-\x20\x7f]")  # browsers drop these inside a URL's scheme
_NOT_ID = re.compile(r"[^\w\-]+")
_ALIGN = re.compile(r"text-align:(left|right|center)")


@dataclass(frozen=True)
class Where:
    """The page being rendered: relative links resolve against its path, and against the
    pages of `site` when there is one (without it, a link to any markdown file inside the
    repository is kept)."""

    source: str
    path: str
    site: SiteMap | None = None


def link_target(url: str, where: Where) -> str | None:
    """The href a link in `where` gets in the page view, or None: show it as text."""
    url = _IGNORED.sub("", url)
    if url.startswith("#"):
        return "#" + anchor_id(url[1:])
    scheme = _SCHEME.match(url)
    if scheme:
        return url if scheme.group(1).lower() in SAFE_SCHEMES else None
    if not url or url.startswith(("//", "\\")):
        return None  # another origin without a scheme, or nothing
    path, _, fragment = url.partition("#")
    target = _page_at(unquote(path.partition("?")[0]), where)
    if target is None:
        return None
    href = "/?" + urlencode({"doc": f"{where.source}:{target}"})
    return href + ("#" + anchor_id(fragment) if fragment else "")


def _page_at(path: str, where: Where) -> str | None:
    """The page a link's path leads to: one the site holds, or without a site to ask, any
    markdown file inside the repository."""
    if where.site is not None:
        return where.site.page(path, where.path) if path else None
    base = "" if path.startswith("/") else posixpath.dirname(where.path)
    target = posixpath.normpath(posixpath.join(base, path.lstrip("/")))
    if target.startswith("..") or not target.lower().endswith(SITE_EXTENSIONS):
        return None
    return target


def anchor_id(text: str) -> str:
    """A heading's id from its text, or from a link's fragment (GitHub's slugs give the same)."""
    slug = _NOT_ID.sub("", unquote(text).strip().lower().replace(" ", "-"))
    return ID_PREFIX + (slug or "section")


def render_markdown(text: str, where: Where, front_matter_lines: int = 0) -> str:
    """`text` (a page from its first line) as HTML, top-level blocks wrapped with their line
    numbers; its first `front_matter_lines` lines, the front matter, shown as written."""
    lines = text.split("\n")
    held = min(front_matter_lines, len(lines))
    head = _front_matter_block(lines[:held]) if held else ""
    source = view_source("\n".join([""] * held + lines[held:]), where.path)
    md = _markdown(source.mdx)
    env: dict[str, Any] = {"where": where, "ids": {}}
    tokens = md.parse(source.text, env)
    _check_links(tokens, where)
    _name_headings(tokens, env["ids"], source.heading_ids)
    return head + "".join(_block(md, group, env) for group in _top_level(tokens))


class RenderedView(NamedTuple):
    html: str
    plain_from: int  # the first line shown as written, not rendered (0: none is)


def render_view(
    text: str, where: Where, front_matter_lines: int = 0, first_line: int = 1
) -> RenderedView:
    """A view's `text` (a page from its first line, `first_line`) as HTML: its first
    MARKDOWN_CHARS rendered as markdown (`render_markdown`), the rest shown as written."""
    rendered, plain = split_for_rendering(text, MARKDOWN_CHARS)
    html = render_markdown(rendered, where, front_matter_lines)
    if not plain:
        return RenderedView(html, 0)
    plain_from = first_line + rendered.count("\n") + 1
    return RenderedView(html + plain_html(plain, plain_from), plain_from)


def split_for_rendering(text: str, max_chars: int) -> tuple[str, str]:
    """(the part rendered as markdown, the rest, shown as written): the first ends after
    its last blank line within `max_chars` (a block boundary), else after its last line
    break there; the rest starts on the line after it."""
    if len(text) <= max_chars:
        return text, ""
    cut = text.rfind("\n\n", 0, max_chars)
    if cut == -1:
        cut = text.rfind("\n", 0, max_chars)
    if cut <= 0:
        return "", text
    return text[:cut], text[cut + 1 :]


def plain_html(text: str, first_line: int) -> str:
    """Lines shown as written, escaped, in blocks numbered like the rendered ones."""
    lines = text.removesuffix("\n").split("\n")  # a window ends after a line break
    out = []
    for at in range(0, len(lines), PLAIN_BLOCK_LINES):
        block = lines[at : at + PLAIN_BLOCK_LINES]
        first, last = first_line + at, first_line + at + len(block) - 1
        shown = escape("\n".join(block))
        out.append(
            f'<div class="blk plain" id="L{first}" data-first="{first}" data-last="{last}">'
            f"<pre><code>{shown}</code></pre></div>\n"
        )
    return "".join(out)


def _front_matter_block(lines: list[str]) -> str:
    text = escapeHtml("\n".join(lines))
    return (
        f'<div class="blk" id="L1" data-first="1" data-last="{len(lines)}">'
        f"<pre><code>{text}</code></pre></div>\n"
    )


@cache
def _markdown(mdx: bool = False) -> MarkdownIt:
    """The view's parser; MDX has no indented code (its components' children are indented)."""
    md = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
    if mdx:
        md.disable("code")
    add_rules(md)
    md.validateLink = _parses_as_link  # type: ignore[method-assign]  # markdown-it's documented hook
    md.add_render_rule("image", _image)
    md.add_render_rule("heading_close", _heading_close)
    md.block = DeepBlocksAsCode(md)
    return md


def _parses_as_link(url: str) -> bool:
    """The parser's own check: no dangerous scheme is even parsed as a link (the allowlist
    in `link_target` then decides what the rest becomes)."""
    scheme = _SCHEME.match(_IGNORED.sub("", url))
    return scheme is None or scheme.group(1).lower() in SAFE_SCHEMES


def _inline_children(tokens: Sequence[Token]) -> Iterator[Token]:
    for token in tokens:
        if token.type == "inline":
            yield from token.children or []


def _check_links(tokens: Sequence[Token], where: Where) -> None:
    """Links through `link_target`; a refused one becomes a span with its target as title.
    Table cells' alignment becomes a class."""
    refused: list[bool] = []
    for token in tokens:
        style = token.attrGet("style")
        if style is not None:
            token.attrs.pop("style")
            if align := _ALIGN.search(str(style)):
                token.attrSet("class", f"align-{align.group(1)}")
    for token in _inline_children(tokens):
        if token.type == "link_open":
            raw = str(token.attrGet("href") or "")
            href = link_target(raw, where)
            refused.append(href is None)
            if href is None:
                token.tag, token.attrs = "span", {"class": "dead-link", "title": raw[:300]}
            else:
                token.attrSet("href", href)
                if not href.startswith(("/", "#")):
                    token.attrSet("rel", "noopener noreferrer")
        elif token.type == "link_close" and refused.pop():
            token.tag = "span"


def _name_headings(tokens: Sequence[Token], ids: dict[str, int], given: dict[int, str]) -> None:
    """Each heading's id: the one written on it (`{#install}`), else its text's slug."""
    for heading, inline in zip(tokens, tokens[1:], strict=False):
        if heading.type != "heading_open":
            continue
        words = "".join(c.content for c in inline.children or [] if c.type in _TEXT_TOKENS)
        written = given.get(heading.map[0], "") if heading.map else ""
        base = anchor_id(written or words)
        seen = ids.get(base, 0)
        ids[base] = seen + 1
        heading.attrSet("id", base if not seen else f"{base}-{seen}")


_TEXT_TOKENS = frozenset({"text", "code_inline"})


def _top_level(tokens: Sequence[Token]) -> Iterator[Sequence[Token]]:
    """The token runs of each top-level block."""
    start = depth = 0
    for i, token in enumerate(tokens):
        depth += token.nesting
        if depth == 0:
            yield tokens[start : i + 1]
            start = i + 1


def _block(md: MarkdownIt, group: Sequence[Token], env: dict[str, Any]) -> str:
    html = md.renderer.render(group, md.options, env)
    if not group[0].map:
        return html
    first, last = group[0].map[0] + 1, group[0].map[1]
    return f'<div class="blk" id="L{first}" data-first="{first}" data-last="{last}">{html}</div>\n'


def _image(self, tokens: Sequence[Token], idx: int, options, env: dict[str, Any]) -> str:
    """An image is never fetched: a link to an http(s) image, else its alt text."""
    token = tokens[idx]
    alt = escapeHtml(self.renderInlineAsText(token.children or [], options, env) or "untitled")
    href = link_target(str(token.attrGet("src") or ""), env["where"])
    if href and href.lower().startswith(("http:", "https:")):
        return (
            f'<a class="image" href="{escapeHtml(href)}" rel="noopener noreferrer">image: {alt}</a>'
        )
    return f'<span class="image">image: {alt}</span>'


def _heading_close(self, tokens: Sequence[Token], idx: int, options, env: dict[str, Any]) -> str:
    """A heading ends with a link to itself."""
    opening = next(t for t in reversed(tokens[:idx]) if t.type == "heading_open")
    anchor = escapeHtml(str(opening.attrGet("id") or ""))
    link = f'<a class="anchor" href="#{anchor}" aria-label="Link to this section">#</a>'
    return f"{link}</{tokens[idx].tag}>\n"
