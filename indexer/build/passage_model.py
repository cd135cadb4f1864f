"""The model that embeds passages during a run, loaded at the first text that needs it, so a
run that embeds nothing (nothing changed, renames, deletions) never loads it."""

from __future__ import annotations

from docdex.index_format.config import (
    Settings,
)
from docdex.model.embedder import Embedder


def load_passage_model(settings: Settings) -> Embedder:
    """The model that embeds passages, as `settings` configure it."""
    return Embedder.load(
        threads=settings.threads or None,
        window_tokens=settings.window_tokens,
        window_overlap=settings.window_overlap,
    )


class LazyModel:
    """The model, loaded once at the first call: a run that embeds nothing (nothing changed,
    renames, deletions) never loads it. `release()` drops a model the run loaded itself once
    nothing is left to embed, so that compaction's merge buffers do not sit on top of its
    session (about 80 MB of PowerShell-Docs' peak; adr/0024)."""

    def __init__(self, settings: Settings, given: Embedder | None) -> None:
        self._settings, self._given = settings, given
        self._loaded: Embedder | None = None

    def __call__(self) -> Embedder:
        if self._given is not None:
            return self._given
        if self._loaded is None:
            self._loaded = load_passage_model(self._settings)
        return self._loaded

    def release(self) -> None:
        self._loaded = None
