"""The model that embeds passages during a run: its identity known before the run starts
(content hashes and the manifest need only that), the model itself loaded at the first text
that needs it, so a run that embeds nothing (nothing changed, renames, deletions) never
loads it. Both take the `ModelEnvironment` the entry point built (the cache directory, an
endpoint's key)."""

from __future__ import annotations

from docdex.index_format.config import Settings
from docdex.index_format.model_tables import EmbedderSpec, EndpointEmbedder
from docdex.index_format.records import EmbedderInfo, Manifest
from docdex.model.choice import embedder_identity, load_embedder
from docdex.model.model_environment import UNCONFIGURED, ModelEnvironment
from docdex.model.protocol import TextEmbedder


def passage_identity(
    settings: Settings,
    spec: EmbedderSpec | None,
    previous: Manifest | None,
    model_environment: ModelEnvironment,
) -> EmbedderInfo:
    """The configured embedder's identity; an endpoint's dimension comes from `previous`
    when it was built with the same model (else from one probe request)."""
    known = previous.embedder if previous is not None else None
    return embedder_identity(
        spec,
        settings.window_tokens,
        settings.window_overlap,
        known,
        model_environment=model_environment,
    )


def load_passage_model(
    settings: Settings,
    spec: EmbedderSpec | None = None,
    info: EmbedderInfo | None = None,
    model_environment: ModelEnvironment = UNCONFIGURED,
) -> TextEmbedder:
    """The model that embeds passages, as `settings` and the configured `spec` say."""
    return load_embedder(
        spec,
        threads=settings.cores(),
        window_tokens=settings.window_tokens,
        window_overlap=settings.window_overlap,
        info=info,
        model_environment=model_environment,
    )


def embeds_remotely(spec: EmbedderSpec | None) -> bool:
    """Whether embedding may fail on its own (an endpoint): each source's new text is then
    embedded before the next source is read, so a failure is that source's alone."""
    return isinstance(spec, EndpointEmbedder)


class LazyModel:
    """The model, loaded once at the first call: a run that embeds nothing (nothing changed,
    renames, deletions) never loads it. `release()` drops a model the run loaded itself once
    nothing is left to embed, so that compaction's merge buffers do not sit on top of its
    session (about 80 MB of PowerShell-Docs' peak; adr/0024)."""

    def __init__(
        self,
        settings: Settings,
        given: TextEmbedder | None,
        spec: EmbedderSpec | None,
        info: EmbedderInfo | None,
        model_environment: ModelEnvironment,
    ) -> None:
        self._settings, self._given = settings, given
        self.spec, self._info = spec, info
        self._model_environment = model_environment
        self._loaded: TextEmbedder | None = None

    def __call__(self) -> TextEmbedder:
        if self._given is not None:
            return self._given
        if self._loaded is None:
            self._loaded = load_passage_model(
                self._settings, self.spec, self._info, self._model_environment
            )
        return self._loaded

    def release(self) -> None:
        self._loaded = None
