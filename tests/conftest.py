from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from docdex.model.embedder import Embedder

from pagetext import ParsedCorpus, bundle_path, corpus_at_head, parse_corpus
from paths import SHARED


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The real ONNX model, loaded once for the whole run."""
    return Embedder.load()


@pytest.fixture(scope="session")
def shared() -> Path:
    if not (SHARED / "corpora").is_dir():
        pytest.skip(f"shared corpora not found at {SHARED}")
    return SHARED


@pytest.fixture(scope="session")
def parsed_corpus(tmp_path_factory) -> Callable[[str], ParsedCorpus]:
    """A shared corpus at its head, chunked once for the whole run (the page-text and the
    dialect tests read the same pages); skips when the bundle or git is missing."""
    parsed: dict[str, ParsedCorpus] = {}

    def of(name: str) -> ParsedCorpus:
        if not bundle_path(name).exists() or not shutil.which("git"):
            pytest.skip(f"no {name} bundle (or no git)")
        if name not in parsed:
            parsed[name] = parse_corpus(corpus_at_head(name, tmp_path_factory.mktemp(name)))
        return parsed[name]

    return of
