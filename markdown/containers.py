"""Docusaurus and VitePress containers: `:::tip`, `::: tip Title`, `:::note[Title]`, and the
lone `:::` that closes them (a run of colons at least as long as the opening one)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .directives import is_colon_directive

# mkdocstrings' `::: package.module` and DocFX's `:::image:::` are no containers
# (directives.py).
_COLON_FENCE = re.compile(r"^[ \t]*(:{3,})[ \t]*([A-Za-z][\w-]*)?(?:[ \t]*\[([^\]]*)\])?(.*)$")


@dataclass(frozen=True)
class ColonFence:
    markers: int  # how many colons: a container closes at a lone run at least as long
    name: str  # "" for a closing line
    title: str | None  # None when none is written


def colon_fence(line: str) -> ColonFence | None:
    """A Docusaurus/VitePress container line (`:::tip Title`, `:::`), not a directive."""
    if line.lstrip(" \t")[:3] != ":::" or is_colon_directive(line):
        return None
    match = _COLON_FENCE.match(line)
    if not match:
        return None
    colons, name, bracketed, rest = match.groups()
    title = bracketed if bracketed is not None else (rest.strip() or None)
    if not name and title is not None:
        return None  # `::: ` followed by something that names nothing
    return ColonFence(len(colons), name or "", title)
