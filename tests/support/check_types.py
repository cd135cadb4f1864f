"""Type-check the docdex package with mypy (settings: pyproject.toml, [tool.mypy]).

`python tests/support/check_types.py` (run by `just lint` and `.ci/run`). The package's directories
sit side by side at the top of the repository and pyproject.toml maps them into one
`docdex` package, so mypy reads a tree of links laid out as Python imports it
(lint_imports.build_tree).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from lint_imports import build_tree
from paths import ROOT


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="docdex-types-") as tmp:
        tree = build_tree(Path(tmp))
        config = ROOT / "pyproject.toml"
        command = [sys.executable, "-m", "mypy", "--config-file", str(config), "-p", "docdex"]
        return subprocess.run(command, cwd=tree, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
