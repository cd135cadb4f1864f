"""GitBook hints: `{% hint style="info" %}` ... `{% endhint %}`."""

from __future__ import annotations

import re

from .callouts import Callout, callout

_GITBOOK_HINT = re.compile(
    r"""^[ \t]*\{%-?[ \t]*hint[ \t]+style=["']?(\w+)["']?[ \t]*-?%\}[ \t]*$"""
)
_GITBOOK_END = re.compile(r"^[ \t]*\{%-?[ \t]*endhint[ \t]*-?%\}[ \t]*$")


def gitbook_hint(line: str) -> Callout | None:
    """The callout a GitBook `{% hint style="..." %}` line opens."""
    match = _GITBOOK_HINT.match(line) if "hint" in line else None
    if not match:
        return None
    return callout(match.group(1), "") or Callout("note", match.group(1), "")


def closes_gitbook_hint(line: str) -> bool:
    return "endhint" in line and bool(_GITBOOK_END.match(line))
