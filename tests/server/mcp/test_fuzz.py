"""Fuzzing: hypothesis generates arguments for every MCP tool, from the input schema
list_tools gives, and query strings and paths for the HTTP routes of a real `docdex serve`.
Whatever comes: no crash, no 5xx, and every refusal is a sentence an agent or a person can
read (no traceback, no exception repr, no pydantic link)."""

from __future__ import annotations

import asyncio
import re
import threading
import urllib.parse
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from mcp import Client

from docdex.server.mcp.tools import build_mcp
from docdex.serverproc import ServeProcess

from fixtures import API, FAQ_E1234, INSTALL, http, open_indexed_docs

FILES = {"guide/install.md": INSTALL, "faq.md": FAQ_E1234, "reference/api.md": API}

FUZZ = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,  # no .hypothesis/ directory left in the repository
)

# --- what a refusal may look like --------------------------------------------------------

_NOT_A_SENTENCE = re.compile(
    r"Traceback|File \"|\b[A-Z]\w*(Error|Exception)\(|pydantic\.dev|errors\.pydantic"
)


def assert_sentence(text: Any, what: str) -> None:
    assert isinstance(text, str) and text.strip(), f"{what}: empty refusal"
    assert len(text) < 1_000, f"{what}: refusal of {len(text)} characters: {text[:200]!r}"
    assert not _NOT_A_SENTENCE.search(text), f"{what}: not a sentence: {text!r}"


# --- values, from a JSON schema ------------------------------------------------------------

_ODD_TEXT = st.sampled_from(
    [
        "",
        " ",
        "\x00",
        "\n\t\r",
        "../../etc/passwd",
        "docs:",
        "docs:faq.md",
        "docs:faq.md#chunk0",
        "docs:faq.md#chunk-1",
        "docs:faq.md#chunk99999999999999999999",
        ":",
        "#",
        "%00",
        "\\",
        "\ud800",  # a lone surrogate
        "\u202e\u200b\ufeff",
        "x" * 5_000,
        "é" * 100_000,  # huge
        "2026-01-01",
        "not-a-date",
        "9999-99-99T99:99:99",
    ]
)
# Values an agent would plausibly send: the index's own names, ids, paths and words.
_PLAUSIBLE_TEXT = st.sampled_from(
    ["", "docs", "guide/", "reference/", "install", "E1234", "token", "setup", "main", "v1"]
    + ["docs:guide/install.md", "docs:faq.md#chunk1", "docs:reference/api.md#chunk0"]
)
_TEXT = st.one_of(
    _PLAUSIBLE_TEXT,
    _PLAUSIBLE_TEXT,
    st.text(max_size=40),
    st.text(st.characters(codec=None), max_size=300),
    _ODD_TEXT,
)
_INT = st.one_of(
    st.sampled_from([0, 1, 3, 10, 20_000]),
    st.integers(-5, 200),
    st.integers(500, 120_000),
    st.integers(),
    st.sampled_from([0, -1, 2**31, 2**63, -(2**63), 10**30, -(10**30)]),
)
_ANY = st.one_of(
    st.none(),
    st.booleans(),
    st.floats(allow_nan=True, allow_infinity=True),
    _INT,
    _TEXT,
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)


def value_strategy(schema: dict[str, Any], wrong_types: bool) -> st.SearchStrategy:
    """Values for one property, of its type (odd ones included); with `wrong_types`, about
    one in four of any type."""
    kind = schema.get("type")
    if kind == "string":
        right = _TEXT
    elif kind == "integer":
        right = _INT
    elif kind == "array":
        right = st.lists(value_strategy(schema.get("items", {}), wrong_types), max_size=6)
    else:
        right = _ANY
    return st.one_of(right, right, right, _ANY) if wrong_types else right


def arguments_strategy(schema: dict[str, Any]) -> st.SearchStrategy:
    """Argument dicts for an object schema. Half the examples are well typed with every
    required property (so they reach the tool's own checks and its answers); the others may
    miss required properties, carry values of the wrong type and keys the schema does not
    know."""
    properties: dict[str, dict[str, Any]] = schema.get("properties", {})
    required = set(schema.get("required", []))

    @st.composite
    def draw_arguments(draw) -> dict[str, Any]:
        hostile = draw(st.booleans())
        arguments: dict[str, Any] = {}
        for name, prop in properties.items():
            keep = name in required and not hostile
            odds = 0 if name in required else (4 if hostile else 6)  # out of 10, absent
            if keep or draw(st.integers(0, 9)) > odds:
                arguments[name] = draw(value_strategy(prop, wrong_types=hostile))
        if hostile:
            extra = draw(st.dictionaries(st.text(min_size=1, max_size=12), _ANY, max_size=2))
            for key, value in extra.items():
                arguments.setdefault(key, value)
        return arguments

    return draw_arguments()


# --- MCP tools, in process -----------------------------------------------------------------


class ToolCaller:
    """One in-process MCP client kept open in an event loop of its own thread, so each
    hypothesis example is one call rather than a new connection."""

    def __init__(self, docs) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.client: Client | None = None
        self.ready = threading.Event()
        self.done: asyncio.Event | None = None
        self.session = asyncio.run_coroutine_threadsafe(self._hold(docs), self.loop)
        assert self.ready.wait(30), "the in-process MCP client did not connect"

    async def _hold(self, docs) -> None:
        self.done = asyncio.Event()
        async with Client(build_mcp(docs)) as client:
            self.client = client
            self.ready.set()
            await self.done.wait()

    def run(self, coroutine, timeout: float = 60):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def call(self, name: str, arguments: dict[str, Any]):
        return self.run(self.client.call_tool(name, arguments))

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.done.set)
        self.session.result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)
        self.loop.close()


@pytest.fixture(scope="module")
def tools(tmp_path_factory, embedder):
    docs = open_indexed_docs(tmp_path_factory.mktemp("fuzz-mcp"), FILES, embedder)
    caller = ToolCaller(docs)
    try:
        yield caller
    finally:
        caller.close()
        docs.holder.stop()


def _schemas() -> dict[str, dict[str, Any]]:
    """Each tool's input schema, as list_tools gives it (read without an index: the
    schemas do not depend on one)."""

    class _NoDocs:
        def instructions(self) -> str:
            return "docdex"

        def __getattr__(self, name: str):
            raise AssertionError(f"list_tools touched docs.{name}")

    async def main():
        async with Client(build_mcp(_NoDocs())) as client:
            return {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}

    return asyncio.run(main())


SCHEMAS = _schemas()


def test_every_tool_is_fuzzed():
    assert set(SCHEMAS) == {
        "search_docs",
        "query_docs",
        "get_document",
        "list_sources",
        "changes",
        "reindex",
    }


@pytest.mark.parametrize("tool", sorted(SCHEMAS))
def test_tool_arguments_from_its_schema(tools, tool):
    @FUZZ
    @given(arguments=arguments_strategy(SCHEMAS[tool]))
    # Found by this test: refusals quoted a source or ref whole (a 5,068-character "unknown
    # source" sentence); they now quote 200 characters and say how long it was.
    @example(arguments={"source": "x" * 5_000, "ref": "y" * 5_000, "query": "install"})
    def fuzz(arguments):
        result = tools.call(tool, arguments)  # raises if the client or the server broke
        if result.is_error:
            assert len(result.content) == 1, result
            assert_sentence(result.content[0].text, f"{tool}({arguments!r:.200})")
        else:
            # The SDK's client checked it against the tool's output schema already.
            assert isinstance(result.structured_content, dict), result

    fuzz()


_IDS = st.sampled_from(
    ["docs:guide/install.md", "docs:faq.md", "docs:reference/api.md"]
    + ["docs:faq.md#chunk0", "docs:faq.md#chunk1", "docs:reference/api.md#chunk2"]
)


@settings(FUZZ, max_examples=40)
@given(
    doc_id=_IDS,
    start_line=st.integers(-2, 30),
    end_line=st.integers(-2, 30),
    max_chars=st.one_of(st.integers(900, 2_000), st.integers(90_000, 110_000)),
)
def test_get_document_windows_of_real_pages(tools, doc_id, start_line, end_line, max_chars):
    """Ids that exist, lines and budgets near their bounds: the generic fuzzer above seldom
    draws these together, and they are where the windowing arithmetic is."""
    arguments = {"doc_id": doc_id, "start_line": start_line, "end_line": end_line}
    result = tools.call("get_document", {**arguments, "max_chars": max_chars})
    if result.is_error:
        assert_sentence(result.content[0].text, f"get_document({arguments!r})")
    else:
        assert result.structured_content["doc_id"] == doc_id.partition("#")[0]


# --- HTTP routes, of a real `docdex serve` -------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("fuzz-http")
    docs = open_indexed_docs(root, FILES, embedder)  # indexes root/data
    docs.holder.stop()
    serve = ServeProcess(root / "data", root / "serve.log")
    try:
        serve.wait_ready()
        yield serve
    finally:
        serve.stop()


# Text that survives urlencode (no lone surrogates); odd characters otherwise welcome.
_QUERY_TEXT = st.one_of(
    _PLAUSIBLE_TEXT,
    _PLAUSIBLE_TEXT,
    st.text(max_size=40),
    st.text(st.characters(exclude_categories=["Cs"]), max_size=200),
    _ODD_TEXT.filter(lambda s: "\ud800" not in s and len(s) < 20_000),
)
_QUERY_INT = st.one_of(
    _INT.map(str),
    _INT.map(str),
    _QUERY_TEXT,
    st.sampled_from(["1e3", "0x10", " 5", "+3", "", "1_000", "٣"]),
)

ROUTE_PARAMS: dict[str, dict[str, st.SearchStrategy]] = {
    "/api/search": {
        "q": _QUERY_TEXT,
        "n": _QUERY_INT,
        "source": _QUERY_TEXT,
        "path_prefix": _QUERY_TEXT,
        "max_chars": _QUERY_INT,
        "ref": _QUERY_TEXT,
        "tags": _QUERY_TEXT,
    },
    "/api/page": {"doc_id": _QUERY_TEXT},
    "/api/sources": {},
    "/api/clients": {},
    "/health": {},
}


@st.composite
def query_strings(draw, params: dict[str, st.SearchStrategy]) -> str:
    pairs = [(name, draw(value)) for name, value in params.items() if draw(st.integers(0, 3))]
    pairs += draw(st.lists(st.tuples(_QUERY_TEXT, _QUERY_TEXT), max_size=2))  # unknown, repeated
    if draw(st.booleans()) and pairs:
        pairs.append(pairs[0])  # the same parameter twice
    return urllib.parse.urlencode(pairs)


def assert_http_answer(reply, what: str) -> None:
    assert 0 < reply.status < 500, f"{what}: {reply.status} {reply.body[:300]!r}"
    if 400 <= reply.status < 500:
        assert_sentence(reply.json().get("error"), what)


@pytest.mark.parametrize("route", sorted(ROUTE_PARAMS))
def test_route_query_strings(server, route):
    @settings(FUZZ, max_examples=80 if ROUTE_PARAMS[route] else 20)
    @given(query=query_strings(ROUTE_PARAMS[route]))
    def fuzz(query):
        assert_http_answer(http(f"{server.url}{route}?{query}"), f"GET {route}?{query:.200}")

    fuzz()


_PATH_PIECES = st.one_of(
    st.sampled_from(
        ["api", "search", "page", "static", "mcp", "health", "..", ".", "", "%2e%2e", "%2F"]
        + ["%00", "%zz", "%", "%ff%fe", "~", ";", "@", ":", "//", "index.html", "app.js"]
    ),
    st.text(st.characters(exclude_categories=["Cs"]), max_size=12).map(
        lambda s: urllib.parse.quote(s, safe="")
    ),
)


@settings(FUZZ, max_examples=80)
@given(pieces=st.lists(_PATH_PIECES, max_size=6))
def test_raw_paths(server, pieces):
    path = "/" + "/".join(pieces)
    reply = http(server.url + path)
    assert 0 < reply.status < 500, f"GET {path}: {reply.status} {reply.body[:300]!r}"
    if 400 <= reply.status < 500:
        # A path no route knows gets Starlette's plain-text "Not Found" (not JSON, even
        # under /api/); whatever the form, the refusal is a short sentence.
        if "json" in reply.headers.get("content-type", ""):
            assert_sentence(reply.json().get("error"), f"GET {path}")
        else:
            assert_sentence(reply.body.decode(), f"GET {path}")
