"""A page view's cost is bounded by structure, not by machine speed: markdown-it renders at
most MARKDOWN_CHARS of it, the rest is shown as written, every line of the view numbered."""

from __future__ import annotations

import re
from html import unescape

from docdex.server.answers.page_views import page_view
from docdex.server.rendering import renderer
from docdex.server.rendering.renderer import MARKDOWN_CHARS, split_for_rendering

from bench.faults.cost import PageAlone

PATH = "dense.md"


def one_page(text: str) -> PageAlone:
    """A version reader's members page_view reads, over one page of one chunk a line."""
    lines = text.split("\n")
    return PageAlone(
        "docs", PATH, "Dense", text, [(["Dense"], x, n, n) for n, x in enumerate(lines, 1)]
    )


def test_a_heading_dense_view_renders_a_bounded_part_as_markdown(monkeypatch):
    text = "\n".join(f"## Heading {n}" for n in range(40_000))  # about 540 KB
    given: list[int] = []
    real = renderer.render_markdown

    def measured(source: str, *args, **kwargs) -> str:
        given.append(len(source))
        return real(source, *args, **kwargs)

    monkeypatch.setattr(renderer, "render_markdown", measured)
    engine = one_page(text)
    view = page_view(engine, engine.page)  # type: ignore[arg-type]
    assert given and max(given) <= MARKDOWN_CHARS
    assert view.cut and "onwards are shown as written" in view.note
    # every line of the view is in a numbered block, rendered or shown as written
    spans = [
        (int(a), int(b)) for a, b in re.findall(r'data-first="(\d+)" data-last="(\d+)"', view.html)
    ]
    assert spans[0][0] == 1 and spans[-1][1] == view.last_line
    assert all(a[1] < b[0] for a, b in zip(spans, spans[1:], strict=False))
    plain = re.findall(r'class="blk plain"[^>]*><pre><code>(.*?)</code>', view.html, re.S)
    shown = unescape("\n".join(plain)).split("\n")
    assert shown[-1] == text.split("\n")[view.last_line - 1]


def test_a_view_within_the_bound_is_rendered_whole():
    text = "# Title\n\n" + "Some words.\n\n" * 100
    assert split_for_rendering(text, MARKDOWN_CHARS) == (text, "")
    rendered, rest = split_for_rendering("a\n\nb\nc", 5)
    assert (rendered, rest) == ("a", "\nb\nc")  # cut at the blank line, the rest from it
    assert renderer.plain_html("<b>\nx", 7).startswith(
        '<div class="blk plain" id="L7" data-first="7" data-last="8"><pre><code>&lt;b&gt;'
    )
