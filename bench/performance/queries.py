"""Query-side benchmarks on apm-docs: latency over MCP with and without rerank, HNSW against
exact search, BM25 alone, cold start to first answer, and queries during version swaps."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import random
import statistics
import threading
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import msgspec
import numpy as np

from docdex.evaluation.scoring import load_queries
from docdex.index_format.config import Config, Settings, SourceConfig, load_config, save_config
from docdex.index_format.layout import DataDir
from docdex.index_format.store import HNSW_FILE, load_current, load_segment
from docdex.indexer.run.pipeline import index_sources
from docdex.model.embedder import Embedder
from docdex.server.engine import DEFAULT_SETTINGS, Engine
from docdex.serverproc import ServeProcess

from .indexing import corpus_index
from .stage_times import time_bm25
from bench.common import (
    CACHE,
    Figure,
    eval_queries,
    git,
    median,
    percentile,
    say,
    source_repo,
    write_results,
)
from bench.ranking.check import HERE as RANKING_SETS

LATENCY_QUERIES = 150
SWAP_VERSIONS = 10


def apm_index() -> DataDir:
    """apm-docs at its head, indexed once and kept in the bench cache."""
    data = DataDir(CACHE / "data" / "apm")
    bare = CACHE / "apm.git"
    if not bare.exists():
        git("clone", "-q", "--bare", str(source_repo("apm")), str(bare))
    # token vectors on, so the "default" reranker measured below is MaxSim (it is opt-in)
    settings = Settings(late_interaction=True)
    config = Config(settings=settings, sources=[SourceConfig(name="apm", location=str(bare))])
    data.ensure()
    save_config(data, config)
    say("[queries] indexing apm-docs (reused when unchanged) ...")
    index_sources(data, load_config(data))
    return data


def sample_queries(n: int) -> list[str]:
    rows = eval_queries("apm")
    handwritten = [r["query"] for r in rows if r["class"] == "handwritten"]
    others = [r["query"] for r in rows if r["class"] != "handwritten"]
    return handwritten + random.Random(7).sample(others, n - len(handwritten))


def powershell_questions(n: int) -> list[str]:
    """`n` of the questions written for PowerShell-Docs (bench/ranking), longer than
    apm's: their embedding takes about 1 ms more."""
    names = ("powershell.sections.jsonl", "powershell.handwritten.jsonl")
    questions = [q.query for name in names for q in load_queries(RANKING_SETS / name)]
    return random.Random(7).sample(questions, n)


async def _mcp_latencies(url: str, queries: list[str]) -> list[float]:
    return (await _mcp_calls(url, queries))[0]


async def _mcp_calls(url: str, queries: list[str]) -> tuple[list[float], list[float]]:
    """Per query, search_docs' round trip through the SDK's client, and the search's own
    time in the server (the answer's took_ms)."""
    from mcp import Client

    trips, searches = [], []
    async with Client(url) as client:
        for query in queries:
            started = time.perf_counter()
            result = await client.call_tool("search_docs", {"query": query, "num_results": 10})
            trips.append(time.perf_counter() - started)
            if result.is_error:
                raise RuntimeError(f"search_docs failed for {query!r}")
            searches.append(result.structured_content["took_ms"] / 1000)
    return trips, searches


def _http_latencies(url: str, queries: list[str]) -> list[float]:
    """The same search_docs calls as JSON-RPC posts on one kept-alive connection, without
    the SDK's client: the client's own share is the difference."""
    from mcp.types import LATEST_PROTOCOL_VERSION, PROTOCOL_VERSION_META_KEY
    from mcp_types import CLIENT_CAPABILITIES_META_KEY

    where = urllib.parse.urlsplit(url)
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": LATEST_PROTOCOL_VERSION,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "search_docs",
    }
    meta = {PROTOCOL_VERSION_META_KEY: LATEST_PROTOCOL_VERSION, CLIENT_CAPABILITIES_META_KEY: {}}
    connection = http.client.HTTPConnection(where.hostname, where.port, timeout=60)
    out = []
    try:
        for n, query in enumerate(queries):
            arguments = {"query": query, "num_results": 10}
            params = {"name": "search_docs", "arguments": arguments, "_meta": meta}
            body = json.dumps({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params})
            started = time.perf_counter()
            connection.request("POST", where.path, body, headers)
            response = connection.getresponse()
            answer = response.read()
            out.append(time.perf_counter() - started)
            if response.status != 200 or b'"isError":true' in answer:
                raise RuntimeError(
                    f"search_docs over plain HTTP: {response.status} {answer[:200]!r}"
                )
    finally:
        connection.close()
    return out


@contextlib.contextmanager
def serving(data: DataDir, reranker: str, log: Path) -> Iterator[ServeProcess]:
    """`docdex serve` with `reranker`, once it serves a version."""
    _set_reranker(data, reranker)
    with ServeProcess(data.root, log) as server:
        server.wait_serving()
        yield server


def mcp_latency(server: ServeProcess, queries: list[str]) -> dict:
    times = asyncio.run(_mcp_latencies(server.mcp_url, queries))
    return {"latencies": times, "rss_mb": server.rss_mb()}


def _set_reranker(data: DataDir, reranker: str) -> None:
    config = load_config(data)
    settings = msgspec.structs.replace(config.settings, reranker=reranker)
    save_config(data, Config(settings=settings, sources=config.sources))


COLD_STARTS = 3
FIRST_QUERY = {"query": "install the agent", "num_results": 3}


def cold_starts(data: Path, log: Path, runs: int = COLD_STARTS, client_warm: bool = False) -> dict:
    """Seconds from `docdex serve`'s process start to its first answer over plain HTTP
    (/api/search) and over MCP (search_docs), `runs` times; medians and every run. The
    client's one-off costs (imports, its first session) are paid before the first measured
    start: on a start left out, unless `client_warm` (this process had an MCP session)."""
    _import_client()
    left_out = 0 if client_warm else 1
    http_s, mcp_s = [], []
    for _ in range(left_out + runs):
        with ServeProcess(data, log) as server:
            http_s.append(_first_http_answer(server))
            server.call_tool("search_docs", FIRST_QUERY)
            mcp_s.append(time.monotonic() - server.started)
    return {
        "http_s": median(http_s[left_out:]),
        "mcp_s": median(mcp_s[left_out:]),
        "runs": {"http_s": http_s, "mcp_s": mcp_s, "left_out": left_out},
    }


def _first_http_answer(server: ServeProcess, timeout: float = 120) -> float:
    deadline = time.monotonic() + timeout
    q = {"q": FIRST_QUERY["query"], "n": FIRST_QUERY["num_results"]}
    while server.get("/api/search", q)[0] != 200:
        server.check_alive()
        if time.monotonic() > deadline:
            raise RuntimeError(f"/api/search did not answer within {timeout} s{server.tail()}")
        time.sleep(0.01)
    return time.monotonic() - server.started


def _import_client() -> None:
    import httpx2  # noqa: F401
    import mcp.client.streamable_http  # noqa: F401


def hnsw_against_exact(data: DataDir, queries: list[str]) -> dict:
    """Window-level recall@10 of HNSW against exact cosine search over the largest segment
    (its graph loaded as the engine loads one), their speeds, and BM25's alone."""
    import hnswlib

    embedder = Embedder.load()
    manifest = load_current(data)
    assert manifest is not None
    ref = max(manifest.segments, key=lambda s: s.windows)
    segment = load_segment(data, ref.id, manifest.embedder.dim)
    vectors = np.asarray(segment.vectors, dtype=np.float32)
    graph = hnswlib.Index(space="cosine", dim=manifest.embedder.dim)
    graph.load_index(str(segment.path / HNSW_FILE), max_elements=len(vectors))
    graph.set_ef(DEFAULT_SETTINGS.hnsw_ef)
    qvecs = np.stack([embedder.embed_query(q) for q in queries])
    recalls, hnsw_s, exact_s = [], [], []
    for q in qvecs:
        started = time.perf_counter()
        labels, _ = graph.knn_query(q, k=10)
        hnsw_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        exact = np.argpartition(-(vectors @ q), 10)[:10]
        exact_s.append(time.perf_counter() - started)
        recalls.append(len(set(labels[0].tolist()) & set(exact.tolist())) / 10)
    engine = Engine.open(data, embedder)
    bm25_s = [time_bm25(engine, query)[0] for query in queries]
    engine.close()
    return {
        "windows": len(vectors),
        "recall": statistics.mean(recalls),
        "hnsw_s": hnsw_s,
        "exact_s": exact_s,
        "bm25_s": bm25_s,
    }


def swap_under_load(data: DataDir, server: ServeProcess) -> dict:
    """A steady query load on `server` first alone, then while SWAP_VERSIONS versions are
    published."""
    work = CACHE / "apm-swap-work"
    bare = Path(load_config(data).sources[0].location)
    if not work.exists():
        git("clone", "-q", str(bare), str(work))
    embedder = Embedder.load()
    steady = _load(server, lambda: time.sleep(8))
    swapping = _load(server, lambda: _publish_versions(data, work, embedder))
    return {"steady": steady, "swapping": swapping}


def _load(server: ServeProcess, during) -> dict:
    latencies: list[float] = []
    failures: list[str] = []
    versions: set[int] = set()
    stop = threading.Event()

    def client() -> None:
        while not stop.is_set():
            started = time.perf_counter()
            status, body = server.get("/api/search", {"q": "enrollment status page", "n": 5})
            latencies.append(time.perf_counter() - started)
            if status != 200 or not body:
                failures.append(f"{status}: {body}")
            else:
                versions.add(body["index_version"])

    thread = threading.Thread(target=client)
    thread.start()
    during()
    stop.set()
    thread.join()
    return {"latencies": latencies, "failures": failures, "versions": sorted(versions)}


def _publish_versions(data: DataDir, work: Path, embedder: Embedder) -> None:
    page = work / "README.md"
    for i in range(SWAP_VERSIONS):
        page.write_text(page.read_text() + f"\n\nSwap marker {i} {time.time_ns()}.\n")
        git("commit", "-q", "-am", f"swap {i}", cwd=work)
        git("push", "-q", "origin", "HEAD", cwd=work)
        index_sources(data, load_config(data), embedder=embedder)


def bench_queries() -> list[Figure]:
    data = apm_index()
    queries = sample_queries(LATENCY_QUERIES)
    logs = CACHE / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    say("[queries] MCP latency without rerank, then with ...")
    with serving(data, "none", logs / "serve-none.log") as server:
        plain = mcp_latency(server, queries)
    with serving(data, "default", logs / "serve-default.log") as server:
        reranked = mcp_latency(server, queries)
        say("[queries] swaps under load (the same server) ...")
        swap = swap_under_load(data, server)
    say("[queries] cold starts ...")
    cold = cold_starts(data.root, logs / "serve-cold.log", client_warm=True)
    say("[queries] HNSW against exact search, BM25 alone ...")
    ann = hnsw_against_exact(data, queries)
    figures = _figures(plain, reranked, cold, ann, swap)
    write_results(
        "queries",
        figures,
        {
            "plain": plain,
            "reranked": reranked,
            "cold": cold,
            "ann": ann,
            "swap": {k: {**v, "latencies": v["latencies"][:2000]} for k, v in swap.items()},
        },
    )
    return figures


def _ms(values: list[float], share: float | None = None) -> float:
    value = median(values) if share is None else percentile(values, share)
    return round(value * 1000, 2)


def _figures(plain: dict, reranked: dict, cold: dict, ann: dict, swap: dict) -> list[Figure]:
    p50, p50r = _ms(plain["latencies"]), _ms(reranked["latencies"])
    exact, hnsw = _ms(ann["exact_s"]), _ms(ann["hnsw_s"])
    steady99 = _ms(swap["steady"]["latencies"], 0.99)
    swap99 = _ms(swap["swapping"]["latencies"], 0.99)
    failed = len(swap["swapping"]["failures"]) + len(swap["steady"]["failures"])
    q = "queries apm (MCP)"
    return [
        Figure(q, "p50 search_docs, no rerank", p50, "ms", "<= 20", p50 <= 20),
        Figure(q, "p95 search_docs, no rerank", _ms(plain["latencies"], 0.95), "ms"),
        Figure(q, "p50 search_docs, rerank", p50r, "ms", "<= 50", p50r <= 50),
        Figure(q, "p95 search_docs, rerank", _ms(reranked["latencies"], 0.95), "ms"),
        *_cold_figures("cold start apm", cold),
        Figure(q, "server RSS (apm)", round(reranked["rss_mb"], 1), "MB"),
        Figure(
            "dense apm",
            f"HNSW recall@10 vs exact ({ann['windows']} windows)",
            round(ann["recall"], 4),
            "",
            ">= 0.98",
            ann["recall"] >= 0.98,
        ),
        Figure("dense apm", "exact / HNSW time per query", round(exact / max(hnsw, 1e-6), 2), "x"),
        Figure("dense apm", "HNSW p50", hnsw, "ms"),
        Figure("bm25 apm", "BM25 alone p50", _ms(ann["bm25_s"]), "ms"),
        Figure("swap apm", "failed requests during swaps", failed, "", "== 0", failed == 0),
        Figure(
            "swap apm", "p99 during swaps / steady", round(swap99 / max(steady99, 1e-6), 2), "x"
        ),
        Figure("swap apm", "versions seen under load", len(swap["swapping"]["versions"]), ""),
    ]


def _cold_figures(name: str, cold: dict) -> list[Figure]:
    http, mcp = round(cold["http_s"], 2), round(cold["mcp_s"], 2)
    return [
        Figure(name, "to first answer, HTTP /api/search", http, "s", "<= 1", http <= 1),
        Figure(name, "to first answer, MCP search_docs", mcp, "s", "<= 1", mcp <= 1),
    ]


def bench_serving_powershell() -> list[Figure]:
    """Server RSS while serving PowerShell-Docs (the index `index-powershell` left)."""
    data = corpus_index("powershell")
    if not (data / "CURRENT").exists():
        raise SystemExit("run `just bench index-powershell` first: it builds the index served here")
    queries = sample_queries(50)
    logs = CACHE / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    cold = cold_starts(data, logs / "serve-powershell-cold.log")
    with ServeProcess(data, logs / "serve-powershell.log") as server:
        server.wait_serving(timeout=300)
        latencies, searches = asyncio.run(_mcp_calls(server.mcp_url, queries))
        plain = _http_latencies(server.mcp_url, queries)
        rss = server.rss_mb()
        own = asyncio.run(_mcp_latencies(server.mcp_url, powershell_questions(50)))
    # The reference: apm-docs without MaxSim, which its bench index has token vectors for.
    with serving(apm_index(), "none", logs / "serve-apm.log") as server:
        apm = asyncio.run(_mcp_latencies(server.mcp_url, queries))
        apm_plain = _http_latencies(server.mcp_url, queries)
    name = "serving powershell"
    p50, p50_plain = _ms(latencies), _ms(plain)
    figures = [
        Figure(name, "server RSS after 50 queries", round(rss, 1), "MB", "<= 400", rss <= 400),
        *_cold_figures("cold start powershell", cold),
        Figure(name, "p50 search_docs (MCP)", p50, "ms", "<= 20", p50 <= 20),
        Figure(name, "p50 search_docs (MCP), PowerShell's own questions", _ms(own), "ms"),
        Figure(name, "p50 against apm-docs' (same queries and run)", round(p50 / _ms(apm), 2), "x"),
        Figure(name, "of which: the search in the server, p50 of took_ms", _ms(searches), "ms"),
        Figure(name, "of which: the server, p50 over plain HTTP (no SDK client)", p50_plain, "ms"),
        Figure(name, "the SDK client's share: p50 difference", round(p50 - p50_plain, 2), "ms"),
        Figure(
            name,
            "p50 over plain HTTP against apm-docs'",
            round(p50_plain / _ms(apm_plain), 2),
            "x",
        ),
    ]
    details = {
        "rss_mb": rss,
        "cold": cold,
        "latencies": latencies,
        "search_s": searches,
        "plain_http_latencies": plain,
        "own_latencies": own,
        "apm_latencies": apm,
        "apm_plain_http_latencies": apm_plain,
    }
    write_results("serve-powershell", figures, details)
    return figures
