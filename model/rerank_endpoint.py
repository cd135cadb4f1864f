"""A reranker behind an HTTP endpoint: text-embeddings-inference's `/rerank`
(`{"query", "texts"}` -> `[{"index", "score"}]`) or the `/v1/rerank` of vLLM and llama.cpp
server (`{"model", "query", "documents"}` -> `{"results": [{"index", "relevance_score"}]}`),
told apart by the address. Requests are retried, bounded and kept to their address as the
embeddings endpoint's are (endpoint.py); a search's reranker (`for_queries`) has a short
time limit, one retry at most, and rests after a failure (the search keeps its fused
order meanwhile)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from docdex.index_format.model_tables import RerankEndpoint

from .endpoint import QUERY_COOLDOWN_S, QUERY_RETRIES, Asked, Sleep, call_endpoint
from .model_environment import NO_VARIABLES
from .outage import Failure, Outage
from .protocol import EmbedderUnavailable

# A rerank is one step of a search that has an answer without it: a few seconds at most.
RERANK_TIMEOUT_S = 5.0
SCORE_NUMBERS = 4  # the JSON of a score holds its index, its score and their names


class RemoteReranker:
    """Scores of (query, text) pairs from a rerank endpoint (see the module's docstring)."""

    def __init__(
        self,
        spec: RerankEndpoint,
        sleep: Sleep = time.sleep,
        environ: Mapping[str, str] = NO_VARIABLES,  # holds the key `api_key_env` names
        cooldown_s: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.spec = spec
        self.url = spec.url.rstrip("/")
        self.openai_style = self.url.endswith("/v1/rerank")
        self.sleep = sleep
        self.environ = environ
        self.outage = Outage("reranker", self.url, cooldown_s, clock)

    @classmethod
    def for_queries(
        cls,
        spec: RerankEndpoint,
        sleep: Sleep = time.sleep,
        environ: Mapping[str, str] = NO_VARIABLES,
        clock: Callable[[], float] = time.monotonic,
    ) -> RemoteReranker:
        """The reranker a search asks: at most QUERY_RETRIES retries of RERANK_TIMEOUT_S
        each (or less, as the table says), resting QUERY_COOLDOWN_S after a failure."""
        bounded = msgspec.structs.replace(
            spec,
            retries=min(spec.retries, QUERY_RETRIES),
            timeout_s=min(spec.timeout_s, RERANK_TIMEOUT_S),
        )
        return cls(bounded, sleep, environ, QUERY_COOLDOWN_S, clock)

    @property
    def failure(self) -> Failure | None:
        """How the endpoint is failing (None: its last request was answered)."""
        return self.outage.failure

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
        asked = Asked(len(texts), SCORE_NUMBERS)

        def ask() -> list[float]:
            answer = call_endpoint(
                self.spec, self.url, body, self.environ, self.sleep, asked, "reranker"
            )
            return self._scores(answer, len(texts))

        return self.outage.guard(ask)

    def _scores(self, answer: Any, count: int) -> list[float]:
        items: Any = answer.get("results") if isinstance(answer, dict) else answer
        out = [float("-inf")] * count  # a text the answer leaves out goes last
        given: list[float] = []
        try:
            for item in items:
                score = item["relevance_score"] if "relevance_score" in item else item["score"]
                out[int(item["index"])] = float(score)
                given.append(float(score))
        except (KeyError, TypeError, ValueError, IndexError):
            raise EmbedderUnavailable(
                f"the reranker at {self.url} answered without a score per text"
            ) from None
        if not all(map(math.isfinite, given)):
            raise EmbedderUnavailable(
                f"the reranker at {self.url} answered a score that is not finite (NaN or infinity)"
            )
        return out
