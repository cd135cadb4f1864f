"""Answer sizes: how many characters each MCP tool answers with, on every shipped
corpus and on a hostile one, against the caps of server/answers/budget.py, beside search latency.

Real processes only: `docdex serve` on 127.0.0.1 with the SDK's streamable HTTP client, and
`docdex mcp` spawned by the SDK's stdio client. Per corpus, every eval query goes to
search_docs twice: with the defaults, and at the cap (100 hits, max_chars 100,000). Then
get_document (its defaults) on every distinct doc_id and chunk_id among the default
answers' hits, once per corpus; query_docs(limit=100) and list_sources once. An answer's
size is the length of its text content (the JSON an agent reads): every answer must stay
within ANSWER_CAP_CHARS, and search_docs' hits' text within its max_chars. PowerShell-Docs
has no query file: its queries are a seeded sample of its page titles. The hostile corpus is
written here: one page of a single 1.49 MB line of ordinary words, one with a 100 KB table
row, one with a 100 KB fenced code block, and two normal pages.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from docdex.index_format.config import Config, SourceConfig, save_config
from docdex.index_format.layout import DataDir
from docdex.index_format.records import StoredPage
from docdex.index_format.store import load_current, load_pages, load_segment
from docdex.server.answers.budget import ANSWER_CAP_CHARS, DEFAULT_MAX_CHARS, MAX_MAX_CHARS
from docdex.server.answers.validation import MAX_LIMIT
from docdex.server.engine import MAX_RESULTS
from docdex.serverproc import ServeProcess, mcp_client

from .indexing import head_index
from bench.common import (
    CACHE,
    Figure,
    bench_git,
    docdex,
    eval_queries,
    median,
    percentile,
    say,
    work_repo,
    write_results,
)

CORPORA = ("apm", "rustc", "powershell", "msmarco")
STDIO = ("rustc", "hostile")  # also over stdio: a code-heavy corpus and the hostile one
TITLE_QUERIES = 300  # PowerShell-Docs: a seeded sample of its distinct page titles
SEARCHES: dict[str, dict[str, int]] = {  # label -> search_docs arguments besides the query
    "search_docs": {},
    "search_docs at the cap": {"num_results": MAX_RESULTS, "max_chars": MAX_MAX_CHARS},
}
TEXT_BUDGETS = {"search_docs": DEFAULT_MAX_CHARS, "search_docs at the cap": MAX_MAX_CHARS}
LISTINGS: dict[str, tuple[str, dict[str, int]]] = {  # label -> (tool, arguments), once each
    "query_docs limit=100": ("query_docs", {"limit": MAX_LIMIT}),
    "list_sources": ("list_sources", {}),
}


class Answer(msgspec.Struct, frozen=True):
    """One tool call as the client saw it."""

    chars: int  # the text content (search_docs: markdown, text_content.py; else its JSON)
    text_chars: int  # the hits' text (search_docs), else 0
    seconds: float
    digest: str  # of the answer without its timing, to compare transports
    pages: tuple[str, ...] = ()  # the hits' doc_ids (search_docs), in rank order
    chunks: tuple[str, ...] = ()  # the hits' chunk_ids


Answers = dict[str, list[Answer]]  # label -> calls


# --- one client session --------------------------------------------------------------------


async def ask(client: Client, tool: str, arguments: dict[str, Any]) -> Answer:
    started = time.perf_counter()
    result = await client.call_tool(tool, arguments)
    seconds = time.perf_counter() - started
    text = result.content[0].text
    if result.is_error:
        raise RuntimeError(f"{tool}({arguments}) failed: {text[:300]}")
    body = dict(result.structured_content or json.loads(text))  # the text may be markdown
    hits = body.get("results", []) if tool == "search_docs" else []
    body.pop("took_ms", None)
    return Answer(
        chars=len(text),
        text_chars=sum(len(hit["text"]) for hit in hits),
        seconds=seconds,
        digest=hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest(),
        pages=tuple(hit["chunk_id"].rpartition("#")[0] for hit in hits),
        chunks=tuple(hit["chunk_id"] for hit in hits),
    )


async def search_all(client: Client, queries: list[str]) -> Answers:
    """Each query with each of SEARCHES, after one search that is not measured (a server's
    first MCP request pays for imports)."""
    await client.call_tool("search_docs", {"query": queries[0]})
    answers: Answers = {label: [] for label in SEARCHES}
    for n, query in enumerate(queries, 1):
        for label, extra in SEARCHES.items():
            answers[label].append(await ask(client, "search_docs", {"query": query, **extra}))
        if n % 500 == 0:
            say(f"[answers] {n}/{len(queries)} queries")
    return answers


async def follow_ups(client: Client, searches: Answers) -> Answers:
    """get_document on each distinct id among the default answers' hits; the listings."""
    hits = searches["search_docs"]
    answers: Answers = {}
    for label, ids in (
        ("get_document page", (i for answer in hits for i in answer.pages)),
        ("get_document chunk", (i for answer in hits for i in answer.chunks)),
    ):
        calls = [{"doc_id": doc_id} for doc_id in dict.fromkeys(ids)]
        answers[label] = [await ask(client, "get_document", arguments) for arguments in calls]
    for label, (tool, arguments) in LISTINGS.items():
        answers[label] = [await ask(client, tool, arguments)]
    return answers


async def every_tool(connect: Callable[[], Client], queries: list[str]) -> Answers:
    async with connect() as client:
        searches = await search_all(client, queries)
        return searches | await follow_ups(client, searches)


async def searches_only(connect: Callable[[], Client], queries: list[str]) -> Answers:
    async with connect() as client:
        return await search_all(client, queries)


# --- transports ------------------------------------------------------------------------------


def over_http(data: Path, log: Path, queries: list[str]) -> Answers:
    with ServeProcess(data, log) as server:
        server.wait_serving(timeout=300)
        return asyncio.run(every_tool(lambda: mcp_client(server.mcp_url), queries))


def over_stdio(data: Path, log: Path, queries: list[str]) -> Answers:
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "docdex.cli", "--data", str(data), "mcp"]
    )
    with open(log, "w") as errlog:
        return asyncio.run(searches_only(lambda: Client(stdio_client(server, errlog)), queries))


def differing(http: Answers, stdio: Answers) -> int:
    """Answers (without their timing) that are not the same over both transports."""
    pairs = [pair for label in stdio for pair in zip(http[label], stdio[label], strict=True)]
    return sum(a.digest != b.digest for a, b in pairs)


# --- corpora -----------------------------------------------------------------------------------


def corpus_queries(corpus: str, data: Path) -> tuple[list[str], str]:
    """The queries for `corpus` and where they come from."""
    if corpus != "powershell":
        return [row["query"] for row in eval_queries(corpus)], "every eval query"
    store = DataDir(data)
    manifest = load_current(store)
    titles = {
        page.title
        for state in manifest.sources.values()
        for page in load_pages(store, state.pages_file, StoredPage)
        if page.title.strip()
    }
    sample = random.Random(7).sample(sorted(titles), min(TITLE_QUERIES, len(titles)))
    return sample, f"{len(sample)} of {len(titles)} distinct page titles (seeded sample)"


def max_chunk_chars(data: Path) -> int:
    """The longest live chunk text in the index `data` serves."""
    store = DataDir(data)
    manifest = load_current(store)
    longest = 0
    for ref in manifest.segments:
        dead = set(ref.tombstones)
        segment = load_segment(store, ref.id, manifest.embedder.dim)
        for n, chunk in enumerate(segment.chunks):
            if n not in dead:
                longest = max(longest, len(chunk.text))
    return longest


def measure(name: str, data: Path, queries: list[str], logs: Path) -> dict[str, Any]:
    say(f"[answers] {name}: {len(queries)} queries over HTTP ...")
    http = over_http(data, logs / f"answers-{name}-serve.log", queries)
    measured: dict[str, Any] = {"http": http, "max_chunk_chars": max_chunk_chars(data)}
    if name in STDIO:
        say(f"[answers] {name}: the same searches over stdio ...")
        measured["stdio"] = over_stdio(data, logs / f"answers-{name}-mcp.log", queries)
    return measured


# --- the hostile corpus -----------------------------------------------------------------------

LONG_LINE_CHARS = 1_490_000
WIDE_CHARS = 100_000
VOCABULARY = (  # ordinary words, separated by spaces
    "the river morning garden window table letter market village bread candle winter "
    "summer harbour bridge station ticket kitchen orchard meadow lantern valley forest "
    "basket bottle button chair cloud coat field flower friend house island journey "
    "ladder mountain needle paper pocket road school shadow sister stone street teacher "
    "thunder travel tree umbrella wagon water weather wheel yellow quiet early simple "
    "warm open green small old young bright heavy gentle long short over under after"
)
HOSTILE_QUERIES = [
    "orchard lantern harbour",
    "the old bridge over the river in winter",
    "village market bread basket",
    "quiet meadow after the thunder",
    "field notes",
    "inventory of lanterns and their notes",
    "def total values return sum",
    "total_417",
    "generated python module",
    "install docdex on a server",
    "configure the search budget",
]


def ordinary_words(chars: int, seed: int) -> str:
    """About `chars` characters of ordinary words separated by spaces, on one line."""
    rng = random.Random(seed)
    vocabulary = VOCABULARY.split()
    words: list[str] = []
    length = 0
    while length < chars:
        words.append(rng.choice(vocabulary))
        length += len(words[-1]) + 1
    return " ".join(words)[:chars].rstrip()


def generated_code(chars: int) -> str:
    """At least `chars` characters of Python: small functions, with quotes to escape."""
    functions: list[str] = []
    length = 0
    while length < chars:
        n = len(functions)
        functions.append(
            f'def total_{n}(values):\n    """Sum of values times {n}."""\n'
            f'    label = "total {n}"\n    return sum(v * {n} for v in values), label\n\n'
        )
        length += len(functions[-1])
    return "".join(functions)


def hostile_pages() -> dict[str, bytes]:
    pages = {
        "long-line.md": f"# Field notes\n\n{ordinary_words(LONG_LINE_CHARS, 1)}\n",
        "wide-table.md": (
            "# Inventory of lanterns\n\n| item | notes |\n|---|---|\n"
            f"| lantern | {ordinary_words(WIDE_CHARS, 2)} |\n"
        ),
        "big-code.md": f"# Generated module\n\n```python\n{generated_code(WIDE_CHARS)}```\n",
        "install.md": (
            "# Install docdex\n\nInstall docdex on a server with pip, then point it at a git "
            "repository of markdown.\n\n## Configure\n\nThe search budget is set per call "
            "with max_chars; the default keeps one answer near 6,000 tokens.\n"
        ),
        "README.md": "# Hostile corpus\n\nPages that no chunker should trust.\n",
    }
    return {path: text.encode() for path, text in pages.items()}


@contextmanager
def hostile_index() -> Iterator[tuple[Path, dict[str, Any]]]:
    """The hostile corpus in a temporary bare repository, indexed by the real CLI: the data
    directory and the index run's report."""
    with tempfile.TemporaryDirectory(prefix="docdex-answers-") as tmp:
        root = Path(tmp)
        work = work_repo(root / "repo", hostile_pages())
        bench_git(work, "push", "-q", "origin", "main")
        data = DataDir(root / "data")
        data.ensure()
        bare = str(root / "repo" / "origin.git")
        save_config(data, Config(sources=[SourceConfig(name="hostile", location=bare)]))
        say("[answers] hostile: indexing a 1.49 MB line, a 100 KB table row, 100 KB of code ...")
        yield data.root, docdex(data.root, "index")


# --- figures -----------------------------------------------------------------------------------


def at_most(bench: str, name: str, chars: int, cap: int) -> Figure:
    return Figure(bench, name, chars, "ch", f"<= {cap}", chars <= cap)


def size_figures(bench: str, label: str, calls: list[Answer]) -> list[Figure]:
    """Median, p99 and max of the answers' sizes; the max (every answer) within the hard cap
    of server/answers/budget.py, and for search_docs the hits' text within its max_chars."""
    chars = [a.chars for a in calls]
    if len(calls) == 1:
        return [at_most(bench, f"{label}: answer chars", chars[0], ANSWER_CAP_CHARS)]
    figures = [
        Figure(bench, f"{label}: answer chars median (n={len(calls)})", median(chars), "ch"),
        Figure(bench, f"{label}: answer chars p99", percentile(chars, 0.99), "ch"),
        at_most(bench, f"{label}: answer chars max", max(chars), ANSWER_CAP_CHARS),
    ]
    if label in TEXT_BUDGETS:
        text = max(a.text_chars for a in calls)
        figures.append(at_most(bench, f"{label}: hits' text chars max", text, TEXT_BUDGETS[label]))
    return figures


def latency_figures(bench: str, transport: str, answers: Answers) -> list[Figure]:
    figures = []
    for label in SEARCHES:
        seconds = [a.seconds for a in answers[label]]
        for name, share in (("p50", 0.5), ("p99", 0.99)):
            ms = round(percentile(seconds, share) * 1000, 1)
            figures.append(Figure(bench, f"{label} {name} ({transport})", ms, "ms"))
    return figures


def corpus_figures(name: str, measured: dict[str, Any]) -> list[Figure]:
    bench = f"answers {name}"
    http: Answers = measured["http"]
    figures = [Figure(bench, "max chunk chars", measured["max_chunk_chars"], "ch")]
    for label, calls in http.items():
        figures += size_figures(bench, label, calls)
    figures += latency_figures(bench, "HTTP", http)
    if "stdio" in measured:
        figures += latency_figures(bench, "stdio", measured["stdio"])
        count = differing(http, measured["stdio"])
        name = "answers differing, stdio / HTTP"
        figures.append(Figure(bench, name, count, "", "== 0", count == 0))
    return figures


def summary(answers: Answers) -> dict[str, Any]:
    def stats(values: list[float]) -> dict[str, float]:
        return {"median": median(values), "p99": percentile(values, 0.99), "max": max(values)}

    return {
        label: {
            "n": len(calls),
            "chars": stats([a.chars for a in calls]),
            "text_chars": stats([a.text_chars for a in calls]),
            "ms": stats([round(a.seconds * 1000, 2) for a in calls]),
        }
        for label, calls in answers.items()
    }


def details_of(measured: dict[str, Any], **extra: Any) -> dict[str, Any]:
    transports = {k: summary(v) for k, v in measured.items() if k in ("http", "stdio")}
    return {**extra, "max_chunk_chars": measured["max_chunk_chars"], **transports}


# --- the benchmark ----------------------------------------------------------------------------


def bench_answers(corpora: tuple[str, ...] = CORPORA) -> list[Figure]:
    logs = CACHE / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    figures: list[Figure] = []
    details: dict[str, Any] = {"answer_cap": ANSWER_CAP_CHARS, "text_budgets": TEXT_BUDGETS}
    for corpus in corpora:
        started = time.perf_counter()
        data = head_index(corpus)
        queries, origin = corpus_queries(corpus, data)
        measured = measure(corpus, data, queries, logs)
        figures += corpus_figures(corpus, measured)
        details[corpus] = details_of(
            measured, queries=origin, seconds=round(time.perf_counter() - started, 1)
        )
    hostile, details["hostile"] = hostile_figures(logs)
    figures += hostile
    write_results("answers", figures, details)
    return figures


def hostile_figures(logs: Path) -> tuple[list[Figure], dict[str, Any]]:
    with hostile_index() as (data, report):
        measured = measure("hostile", data, HOSTILE_QUERIES, logs)
    bench = "answers hostile"
    figures = [
        Figure(bench, "indexing", round(report["took_s"], 1), "s"),
        Figure(bench, "windows embedded", report["windows_embedded"], ""),
        *corpus_figures("hostile", measured),
    ]
    return figures, details_of(measured, index_report=report, queries=HOSTILE_QUERIES)


if __name__ == "__main__":
    from .__main__ import print_table

    print_table(bench_answers(tuple(sys.argv[1:]) or CORPORA))
