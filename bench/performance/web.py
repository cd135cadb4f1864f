"""The search page in a real browser: time from the last keystroke to rendered results.

apm-docs (indexed as bench/performance/queries.py indexes it) is served by `docdex serve`; Debian's
Chromium, driven by Playwright, types 50 queries of the apm query file into the search box at
a fast typist's pace, one key every KEY_DELAY_MS. The page marks each rendering of results
(`performance.mark("docdex-results")`, in the frame after the list is in the DOM); the time
from the last keydown's event time to that mark, in the page's own clock, is one figure. It
includes the page's debounce (DEBOUNCE_MS in server/http/static/app.js), the request and the
rendering.
"""

from __future__ import annotations

import json
import shutil

from docdex.server.http.search_page import page_bytes
from docdex.serverproc import ServeProcess

from .queries import apm_index, sample_queries
from bench.common import CACHE, Figure, median, percentile, say, write_results

QUERIES = 50
KEY_DELAY_MS = 80  # about 12 characters a second: a fast typist, within the page's debounce
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DEBOUNCE_MS = 100  # server/http/static/app.js

# The last keydown's time, in the page's clock (event.timeStamp, as performance.now()).
RECORD_KEYS = "document.addEventListener('keydown', e => { window.__lastKey = e.timeStamp }, true)"
# Resolves, once the results of `q` are rendered, to the milliseconds since the last keydown.
RENDERED = """q => new Promise(resolve => {
    const look = () => {
        const mark = performance.getEntriesByName('docdex-results').find(m => m.detail === q);
        if (mark) resolve(mark.startTime - window.__lastKey);
        else requestAnimationFrame(look);
    };
    look();
})"""


def bench_web_keystroke() -> list[Figure]:
    from playwright.sync_api import sync_playwright

    data = apm_index()
    queries = [q.strip() for q in sample_queries(QUERIES)]
    say(f"[web] {len(queries)} queries typed into the page, {KEY_DELAY_MS} ms a key ...")
    with ServeProcess(data.root, CACHE / "web-serve.log") as server:
        health = server.wait_serving()
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page()
            page.goto(server.url + "/")
            page.wait_for_selector("#search:not([hidden])")
            page.evaluate(RECORD_KEYS)
            latencies = [_type_and_wait(page, query) for query in queries]
            browser.close()
    med, p90 = median(latencies), percentile(latencies, 0.9)
    weight = page_bytes()
    figures = [
        Figure("web", "keystroke to rendered results, median (apm, 50 queries)", round(med), "ms"),
        Figure("web", "keystroke to rendered results, p90", round(p90), "ms"),
        Figure("web", "page files, uncompressed", weight, "B", "< 50000", weight < 50_000),
    ]
    details = {
        "queries": queries,
        "latencies_ms": latencies,
        "key_delay_ms": KEY_DELAY_MS,
        "debounce_ms": DEBOUNCE_MS,
        "reranker": health.get("models", {}).get("reranker"),
        "index_version": health.get("index_version"),
    }
    write_results("web", figures, details)
    return figures


def _type_and_wait(page, query: str) -> float:
    page.fill("#q", "")  # an empty box clears the results and asks nothing
    page.evaluate("performance.clearMarks('docdex-results')")
    page.focus("#q")
    page.keyboard.type(query, delay=KEY_DELAY_MS)
    page.wait_for_selector(f"#results[data-query={json.dumps(query)}]", state="attached")
    return float(page.evaluate(RENDERED, query))
