"""Check the import contracts of pyproject.toml ([tool.importlinter]) with import-linter,
that no module imports another module's private (underscore) names, that the packages
with a public face (ENCAPSULATED) are used through it (outside such a package, its modules
are never imported, only the names the package itself exports), and that the tree's names
say what they hold: no two modules share a basename unless they mean the same thing
(SHARED_NAMES), and no folder holds more than MAX_MODULES modules.

`python tests/support/lint_imports.py` (run by `just lint` and `.ci/run`);
tests/tree/test_layers.py and test_names.py run it too, and show that a forbidden import or
name breaks it. The package's directories sit side by side at the top of the repository and
pyproject.toml maps them into one `docdex` package; import-linter walks a package's
directory, so they are linked into one `docdex` tree first.
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

from paths import ROOT

PACKAGE = "docdex"
ENCAPSULATED = ("docdex.server.engine", "docdex.history")
# Basenames two modules may share because they mean the same thing in each place: a
# package's own settings value, and the routes of the app or sub-app it builds.
SHARED_NAMES = ("settings.py", "routes.py")
MAX_MODULES = 15  # per folder, __init__.py and __main__.py not counted


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


def reached_inside(tree: Path, others: tuple[Path, ...] = ()) -> list[str]:
    """`from docdex.server.engine.loaded import ...` and the like outside the package, in the
    tree and in the other directories given (the benches)."""
    found = []
    for root in (tree, *others):
        for path in sorted(root.rglob("*.py")):
            module = _module_name(path, root) if root == tree else ""
            for target in _imported_modules(path, module, tree):
                for package in ENCAPSULATED:
                    inside = module == package or module.startswith(package + ".")
                    if target.startswith(package + ".") and not inside:
                        found.append(f"{path.relative_to(root)}: imports {target}")
    return found


def _module_name(path: Path, tree: Path) -> str:
    parts = path.relative_to(tree).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported_modules(path: Path, module: str, tree: Path) -> list[str]:
    """The modules `path` imports, absolute (relative imports resolved), a submodule named
    in `from package import submodule` included."""
    out = []
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            out.append(source)
            out += [f"{source}.{a.name}" for a in node.names if _is_module(tree, source, a.name)]
        elif isinstance(node, ast.Import):
            out += [alias.name for alias in node.names]
    return out


def _is_module(tree: Path, package: str, name: str) -> bool:
    place = tree.joinpath(*package.split("."), name)
    return place.with_suffix(".py").is_file() or (place / "__init__.py").is_file()


def repeated_names(tree: Path) -> list[str]:
    """Module basenames that more than one module of the tree has (SHARED_NAMES aside)."""
    places: dict[str, list[str]] = {}
    for path in sorted(tree.rglob("*.py")):
        if path.name not in ("__init__.py", "__main__.py", *SHARED_NAMES):
            places.setdefault(path.name, []).append(str(path.relative_to(tree)))
    return [f"{name}: {', '.join(where)}" for name, where in places.items() if len(where) > 1]


def crowded_folders(tree: Path) -> list[str]:
    """Folders of the tree that hold more than MAX_MODULES modules."""
    found = []
    for folder in sorted({path.parent for path in tree.rglob("*.py")}):
        modules = [p for p in folder.glob("*.py") if p.name not in ("__init__.py", "__main__.py")]
        if len(modules) > MAX_MODULES:
            found.append(f"{folder.relative_to(tree)}: {len(modules)} modules")
    return found


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="docdex-layers-") as tmp:
        tree = build_tree(Path(tmp))
        done = lint_contracts(tree)
        print(done.stdout, end="")
        print(done.stderr, end="", file=sys.stderr)
        private = private_imports(tree)
        inside = reached_inside(tree, (ROOT / "bench",))
        names, crowded = repeated_names(tree), crowded_folders(tree)
    for line in private:
        print(f"private import: {line}", file=sys.stderr)
    for line in inside:
        print(f"reaches inside {', '.join(ENCAPSULATED)}: {line}", file=sys.stderr)
    for line in names:
        print(f"one name, two modules: {line}", file=sys.stderr)
    for line in crowded:
        print(f"more than {MAX_MODULES} modules in a folder: {line}", file=sys.stderr)
    return done.returncode or (1 if private or inside or names or crowded else 0)


if __name__ == "__main__":
    sys.exit(main())
