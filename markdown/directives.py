"""One-line directives, each standing for something a page does not write out:
mkdocstrings' `::: package.module` (what a page documents), DocFX's `:::image ... :::`
and `:::code ... :::`, mdBook's `{{#include path}}` and MkDocs snippets' `--8<-- "path"`
(a file's text)."""

from __future__ import annotations

import re

_AUTODOC = re.compile(r"^[ \t]*:::[ \t]+([A-Za-z_][\w-]*(?:\.[\w-]+)+)[ \t]*$")
# DocFX's one-line directives: `:::image type="content" source="a.png" alt-text="A":::`.
_DOCFX = re.compile(r"^[ \t]*:::([a-z][\w-]*)\b(.*?):::[ \t]*$")
_DOCFX_ATTRIBUTE = re.compile(r'([\w-]+)="([^"]*)"')
_MDBOOK = re.compile(r"^[ \t]*+\{\{#([a-z_]++)[ \t]++([^}]*+)\}\}[ \t]*+$")
_SNIPPET = re.compile(r"""^[ \t]*--8<--[ \t]+(?:"([^"\n]+)"|'([^'\n]+)'|(\S+))[ \t]*$""")


def is_colon_directive(line: str) -> bool:
    """Whether a `:::` line is a mkdocstrings or DocFX directive (no container's fence)."""
    return bool(_AUTODOC.match(line) or _DOCFX.match(line))


def autodoc_target(line: str) -> str:
    """The object a mkdocstrings `::: package.module.Name` line documents ("" if none)."""
    match = _AUTODOC.match(line) if line.lstrip(" \t")[:3] == ":::" else None
    return match.group(1) if match else ""


def docfx_directive(line: str) -> tuple[str, dict[str, str]] | None:
    """(name, attributes) of a DocFX one-line directive (`:::image ... :::`)."""
    match = _DOCFX.match(line) if line.lstrip(" \t")[:3] == ":::" else None
    if not match:
        return None
    return match.group(1), dict(_DOCFX_ATTRIBUTE.findall(match.group(2)))


def mdbook_directive(line: str) -> tuple[str, str] | None:
    """(name, argument) of an mdBook `{{#include path}}` line (also `rustdoc_include`,
    `playground`, `title`)."""
    match = _MDBOOK.match(line) if "{{#" in line else None
    return (match.group(1), match.group(2).rstrip(" \t")) if match else None


def snippet_path(line: str) -> str:
    """The file a MkDocs `--8<-- "path"` line includes ("" if the line is no such line)."""
    match = _SNIPPET.match(line) if "--8<--" in line else None
    return next(group for group in match.groups() if group) if match else ""
