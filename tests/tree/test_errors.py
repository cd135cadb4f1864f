"""One error root: every exception docdex defines is a `DocdexError`, which each entry point
catches once (the CLI's one line is in tests/cli/test_cli.py, HTTP's statuses and MCP's tool
errors in tests/server/answers/test_edge_ids.py)."""

from __future__ import annotations

import importlib
import inspect

from docdex.errors import DocdexError

from lint_imports import package_dirs


def docdex_modules() -> list[str]:
    """Every module of the package but the `__main__` ones (importing those runs them)."""
    names = set()
    for package, folder in package_dirs().items():
        for path in folder.rglob("*.py"):
            parts = [*package.split("."), *path.relative_to(folder).with_suffix("").parts]
            if parts[-1] != "__main__":
                names.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return sorted(names)


def test_every_exception_docdex_defines_is_a_docdex_error() -> None:
    defined = {
        f"{module}.{name}": value
        for module in docdex_modules()
        for name, value in inspect.getmembers(importlib.import_module(module), inspect.isclass)
        if issubclass(value, BaseException) and value.__module__ == module
    }
    assert len(defined) >= 20  # the scan found the package's errors
    assert [name for name, kind in defined.items() if not issubclass(kind, DocdexError)] == []
