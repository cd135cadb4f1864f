"""An embedder behind an OpenAI-compatible `/v1/embeddings` endpoint (Ollama, llama.cpp
server, vLLM, text-embeddings-inference, LM Studio), over the standard library's urllib.

A text is cut into windows of about `window_chars` characters at whitespace (the server
knows the tokens, we do not), each led by the passage prefix and sent `batch` at a time,
with the passage `input_type` when the table names one (a server that picks the prefix
itself: queries go with the query type).
A 429, a 5xx, a refused or lost connection and a request past `timeout_s` are retried with
exponential backoff (a Retry-After the server gives is honoured, up to a bound); what is
still failing after `retries` retries, and any other answer, is one `EmbedderUnavailable`
sentence. The API key is read from the variable `api_key_env` names, at each request; it
is sent to the configured address only (a redirect is refused, not followed) and redacted
from every sentence (an error body quoted in one may echo it). An answer is read up to a
bound that follows from what was asked, and its vectors must be finite and not zero.

Its identity (`endpoint_info`) is the model's name and a digest of every option that
changes a vector (prefixes, input types, windows, dimensions, `revision`), not the URL:
moving the server keeps the vectors, and a changed model behind the same name needs a new
`revision`.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from docdex.index_format.model_tables import EndpointEmbedder, RerankEndpoint
from docdex.index_format.records import EmbedderInfo
from docdex.runtime.redaction import redact

from .model_environment import NO_VARIABLES
from .outage import Failure, Outage
from .protocol import EmbedderUnavailable, ProgressFn
from .windows import unit_rows

FIRST_DELAY_S = 0.5  # the first retry's wait; each next one doubles, up to MAX_DELAY_S
MAX_DELAY_S = 8.0
MAX_RETRY_AFTER_S = 30.0
PROBE_TEXT = "dimension probe"
# Queries are interactive: at most one retry within 10 s a request, and after a failure the
# endpoint is left alone for 30 s (the engine answers by BM25 meanwhile, adr/0039).
QUERY_RETRIES = 1
QUERY_TIMEOUT_S = 10.0
QUERY_COOLDOWN_S = 30.0
# An answer is read up to a bound: what was asked as JSON numbers, and room for the rest.
ANSWER_FLOOR_BYTES = 1 << 20
BYTES_PER_NUMBER = 30  # "-0.012345678901234567, " with room to spare
UNKNOWN_DIMENSIONS = 8192  # what a vector is allowed before its dimension is known
Sleep = Callable[[float], None]


@dataclass(frozen=True)
class Asked:
    """What a request asks for: `inputs` texts, `numbers` numbers answered for each."""

    inputs: int
    numbers: int

    @property
    def max_bytes(self) -> int:
        return ANSWER_FLOOR_BYTES + self.inputs * self.numbers * BYTES_PER_NUMBER

    def __str__(self) -> str:
        return f"{self.inputs} input{'s' if self.inputs != 1 else ''}"


def embeddings_url(url: str) -> str:
    """The address requests go to: `url` itself when it ends in /embeddings, else its
    /v1/embeddings (a bare host) or its /embeddings (a base such as http://host/v1)."""
    url = url.rstrip("/")
    if url.endswith("/embeddings"):
        return url
    rest = url.split("://", 1)[-1]
    return url + ("/v1/embeddings" if "/" not in rest else "/embeddings")


def endpoint_info(
    spec: EndpointEmbedder,
    window_tokens: int,
    window_overlap: int,
    known: EmbedderInfo | None = None,
    sleep: Sleep = time.sleep,
    environ: Mapping[str, str] = NO_VARIABLES,
) -> EmbedderInfo:
    """The endpoint's identity; the dimension is `known`'s when it has the same identity (a
    version made with it recorded it), else `spec.dimensions`, else learned from the
    answer to one probe request."""
    options: list[object] = [
        spec.model,
        spec.passage_prefix,
        spec.query_prefix,
        spec.window_chars,
        spec.dimensions,
        spec.revision,
    ]
    if spec.query_input_type or spec.passage_input_type:  # a table without them keeps its id
        options += [spec.query_input_type, spec.passage_input_type]
    digest = hashlib.sha256(json.dumps(options).encode()).hexdigest()
    identity = f"openai:{spec.model}:{digest[:12]}"
    dim = known.dim if known is not None and known.id == identity else 0
    info = EmbedderInfo(
        id=identity,
        dim=dim or spec.dimensions,
        sha256=digest,
        window_tokens=window_tokens,
        window_overlap=window_overlap,
        spec=spec,
    )
    if not info.dim:
        probe = RemoteEmbedder(info, spec, sleep=sleep, environ=environ).request(
            [spec.passage_prefix + PROBE_TEXT], spec.passage_input_type
        )
        info = EmbedderInfo(info.id, probe.shape[1], digest, window_tokens, window_overlap, spec)
    return info


class RemoteEmbedder:
    """Embeddings from an OpenAI-compatible endpoint (see the module's docstring)."""

    graph = "endpoint"

    def __init__(
        self,
        info: EmbedderInfo,
        spec: EndpointEmbedder,
        sleep: Sleep = time.sleep,
        environ: Mapping[str, str] = NO_VARIABLES,  # holds the key `api_key_env` names
        cooldown_s: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._info = info
        self.spec = spec
        self.url = embeddings_url(spec.url)
        self.sleep = sleep
        self.environ = environ
        self.outage = Outage("embedder", self.url, cooldown_s, clock)

    @property
    def info(self) -> EmbedderInfo:
        return self._info

    @property
    def failure(self) -> Failure | None:
        """How the endpoint is failing (None: its last request was answered)."""
        return self.outage.failure

    def embed_texts(
        self, texts: list[str], progress: ProgressFn | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        windows: list[str] = []
        owners: list[int] = []
        overlap = self.spec.window_chars // 6
        for i, text in enumerate(texts):
            for part in char_windows(text, self.spec.window_chars, overlap):
                windows.append(self.spec.passage_prefix + part or " ")  # no server takes ""
                owners.append(i)
        out = np.empty((len(windows), self.info.dim), dtype=np.float32)
        for start in range(0, len(windows), self.spec.batch):
            batch = windows[start : start + self.spec.batch]
            out[start : start + len(batch)] = self.request(batch, self.spec.passage_input_type)
            if progress is not None:
                progress(len(batch))
        return out, np.asarray(owners, dtype=np.int32)

    def embed_query(self, text: str) -> np.ndarray:
        first = char_windows(text, self.spec.window_chars, 0)[0]
        return self.request([self.spec.query_prefix + first or " "], self.spec.query_input_type)[0]

    def request(self, inputs: list[str], input_type: str = "") -> np.ndarray:
        """(len(inputs), dim) unit vectors, in input order; `input_type` is sent when given."""
        body: dict[str, Any] = {"model": self.spec.model, "input": inputs}
        if self.spec.dimensions:
            body["dimensions"] = self.spec.dimensions
        if input_type:
            body["input_type"] = input_type
        asked = Asked(len(inputs), self.info.dim or UNKNOWN_DIMENSIONS)

        def ask() -> np.ndarray:
            answer = call_endpoint(self.spec, self.url, body, self.environ, self.sleep, asked)
            return self._vectors(answer, len(inputs))

        return self.outage.guard(ask)

    def _vectors(self, answer: Any, count: int) -> np.ndarray:
        try:
            items = sorted(answer["data"], key=lambda item: int(item.get("index", 0)))
            vectors = np.asarray([item["embedding"] for item in items], dtype=np.float32)
        except (KeyError, TypeError, ValueError, AttributeError):
            raise EmbedderUnavailable(
                f"the embedder at {self.url} answered without OpenAI's "
                '{"data": [{"embedding": [...]}]} shape'
            ) from None
        if vectors.ndim != 2 or len(vectors) != count:
            raise EmbedderUnavailable(
                f"the embedder at {self.url} answered {len(vectors)} vectors for {count} inputs"
            )
        if self.info.dim and vectors.shape[1] != self.info.dim:
            raise EmbedderUnavailable(
                f"the embedder at {self.url} answered vectors of {vectors.shape[1]} dimensions, "
                f"where {self.info.id} made {self.info.dim}: its model changed; give the "
                "model table another `revision` to embed everything again"
            )
        return unit_rows(self._directions(vectors))

    def _directions(self, vectors: np.ndarray) -> np.ndarray:
        """`vectors` when each is finite and not zero: no other has a direction to search by."""
        broken = ~np.isfinite(vectors).all(axis=1)
        what = "that is not finite (NaN or infinity)"
        if not broken.any():
            broken = np.linalg.norm(vectors, axis=1) < 1e-12
            what = "of all zeros"
        if broken.any():
            raise EmbedderUnavailable(
                f"the embedder at {self.url} answered a vector {what} for input "
                f"{int(np.argmax(broken))}; nothing it answered is kept (is its model loaded "
                "and sound?)"
            )
        return vectors


def char_windows(text: str, size: int, overlap: int) -> list[str]:
    """`text` in windows of at most `size` characters, cut at whitespace when there is
    some in a window's last fifth, consecutive ones sharing about `overlap` characters."""
    if len(text) <= size:
        return [text]
    out: list[str] = []
    start = 0
    while start < len(text):
        end = min(start + size, len(text))
        if end < len(text):
            cut = text.rfind(" ", start + size * 4 // 5, end)
            cut = max(cut, text.rfind("\n", start + size * 4 // 5, end))
            end = cut if cut > start else end
        out.append(text[start:end])
        if end >= len(text):
            break
        start = max(end - overlap, start + 1)
    return out


# --- requests -------------------------------------------------------------------------------


def call_endpoint(
    spec: EndpointEmbedder | RerankEndpoint,
    url: str,
    body: object,
    environ: Mapping[str, str],
    sleep: Sleep,
    asked: Asked,
    what: str = "embedder",
) -> Any:
    """`post_json` to a configured endpoint, with its key (by the variable its table
    names), its time limit and its retries."""
    name = spec.api_key_env
    key = environ.get(name, "") if name else ""
    if name and not key:
        raise EmbedderUnavailable(
            f"the {what} at {url} needs an API key in ${name} (its api_key_env), "
            "which is not set in this process's environment"
        )
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return post_json(
        url,
        body,
        asked,
        headers=headers,
        timeout_s=spec.timeout_s,
        retries=spec.retries,
        sleep=sleep,
        what=what,
        secret=key,
    )


class _RefuseRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect answers as the error it is: the key would follow it to any address."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_RefuseRedirects)


def post_json(
    url: str,
    body: object,
    asked: Asked,
    *,
    headers: Mapping[str, str],
    timeout_s: float,
    retries: int,
    sleep: Sleep = time.sleep,
    what: str = "embedder",
    secret: str = "",
) -> Any:
    """POST `body` as JSON and decode the answer (at most `asked.max_bytes` of it),
    retrying what may pass (see the module's docstring); EmbedderUnavailable says what
    failed, in one sentence, without `secret` or anything shaped like a key."""
    data = json.dumps(body).encode("utf-8")
    request = urllib.request.Request(
        url, data=data, method="POST", headers={"Content-Type": "application/json", **headers}
    )

    def failed(why: str) -> EmbedderUnavailable:
        return EmbedderUnavailable(redact(f"the {what} at {url} {why}", [secret]))

    attempt = 0
    raw: bytes | None = None
    while True:
        attempt += 1
        delay: float | None = None
        try:
            with _OPENER.open(request, timeout=timeout_s) as response:
                raw = _read_at_most(response, asked.max_bytes)
            break
        except urllib.error.HTTPError as exc:
            why = f"answered HTTP {exc.code} {exc.reason}"
            if 300 <= exc.code < 400:
                raise failed(_redirected(why, exc)) from None
            why += _excerpt(exc)
            if exc.code != 429 and exc.code < 500:
                raise failed(why) from None
            delay = _retry_after(exc.headers.get("Retry-After"))
        except TimeoutError:
            why = f"did not answer within its time limit ({timeout_s:g} s, timeout_s)"
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, TimeoutError):
                why = f"did not answer within its time limit ({timeout_s:g} s, timeout_s)"
            else:
                why = f"cannot be reached ({reason})"
        except (http.client.HTTPException, ConnectionError, OSError) as exc:
            why = f"dropped the connection ({type(exc).__name__}: {exc})"
        if attempt > retries:
            tries = f" after {attempt} attempts" if attempt > 1 else ""
            raise failed(why + tries)
        sleep(delay if delay is not None else min(MAX_DELAY_S, FIRST_DELAY_S * 2 ** (attempt - 1)))
    if raw is None:
        raise failed(
            f"answered more than {asked.max_bytes:,} bytes for {asked}, more than any answer "
            "to them holds (is the address an endpoint of its kind?)"
        )
    try:
        return json.loads(raw)
    except ValueError:
        raise failed("answered what is not JSON") from None


def _read_at_most(response: http.client.HTTPResponse, limit: int) -> bytes | None:
    """The answer's body, or None when it holds more than `limit` bytes (a length it
    announces is believed, so such an answer is not read at all)."""
    announced = response.headers.get("Content-Length", "")
    if announced.isdigit() and int(announced) > limit:
        return None
    raw = response.read(limit + 1)
    return raw if len(raw) <= limit else None


def _redirected(why: str, exc: urllib.error.HTTPError) -> str:
    where = exc.headers.get("Location", "")
    return (
        f"{why}{f', a redirect to {where}' if where else ''}: docdex follows no redirect "
        "(the API key would go with it); give the endpoint's final address in its "
        "[models.NAME] table"
    )


def _retry_after(value: str | None) -> float | None:
    try:
        return min(MAX_RETRY_AFTER_S, max(0.0, float(value))) if value else None
    except ValueError:
        return None


def _excerpt(exc: urllib.error.HTTPError) -> str:
    """The start of an error's body, for its sentence (which `post_json` redacts)."""
    try:
        text = exc.read(300).decode("utf-8", "replace").strip()
    except OSError:
        return ""
    return f": {' '.join(text.split())[:200]}" if text else ""
