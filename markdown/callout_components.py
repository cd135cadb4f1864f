"""Callouts MDX pages write as components, alone on their lines: Docusaurus `<Admonition
type="tip" title="Title">`, Starlight `<Aside type="caution">`, Mintlify `<Note>` and
`<Warning>`, react.dev `<Pitfall>` and `<DeepDive>`; each ends at the line holding only
`</Name>`."""

from __future__ import annotations

import re

from .callouts import Callout, callout

_COMPONENT_LINE = re.compile(r"^[ \t]*<([A-Z]\w*)((?:\s[^<>]*)?)>[ \t]*$")
_COMPONENT_ATTRIBUTE = re.compile(r"""\b(type|title)=["']([^"']*)["']""")
_TYPED_COMPONENTS = ("Admonition", "Aside", "Callout")


def component_callout(line: str) -> Callout | None:
    """The callout a line holding only a component's opening tag stands for, if any (it
    ends at the line holding only `</Name>`)."""
    match = _COMPONENT_LINE.match(line) if line.lstrip(" \t")[:1] == "<" else None
    if not match:
        return None
    name, attributes = match.groups()
    given = dict(_COMPONENT_ATTRIBUTE.findall(attributes))
    title = given.get("title")
    if name in _TYPED_COMPONENTS:
        kind = given.get("type", "note")
        return callout(kind, title) or Callout("note", kind, title)
    if name == "Pitfall":
        return Callout("warning", name, title)
    if name == "DeepDive":
        return Callout("note", "Deep dive", title, folds=True)
    return callout(name, title)


def component_name(line: str) -> str:
    """The name of the component whose opening tag a line holds alone ("" if none)."""
    match = _COMPONENT_LINE.match(line) if line.lstrip(" \t")[:1] == "<" else None
    return match.group(1) if match else ""
