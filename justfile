# docdex tasks. `just setup` once, then `just demo` or `just test`.

python := "python3"
venv := ".venv"
bin := venv + "/bin"

# Create .venv and install docdex with its model files and dev tools.
setup:
    test -x {{bin}}/python || {{python}} -m venv {{venv}}
    # Installs again only when pyproject.toml or this file is newer than the last install.
    # setuptools warns every editable install of a mapped layout (pyproject.toml's
    # package-dir) that folders named like the package may shadow it: its import finder
    # comes first, and our docdex/ folder is the package itself.
    test {{venv}}/.installed -nt pyproject.toml -a {{venv}}/.installed -nt justfile || ( \
        {{bin}}/python -m pip install -q --upgrade pip && \
        PYTHONWARNINGS="ignore:Editable installation" {{bin}}/python -m pip install -q -e '.[dev]' && \
        touch {{venv}}/.installed )
    {{bin}}/docdex --help > /dev/null
    # The search page's browser tests drive Debian's chromium: installed here when we can.
    command -v chromium > /dev/null || { test "$(id -u)" = 0 && command -v apt-get > /dev/null \
        && DEBIAN_FRONTEND=noninteractive apt-get update -qq \
        && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium > /dev/null; } \
        || echo "chromium is missing (apt-get install chromium): tests/server/http/test_web.py will skip"

# Run the test suite.
test *ARGS: setup
    {{bin}}/python -m pytest -q {{ARGS}}

# Build the wheel, install it with one plain pip install into a new venv, index, search, serve.
wheel-check: setup
    {{bin}}/python tests/support/wheel_check.py

# Index the docs that ship with docdex through a real bare repo and push, then search them.
demo: setup
    {{bin}}/python -m docdex.demo

# Benchmarks (docs/benchmarks.md): `just bench quick`, `just bench NAME`, `just bench tables`.
bench *ARGS: setup
    {{bin}}/python -m bench.performance {{ARGS}}

# The fault campaign (docs/reliability.md): `just faults quick` (< 5 min), `just faults crash`.
faults *ARGS: setup
    {{bin}}/python -m bench.faults {{ARGS}}

# The official MCP conformance suite against a real `docdex serve` (npm; docs/clients.md).
conformance: setup
    {{bin}}/python -m bench.conformance

# The ranking evaluation's scripts (bench/ranking): `just ranking check`, `just ranking sweep`.
ranking *ARGS: setup
    {{bin}}/python -m bench.ranking {{ARGS}}

# Lint, format check, declared dependencies, the layer contracts and the type check (.ci/run
# runs it too).
lint: setup layers types
    {{bin}}/ruff check .
    {{bin}}/ruff format --check .
    # Every import declared ([tool.deptry]): the product's in [project] dependencies, then
    # those of tests/ and bench/ there or in the dev extra (which they may use, and need not
    # use all of).
    {{bin}}/deptry .
    {{bin}}/deptry tests tests/support bench --exclude '\.venv' --extend-exclude __pycache__ \
        --known-first-party docdex --known-first-party bench --ignore DEP002,DEP004

# The import contracts between the packages and inside each side (adr/0013, adr/0030).
layers: setup
    {{bin}}/python tests/support/lint_imports.py

# mypy over the whole package (pyproject.toml, [tool.mypy]).
types: setup
    {{bin}}/python tests/support/check_types.py

# Format the code.
fmt: setup
    {{bin}}/ruff format .
    {{bin}}/ruff check --fix .
