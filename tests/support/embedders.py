"""Wrappers around the real model that watch or hold what a run embeds."""

from __future__ import annotations

import threading


class Watched:
    """The real model, with a hook before each passage batch (`before_batch`) to override."""

    def __init__(self, embedder) -> None:
        self.embedder = embedder

    @property
    def info(self):
        return self.embedder.info

    @property
    def graph(self):
        return self.embedder.graph

    def before_batch(self, texts) -> None:
        pass

    def embed_texts(self, texts, *args, **kwargs):
        self.before_batch(texts)
        return self.embedder.embed_texts(texts, *args, **kwargs)

    def embed_query(self, text):
        return self.embedder.embed_query(text)


class Counting(Watched):
    """The real model, counting what it embeds; `fail_at`: the call that raises."""

    def __init__(self, embedder, fail_at: int | None = None) -> None:
        super().__init__(embedder)
        self.texts: list[str] = []
        self.calls = 0
        self.fail_at = fail_at

    def before_batch(self, texts) -> None:
        self.calls += 1
        if self.fail_at is not None and self.calls >= self.fail_at:
            raise RuntimeError("the model process was killed")
        self.texts += texts


class Paused(Watched):
    """The real model, holding its first embedding until `go` is set."""

    def __init__(self, embedder) -> None:
        super().__init__(embedder)
        self.reached, self.go = threading.Event(), threading.Event()

    def before_batch(self, texts) -> None:
        self.reached.set()
        assert self.go.wait(60)
