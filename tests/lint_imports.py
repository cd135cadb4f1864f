"""Check the import contracts of pyproject.toml ([tool.importlinter]) with import-linter, and
that no module imports another module's private (underscore) names.

`python tests/lint_imports.py` (run by `just lint` and `.ci/run`); tests/test_layers.py runs
it too, and shows that a forbidden import breaks it. The package's directories sit side by
side at the top of the repository and pyproject.toml maps them into one `docdex` package;
import-linter walks a package's directory, so they are linked into one `docdex` tree first.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "docdex"


def package_dirs(root: Path = ROOT) -> dict[str, Path]:
    """Each package of the distribution -> its source directory (pyproject.toml's mapping)."""
    setup = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    return {name: root / path for name, path in setup["package-dir"].items()}


def build_tree(target: Path, root: Path = ROOT, copy: bool = False) -> Path:
    """`target`/docdex laid out as Python imports it, from symlinks (or copies) of the
    source directories; returns the tree's root, to put on PYTHONPATH."""
    for name, source in sorted(package_dirs(root).items()):
        place = target.joinpath(*name.split("."))
        for item in source.rglob("*.py"):  # subpackages such as indexer/git/ too
            link = place / item.relative_to(source)
            link.parent.mkdir(parents=True, exist_ok=True)
            if copy:
                shutil.copy2(item, link)
            else:
                link.symlink_to(item)
    return target


def lint_contracts(tree: Path, root: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """Run import-linter over `tree` with the contracts of `root`'s pyproject.toml."""
    lint = Path(sys.executable).with_name("lint-imports")
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [str(lint), str(root / "pyproject.toml"), "--no-cache"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def private_imports(tree: Path) -> list[str]:
    """`from docdex.X import _name` (or `from .X import _name`) anywhere in the tree."""
    found = []
    for path in sorted(tree.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ImportFrom):
                continue
            internal = node.level > 0 or (node.module or "").startswith(PACKAGE)
            for name in (alias.name for alias in node.names):
                if internal and name.startswith("_") and not name.startswith("__"):
                    found.append(f"{path.relative_to(tree)}: imports {name} from {node.module}")
    return found


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="docdex-layers-") as tmp:
        tree = build_tree(Path(tmp))
        done = lint_contracts(tree)
        print(done.stdout, end="")
        print(done.stderr, end="", file=sys.stderr)
        private = private_imports(tree)
    for line in private:
        print(f"private import: {line}", file=sys.stderr)
    return done.returncode or (1 if private else 0)


if __name__ == "__main__":
    sys.exit(main())
