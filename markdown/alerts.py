"""Alerts: a blockquote whose first line is `[!NOTE]`, `[!TIP]+ Title` (GitHub, DocFX,
Obsidian and Hugo)."""

from __future__ import annotations

import re

from .callouts import Callout, callout

_ALERT = re.compile(r"^[ \t]*\[!([A-Za-z]+)\]([+-]?)[ \t]*(.*)$")


def alert(first_line: str) -> Callout | None:
    """The callout a blockquote's first line opens with `[!TYPE]`; the rest of the line is
    its title (Obsidian and Hugo write one; GitHub and DocFX none)."""
    if "[!" not in first_line[:40]:
        return None
    match = _ALERT.match(first_line)
    if not match:
        return None
    name, fold, rest = match.groups()
    return callout(name, rest or None, folds=bool(fold), open=fold == "+")
