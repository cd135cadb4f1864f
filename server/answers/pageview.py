"""The search page's view of one indexed page: its whole text, rendered (render.py), with the
facts the page shows around it. Served as JSON at /api/page (routes.py).

The text is the page as indexed (as pages.page_text reads it), cut after the last line that
fits in VIEW_CHARS so that no file makes the view large: `cut` and `note` then say so and
where get_document reads on. Of the view, the first MARKDOWN_CHARS are rendered as markdown
and the rest is shown as written (escaped, in line-numbered blocks): markdown-it's time grows
with the blocks it renders, and a heading-dense view of 400 KB took seconds.
"""

from __future__ import annotations

from html import escape

import msgspec

from docdex.index_format.reassembly import reassemble
from docdex.index_format.records import ServedPage
from docdex.server.engine import Engine, breadcrumb

from .cursors import Lines
from .documents import page_summary
from .shapes import PageSummary, Section

VIEW_CHARS = 400_000  # about 100 printed pages
MARKDOWN_CHARS = 64_000  # of the view rendered as markdown; the rest is shown as written
PLAIN_BLOCK_LINES = 40  # lines per block of the part shown as written


class PageView(msgspec.Struct):
    page: PageSummary  # what query_docs says of it: ids, title, dates, its last commit
    size: int  # bytes of the file at `page.commit`
    html: str  # the rendered markdown (render.py): escaped, links checked, no images fetched
    first_line: int
    last_line: int  # the last line `html` shows
    lines: int  # the page's last line
    cut: bool  # the page continues after `last_line`
    note: str  # "" unless cut: what was left out and how to read it
    sections: list[Section]  # the indexed sections, for the page to mark a hit's
    index_version: int
    # Where the source's host shows this page at its commit (a browse URL); "" until sources
    # know their web address (the git-native search issue fills it; the page links it).
    permalink: str = ""


def front_matter_lines(page: ServedPage) -> int:
    """How many lines at the top of the page are its front matter (0: none)."""
    return page.front_matter.count("\n") + 1 if page.front_matter else 0


def page_view(
    engine: Engine, page: ServedPage, limit: int = VIEW_CHARS, site_dir: str = ""
) -> PageView:
    """The page rendered; links to the site's addresses (its `site_dir`, else the usual
    docs folders) lead to the pages docdex holds."""
    from .render import Where, render_markdown  # markdown-it: 30 ms a start does not need
    from .sitelinks import SiteMap

    chunks = engine.page_chunks(page)
    lines = Lines(reassemble(chunks, page.front_matter))
    window = lines.window(0, len(lines.text), limit)
    where = Where(page.source, page.path, SiteMap(page.source, engine.pages.keys(), site_dir))
    cut = window.next_offset is not None
    rendered, plain = split_for_rendering(window.text, MARKDOWN_CHARS)
    note = ""
    if plain:
        plain_from = window.start_line + rendered.count("\n") + 1
        note = f"Lines {plain_from:,} onwards are shown as written, not rendered. "
    if cut:
        note += (
            f"This page is {len(lines.text):,} characters long; the view stops after line "
            f"{window.end_line} of {lines.last_line}. get_document(doc_id={page.doc_id!r}, "
            f"start_line={window.end_line + 1}) reads on."
        )
    html = render_markdown(rendered, where, front_matter_lines(page))
    if plain:
        html += plain_html(plain, window.start_line + rendered.count("\n") + 1)
    return PageView(
        page=page_summary(page, engine.ref_of(page.source)),
        size=page.size,
        html=html,
        first_line=window.start_line,
        last_line=window.end_line,
        lines=lines.last_line,
        cut=cut,
        note=note.strip(),
        sections=[
            Section(c.chunk_id, breadcrumb(c.headings), c.start_line, c.end_line) for c in chunks
        ],
        index_version=engine.version,
    )


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
