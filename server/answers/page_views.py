"""The search page's view of one indexed page: its whole text, rendered (server/rendering/),
with the facts the page shows around it. Served as JSON at /api/page (routes.py).

The text is the page as indexed (as documents.page_text reads it), cut after the last line
that fits in VIEW_CHARS so that no file makes the view large: `cut` and `note` then say so
and where get_document reads on. Of the view, the first MARKDOWN_CHARS are rendered as
markdown and the rest is shown as written (rendering/renderer.py's `render_view`).
"""

from __future__ import annotations

import msgspec

from docdex.index_format.reassembly import reassemble
from docdex.index_format.records import ServedPage
from docdex.server.engine import VersionReader, breadcrumb

from .cursors import Lines
from .documents import page_summary
from .shapes import PageSummary, Section

VIEW_CHARS = 400_000  # about 100 printed pages


class PageView(msgspec.Struct):
    page: PageSummary  # what query_docs says of it: ids, title, dates, its last commit
    size: int  # bytes of the file at `page.commit`
    html: str  # the rendered markdown (renderer.py): escaped, links checked, no images fetched
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
    index: VersionReader, page: ServedPage, limit: int = VIEW_CHARS, site_dir: str = ""
) -> PageView:
    """The page rendered; links to the site's addresses (its `site_dir`, else the usual
    docs folders) lead to the pages docdex holds."""
    # markdown-it: 30 ms a start does not need
    from docdex.server.rendering.renderer import Where, render_view
    from docdex.server.rendering.site_map import SiteMap

    chunks = index.page_chunks(page)
    lines = Lines(reassemble(chunks, page.front_matter))
    window = lines.window(0, len(lines.text), limit)
    where = Where(page.source, page.path, SiteMap(page.source, index.pages.keys(), site_dir))
    cut = window.next_offset is not None
    rendered = render_view(window.text, where, front_matter_lines(page), window.start_line)
    note = ""
    if rendered.plain_from:
        note = f"Lines {rendered.plain_from:,} onwards are shown as written, not rendered. "
    if cut:
        note += (
            f"This page is {len(lines.text):,} characters long; the view stops after line "
            f"{window.end_line} of {lines.last_line}. get_document(doc_id={page.doc_id!r}, "
            f"start_line={window.end_line + 1}) reads on."
        )
    return PageView(
        page=page_summary(page, index.ref_of(page.source)),
        size=page.size,
        html=rendered.html,
        first_line=window.start_line,
        last_line=window.end_line,
        lines=lines.last_line,
        cut=cut,
        note=note.strip(),
        sections=[
            Section(c.chunk_id, breadcrumb(c.headings), c.start_line, c.end_line) for c in chunks
        ],
        index_version=index.version,
    )
