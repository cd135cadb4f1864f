"""Tokens an agent reads per search_docs answer: its text content as the JSON of the
structured answer (what sessions before 2025-06-18 get, and every session got before) and as
markdown (server/mcp/text_content.py), counted with the shipped tokenizer.

    python -m bench.performance.answer_tokens --index apm=DATA_DIR[:SOURCE] ...

In process, through the same `Docs.search` the MCP tool calls, with its defaults (10 hits,
max_chars 20,000): every query of the corpus's question sets in bench/ranking/sets and of its
shared eval file, at most QUERIES of them.
"""

from __future__ import annotations

import argparse
import statistics
import sys

import msgspec

from docdex.index_format.layout import DataDir
from docdex.model.embedder import Embedder
from docdex.model.files import load_tokenizer
from docdex.server.answers.docs import Docs
from docdex.server.boot import engine_loader
from docdex.server.mcp.text_content import search_text
from docdex.server.versions import VersionHolder

from .hit_fields import QUERIES, SETS
from bench.common import EVAL, EVAL_FILES
from bench.ranking.report import parse_index
from bench.tables import markdown

_encode = msgspec.json.Encoder().encode


def queries(corpus: str) -> list[str]:
    files = sorted(SETS.glob(f"{corpus}.*.jsonl"))
    files += [EVAL / EVAL_FILES[corpus]] if corpus in EVAL_FILES else []
    rows = [msgspec.json.decode(line) for f in files for line in f.read_bytes().splitlines()]
    return [row["query"] for row in rows if row][:QUERIES]


def measure(data: DataDir, source: str, embedder: Embedder, asked: list[str]) -> list[str]:
    tokenizer = load_tokenizer()

    def tokens(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False).ids)

    holder = VersionHolder(data, engine_loader(data, embedder))
    holder.refresh()
    docs = Docs(data, embedder, holder)
    as_json, as_markdown, hits_text = [], [], []
    try:
        for query in asked:
            answer = docs.search(query, source=source)
            as_json.append(tokens(_encode(msgspec.to_builtins(answer)).decode()))
            as_markdown.append(tokens(search_text(answer)))
            hits_text.append(tokens("\n".join(hit.text for hit in answer.results)))
    finally:
        holder.stop()
    json_median, markdown_median = statistics.median(as_json), statistics.median(as_markdown)
    return [
        str(len(asked)),
        f"{json_median:,.0f}",
        f"{markdown_median:,.0f}",
        f"{markdown_median / json_median - 1:+.0%}",
        f"{_p90(as_json):,.0f} -> {_p90(as_markdown):,.0f}",
        f"{statistics.median(hits_text):,.0f}",
    ]


def _p90(values: list[int]) -> float:
    return sorted(values)[int(0.9 * (len(values) - 1))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.performance.answer_tokens")
    parser.add_argument("--index", action="append", default=[], metavar="CORPUS=DIR[:SOURCE]")
    args = parser.parse_args(argv)
    embedder = Embedder.load(for_queries=True)
    rows = [
        [
            "corpus",
            "queries",
            "median tokens, JSON text",
            "median tokens, markdown text",
            "change",
            "p90 tokens, JSON -> markdown",
            "median tokens of the hits' text alone",
        ]
    ]
    for corpus, (data, source) in parse_index(args.index).items():
        rows.append([corpus, *measure(DataDir(data), source, embedder, queries(corpus))])
    print("\n".join(markdown(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
