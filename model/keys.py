"""The variables a configured model names: an endpoint's API key (by the variable its
`[models.NAME]` table names) and the hub's address and token. The entry point that read the
environment hands it over (`use_variables`), as it does the cache directory (files.py), so
no module below an entry point reads the process's environment itself."""

from __future__ import annotations

from collections.abc import Mapping

_variables: Mapping[str, str] = {}


def use_variables(variables: Mapping[str, str]) -> None:
    global _variables
    _variables = variables


def variables() -> Mapping[str, str]:
    return _variables
