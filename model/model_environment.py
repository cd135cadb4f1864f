"""What the models take from the process's environment, as one value handed down.

The entry point that read the environment (runtime/environment.py) builds one
`ModelEnvironment` and passes it to whatever builds an embedder or a reranker, so no module
below an entry point reads the environment and no setting stays behind in a module for the
next caller. It holds:

- the cache directory (DOCDEX_CACHE): what is computed once per machine, the optimised
  graphs (sessions.py) and the weights' digest (files.py);
- the variables a configured model names, as they are, read when needed: the one a
  `[models.NAME]` table's `api_key_env` names (an endpoint's API key), HF_ENDPOINT and
  HF_TOKEN (`docdex model pull`'s hub and its token).

`ModelEnvironment()` is an unconfigured process's: the cache under ~/.cache/docdex, no
variables.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

NO_VARIABLES: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True)
class ModelEnvironment:
    """The cache directory and the variables of one process (see the module's docstring)."""

    cache_dir: Path | None = None  # None: ~/.cache/docdex
    # never shown (it holds API keys), and not part of equality: two environments with one
    # cache are the same to whatever compares settings
    variables: Mapping[str, str] = field(
        default_factory=lambda: NO_VARIABLES, repr=False, compare=False
    )

    def cache_folder(self, name: str) -> Path | None:
        """`name` under the cache directory, created; None if it cannot be written."""
        folder = (self.cache_dir or Path.home() / ".cache" / "docdex") / name
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            return None
        return folder if os.access(folder, os.W_OK) else None


UNCONFIGURED = ModelEnvironment()
