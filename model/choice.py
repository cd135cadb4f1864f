"""The embedder a configuration or a manifest names, as one `TextEmbedder`: the shipped
model (None), an ONNX export directory or an OpenAI-compatible endpoint (index-format's
model_tables.py). The indexer asks for its identity before a run and loads it at the first text
to embed; the server loads the one each version was built with, from its manifest. Each
takes the `ModelEnvironment` its entry point built: the cache directory, an endpoint's key."""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from docdex.index_format.model_tables import (
    EmbedderSpec,
    EndpointEmbedder,
    OnnxEmbedder,
    ShippedEmbedder,
)
from docdex.index_format.records import EmbedderInfo

from .model_environment import ModelEnvironment
from .protocol import TextEmbedder


def embedder_identity(
    spec: EmbedderSpec | None,
    window_tokens: int,
    window_overlap: int,
    known: EmbedderInfo | None = None,
    *,
    model_environment: ModelEnvironment,
) -> EmbedderInfo:
    """What a manifest records of the embedder and content hashes are keyed by, without
    loading it (an endpoint whose dimension `known` does not give answers one probe)."""
    if spec is None or isinstance(spec, ShippedEmbedder):
        from .files import model_info

        info = model_info(window_tokens, window_overlap, model_environment)
        return shipped_identity(info, spec)
    if isinstance(spec, OnnxEmbedder):
        from .onnx_dir import onnx_info

        return onnx_info(spec, window_tokens, window_overlap, 0, model_environment)
    from .endpoint import endpoint_info

    variables = model_environment.variables
    return endpoint_info(spec, window_tokens, window_overlap, known, environ=variables)


def load_embedder(
    spec: EmbedderSpec | None,
    *,
    threads: int,
    window_tokens: int,
    window_overlap: int,
    for_queries: bool = False,
    info: EmbedderInfo | None = None,
    model_environment: ModelEnvironment,
) -> TextEmbedder:
    """The embedder itself. `info`: its identity, when the caller has it already."""
    if spec is None or isinstance(spec, ShippedEmbedder):
        from .embedder import Embedder

        shipped = Embedder.load(
            threads,
            window_tokens,
            window_overlap,
            for_queries=for_queries,
            passages=spec.passages if spec is not None else "float32",
            model_environment=model_environment,
        )
        shipped.info = shipped_identity(shipped.info, spec)
        return shipped
    info = info or embedder_identity(
        spec, window_tokens, window_overlap, model_environment=model_environment
    )
    if isinstance(spec, OnnxEmbedder):
        from .onnx_dir import OnnxDirEmbedder

        return OnnxDirEmbedder.load(
            spec, threads, info.window_tokens, info.window_overlap, info, model_environment
        )
    from .endpoint import RemoteEmbedder

    return RemoteEmbedder(info, spec, environ=model_environment.variables)


def shipped_identity(info: EmbedderInfo, spec: ShippedEmbedder | None) -> EmbedderInfo:
    """The shipped model's identity, or that of its int8-passage form (its own id, with the
    revision of the int8 graph's vectors, so that no two of them reuse each other's)."""
    if spec is None:
        return info
    from .passagegraph import INT8_VECTORS

    passages = f"{spec.passages}-passages-{INT8_VECTORS}"
    return msgspec.structs.replace(info, id=f"{info.id}+{passages}", spec=spec)


def query_embedder(
    info: EmbedderInfo, threads: int, model_environment: ModelEnvironment
) -> TextEmbedder:
    """The model a version with this `EmbedderInfo` was built with, to embed queries (an
    endpoint with the short retries and time limit of a query, endpoint.py)."""
    if isinstance(info.spec, EndpointEmbedder):
        from .endpoint import QUERY_COOLDOWN_S, QUERY_RETRIES, QUERY_TIMEOUT_S, RemoteEmbedder

        spec = msgspec.structs.replace(
            info.spec,
            retries=min(info.spec.retries, QUERY_RETRIES),
            timeout_s=min(info.spec.timeout_s, QUERY_TIMEOUT_S),
        )
        variables = model_environment.variables
        return RemoteEmbedder(info, spec, environ=variables, cooldown_s=QUERY_COOLDOWN_S)
    return load_embedder(
        info.spec,
        threads=threads,
        window_tokens=info.window_tokens,
        window_overlap=info.window_overlap,
        for_queries=True,
        info=info,
        model_environment=model_environment,
    )


@dataclass(frozen=True)
class ModelView:
    """What `docdex model list` shows of one configured model."""

    role: str  # "embedder" | "reranker"
    name: str  # "minilm", or its [models.NAME]
    kind: str  # "minilm" | "onnx" | "openai" | "rerank" | a built-in reranker's name
    where: str  # the directory or the address ("" for the shipped model)


def describe(name: str, spec: EmbedderSpec | None) -> ModelView:
    if spec is None:
        return ModelView("embedder", name, "minilm", "")
    if isinstance(spec, ShippedEmbedder):
        return ModelView("embedder", name, "minilm", f"{spec.passages} passages")
    if isinstance(spec, OnnxEmbedder):
        return ModelView("embedder", name, "onnx", spec.path)
    assert isinstance(spec, EndpointEmbedder)
    from .endpoint import embeddings_url

    return ModelView("embedder", name, "openai", f"{embeddings_url(spec.url)} ({spec.model})")
