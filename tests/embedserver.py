"""A real HTTP server on 127.0.0.1, in a thread, that speaks the OpenAI embeddings API
(POST /v1/embeddings) and text-embeddings-inference's rerank API (POST /rerank, and
/v1/rerank as vLLM answers it), backed by the real model; its faults are switched on by
the tests: answers to fail with, a death after some requests, an answer held until an
event is set."""

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


class EmbeddingServer:
    """`with EmbeddingServer(embed) as server:` serves at `server.url` (…/v1)."""

    def __init__(self, embed: Callable[[list[str]], np.ndarray], model: str = "test-model"):
        self.embed = embed
        self.model = model
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
                if dying:  # no answer: the connection drops and the server goes away
                    threading.Thread(target=server.die, daemon=True).start()
                    self.close_connection = True
                    return
                if b.hold is not None:
                    b.hold.wait()
                if status:
                    self._send(status, {"error": {"message": "induced failure"}})
                elif self.path.rstrip("/").endswith("/embeddings"):
                    self._send(200, server.embeddings(body))
                elif self.path.rstrip("/").endswith("/rerank"):
                    self._send(200, server.rerank(self.path, body))
                else:
                    self._send(404, {"error": "not found"})

            def _send(self, status: int, answer: object) -> None:
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if status == 429 and server.behaviour.retry_after:
                    self.send_header("Retry-After", server.behaviour.retry_after)
                self.end_headers()
                self.wfile.write(data)

        return Handler

    def embeddings(self, body: dict) -> dict:
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        vectors = self.embed(inputs)
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
        if path.startswith("/v1/"):
            return {"results": [{"index": i, "relevance_score": s} for i, s in enumerate(scores)]}
        return [{"index": i, "score": s} for i, s in enumerate(scores)]
