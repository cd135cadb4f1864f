"""Attribute lists: the heading ids and classes generators let a page write in braces,
`{#id}`, `{#id .class key=value}`, `{: #id .class}` (Python-Markdown's attr_list, kramdown,
VitePress, Hugo), MDX's `{/*id*/}` (react.dev), and a line holding only one (kramdown and
attr_list block attributes)."""

from __future__ import annotations

import re

from .directives import autodoc_target

HEADING_LINE = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")
_ATX_MARKS = re.compile(r"^ {0,3}#{1,6}[ \t]+")
# `{#id}`, `{#id .class key=value}`, `{: #id }`, `{.class}` at the end of a heading; MDX's
# `{/*id*/}` (react.dev) too.
_HEADING_ATTRIBUTES = re.compile(
    r"\{[ \t]*+:?[ \t]*+[#.][^{}]*+\}[ \t]*+$|\{/\*[^{}]*+\*/\}[ \t]*+$"
)
_ATTRIBUTE_ID = re.compile(r"#([\w\-:.]+)|^\{/\*\s*([\w\-:.]+)\s*\*/\}$")
# A line of its own holding only an attribute list (kramdown and attr_list block IALs).
_ATTRIBUTE_LINE = re.compile(r"^[ \t]*\{:?[ \t]*[#.][^{}]*\}[ \t]*$")


def split_heading_id(text: str) -> tuple[str, str]:
    """A heading's text without a trailing attribute list, and the id it gives ("" if none)."""
    if not text.rstrip().endswith("}"):
        return text, ""
    attributes = _HEADING_ATTRIBUTES.match(text, text.rfind("{"))  # the last `{` opens it
    if not attributes:
        return text, ""
    found = _ATTRIBUTE_ID.search(attributes.group().strip())
    given = next((group for group in found.groups() if group), "") if found else ""
    return text[: attributes.start()].rstrip(" \t"), given


def heading_line_without_markup(line: str) -> tuple[str, str]:
    """An ATX heading line without its trailing attribute list, and without the `::: ` of a
    mkdocstrings heading (`#### ::: module.Name`); and the id the attributes give."""
    line, given = split_heading_id(line)
    marks = _ATX_MARKS.match(line)
    if marks and (target := autodoc_target(line[marks.end() :])):
        line = marks.group() + target
    return line, given


def is_attribute_line(line: str) -> bool:
    return line.rstrip().endswith("}") and bool(_ATTRIBUTE_LINE.match(line))
