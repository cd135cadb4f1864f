"""What a title or breadcrumb heading must not carry: a docs dialect's markup (heading ids,
MDX comments, shortcodes, mdBook includes, container and admonition markers, a component's
tag). In the real corpora's headings `Rc<T>` and PowerShell's `Name <String>` are the words
themselves: a component's tag has attributes, closes, or closes itself."""

from __future__ import annotations

import re

MARKUP_RESIDUE = re.compile(
    r"\{#|\{:|\{/\*|\{\{<|\{\{%|\{\{#|:::|!!!|</[A-Z]|<[A-Z][\w.]*(?:\s+[\w-]+=|\s*/>)"
)
