"""A reranker behind an HTTP endpoint: text-embeddings-inference's `/rerank`
(`{"query", "texts"}` -> `[{"index", "score"}]`) or the `/v1/rerank` of vLLM and llama.cpp
server (`{"model", "query", "documents"}` -> `{"results": [{"index", "relevance_score"}]}`),
told apart by the address. Requests are retried as the embeddings endpoint's are."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from docdex.index_format.models import RerankEndpoint

from . import keys
from .endpoint import Sleep, call_endpoint
from .protocol import EmbedderUnavailable


class RemoteReranker:
    """Scores of (query, text) pairs from a rerank endpoint (see the module's docstring)."""

    def __init__(
        self,
        spec: RerankEndpoint,
        sleep: Sleep = time.sleep,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.spec = spec
        self.url = spec.url.rstrip("/")
        self.openai_style = self.url.endswith("/v1/rerank")
        self.sleep = sleep
        self.environ = keys.variables() if environ is None else environ

    def scores(self, query: str, texts: list[str]) -> list[float]:
        """One score per text, in the texts' order (higher is more relevant)."""
        if not texts:
            return []
        body: dict[str, Any] = {"query": query}
        if self.openai_style:
            body["documents"] = texts
            if self.spec.model:
                body["model"] = self.spec.model
        else:
            body["texts"] = texts
            body["truncate"] = True
        answer = call_endpoint(self.spec, self.url, body, self.environ, self.sleep, "reranker")
        return self._scores(answer, len(texts))

    def _scores(self, answer: Any, count: int) -> list[float]:
        items: Any = answer.get("results") if isinstance(answer, dict) else answer
        out = [float("-inf")] * count
        try:
            for item in items:
                score = item["relevance_score"] if "relevance_score" in item else item["score"]
                out[int(item["index"])] = float(score)
        except (KeyError, TypeError, ValueError, IndexError):
            raise EmbedderUnavailable(
                f"the reranker at {self.url} answered without a score per text"
            ) from None
        return out
