"""The layer contracts (pyproject.toml, docs/adr/0013) hold, and a forbidden import breaks
them: the check that `just lint` and .ci/run rely on can fail."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from lint_imports import build_tree, lint_contracts, private_imports, reached_inside
from paths import ROOT


def test_the_tree_keeps_every_contract(tmp_path: Path) -> None:
    tree = build_tree(tmp_path)
    assert (tree / "docdex/indexer/git/diffs.py").is_file()  # subpackages are linked too
    done = lint_contracts(tree)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout
    assert private_imports(tree) == []
    assert reached_inside(tree, (ROOT / "bench",)) == []


BREAKS = [
    # (module that gains an import, the import, the broken dependency the report names)
    (
        "server/engine/engine.py",
        "import docdex.indexer.run.pipeline",
        "server.engine.engine -> docdex.indexer",
    ),
    # the rooms inside each side (adr/0030)
    (
        "server/engine/engine.py",
        "from docdex.server.answers import docs",
        "engine.engine -> docdex.server.answers",
    ),
    ("server/answers/docs.py", "from docdex.server.mcp import tools", "docs -> docdex.server.mcp"),
    (
        "indexer/chunking/page_parser.py",
        "from docdex.indexer.sources import remote",
        "chunking.page_parser -> docdex.indexer.sources",
    ),
    (
        "indexer/sources/refs.py",
        "from docdex.indexer.run import pipeline",
        "sources.refs -> docdex.indexer.run",
    ),
    (
        "indexer/run/pipeline.py",
        "from docdex.server.engine import loaded",
        "run.pipeline -> docdex.server",
    ),
    (  # the rooms inside a run
        "indexer/run/storage/segments.py",
        "from docdex.indexer.run import context",
        "storage.segments -> docdex.indexer.run.context",
    ),
    (
        "hooks/installer.py",
        "import docdex.indexer.triggers.worker",
        "hooks.installer -> docdex.indexer",
    ),
    ("index_format/store.py", "import docdex.model.files", "store -> docdex.model.files"),
    ("model/files.py", "import docdex.server.engine.search", "model.files -> docdex.server"),
    ("model/sessions.py", "from . import embedder", ".sessions -> .embedder"),  # a cycle
    ("indexer/git/repo.py", "from . import history", ".repo -> .history"),  # a cycle
    # the history both sides read sits below them, beside the model
    ("history/reader.py", "import docdex.server.answers.docs", "history.reader -> docdex.server"),
    ("history/reader.py", "import docdex.model.files", "history.reader -> docdex.model"),
]


@pytest.mark.parametrize(("module", "line", "reported"), BREAKS)
def test_a_forbidden_import_breaks_the_contracts(tmp_path, module, line, reported) -> None:
    tree = build_tree(tmp_path, copy=True)
    path = tree / "docdex" / module
    path.write_text(path.read_text() + f"\n{line}  # injected by the test\n")
    done = lint_contracts(tree)
    assert done.returncode != 0
    assert "BROKEN" in done.stdout
    assert reported in done.stdout


def test_a_private_name_imported_from_another_module_is_found(tmp_path) -> None:
    tree = build_tree(tmp_path, copy=True)
    path = tree / "docdex/server/engine/rerank.py"
    path.write_text(path.read_text() + "\nfrom docdex.model.files import _file_sha256\n")
    assert private_imports(tree) == [
        "docdex/server/engine/rerank.py: imports _file_sha256 from docdex.model.files"
    ]


@pytest.mark.parametrize(
    "line",
    [
        "from docdex.server.engine.loaded import LoadedVersion",
        "from docdex.server.engine import loaded",
        "import docdex.server.engine.dense",
    ],
)
def test_a_module_reaching_inside_the_engine_is_found(tmp_path, line) -> None:
    tree = build_tree(tmp_path, copy=True)
    path = tree / "docdex/server/answers/docs.py"
    path.write_text(path.read_text() + f"\n{line}\n")
    [found] = reached_inside(tree)
    assert found.startswith("docdex/server/answers/docs.py: imports docdex.server.engine.")


def test_the_server_imports_no_model_runtime_until_it_loads_the_model() -> None:
    """`docdex serve` loads the model in a thread while its main thread imports the server
    (adr/0008): if the server's modules imported onnxruntime or the tokenizer themselves,
    the two threads would queue on the same imports."""
    code = (
        "import sys, docdex.server.http.app, docdex.server.engine; "
        "print(sorted(m for m in ('onnxruntime', 'tokenizers', 'onnx') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_cli_parses_its_arguments_without_the_heavy_imports() -> None:
    """Every `docdex` command, the worker a push starts included, parses its arguments
    before it imports what its work needs: numpy, the index's store, the model, the server."""
    code = (
        "import sys, docdex.cli; heavy = ('numpy', 'tantivy', 'hnswlib', 'dulwich', "
        "'onnxruntime', 'tokenizers', 'mcp', 'starlette', 'docdex.index_format.store'); "
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
