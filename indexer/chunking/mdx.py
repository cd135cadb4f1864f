"""MDX: the markdown a page shows, without its JavaScript (adr/0018).

A page is MDX when its name ends in `.mdx`, or when a `.md` page uses syntax only MDX has:
an ESM import or export, a `{/* comment */}`, a JSX attribute holding an `{expression}`
(react.dev writes its pages so). The block parser then reads the page without its ESM
blocks, JSX tags and expressions (docdex.markdown.jsx.without_jsx, which the page
view shares): a component's children are kept and newlines stay, so lines still match the
file. That is parser input only, never a chunk's text.
"""

from __future__ import annotations

from docdex.markdown import jsx


def parser_lines(path: str, lines: list[str]) -> list[str]:
    """The lines the block parser reads: an MDX page's without its JavaScript, any other
    page's as they are (a copy)."""
    return jsx.without_jsx(lines) if jsx.is_mdx(path, lines) else list(lines)
