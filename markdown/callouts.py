"""Callouts: the boxes docs generators draw around a note, a tip or a warning, whatever
their syntax (admonitions.py, containers.py, alerts.py, hints.py, callout_components.py;
Hugo's shortcodes, template_tags.py), each one of five kinds."""

from __future__ import annotations

from dataclasses import dataclass

CALLOUT_KINDS = ("note", "tip", "important", "warning", "danger")
# The names generators give their callouts, each shown as one of CALLOUT_KINDS.
_KIND_OF = {
    name: kind
    for kind, names in {
        "note": "note info abstract summary tldr seealso example quote cite remark details"
        " question help faq todo",
        "tip": "tip hint success check done",
        "important": "important",
        "warning": "warning caution attention alert",
        "danger": "danger error failure fail missing bug",
    }.items()
    for name in names.split()
}


@dataclass(frozen=True)
class Callout:
    """A callout as a reader sees it: its kind, its name and title as written, whether it
    folds."""

    kind: str  # one of CALLOUT_KINDS: how it looks
    name: str  # as written: "note", "NOTE", "details"
    title: str | None = None  # as written; None when none is ("" = explicitly none)
    folds: bool = False  # collapsible (MkDocs `???`, VitePress `::: details`)
    open: bool = False  # collapsible and open at first (`???+`)

    @property
    def label(self) -> str:
        """The title a reader sees: the written one, else the name capitalised."""
        return self.name.capitalize() if self.title is None else self.title


def callout(
    name: str, title: str | None = None, folds: bool = False, open: bool = False
) -> Callout | None:
    """The callout a generator's name stands for, or None if the name is no callout's."""
    kind = _KIND_OF.get(name.lower())
    if kind is None:
        return None
    folds = folds or name.lower() == "details"
    return Callout(kind, name, None if title is None else title.strip(), folds, open)
