"""MkDocs admonitions (admonition, pymdownx.details): `!!! note "Title"`, the folding
`??? note` and `???+ note`, their body the lines indented below them. (Sphinx's `.. note::`
is reStructuredText, not markdown: nothing here reads it.)"""

from __future__ import annotations

import re

from .callouts import Callout, callout

# `!!! type "title"`, `??? type`, `???+ type`, with options such as `inline end` after the
# type.
_MKDOCS = re.compile(r'^[ \t]*+(!!!|\?\?\?\+?)[ \t]++([\w-]++)([^"]*+)(?:"([^"]*+)")?[ \t]*+$')
_MKDOCS_OPTIONS = re.compile(r"[\w \t-]*+")


def mkdocs_admonition(line: str) -> Callout | None:
    """The callout a MkDocs admonition line opens (its body: the lines indented below it)."""
    if line.lstrip(" \t")[:1] not in ("!", "?"):
        return None
    match = _MKDOCS.match(line)
    if not match:
        return None
    marker, name, options, title = match.groups()
    if not _MKDOCS_OPTIONS.fullmatch(options):
        return None
    folds, open = marker.startswith("?"), marker == "???+"
    return callout(name, title, folds, open) or Callout("note", name, title, folds, open)
