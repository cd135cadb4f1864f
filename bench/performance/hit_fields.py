"""What a search_docs answer spends its characters on: per corpus, the answers' median and
largest size (the JSON an agent reads), the part of it that is not the hits' text, and the
characters each hit field takes (its key and value, summed over an answer's hits).

In process, through the same `Docs.search` the MCP tool calls, with its defaults (10 hits,
max_chars 20,000), on each corpus at its head: every query of its shared eval file and of its
question sets in bench/ranking/sets, at most QUERIES of them.
"""

from __future__ import annotations

import json
from collections import Counter

import msgspec

from docdex.index_format.layout import DataDir
from docdex.model.embedder import Embedder
from docdex.server.answers.docs import Docs
from docdex.server.boot import engine_loader
from docdex.server.versions import VersionHolder

from .indexing import head_index
from bench.common import EVAL, EVAL_FILES, ROOT, Figure, median, say, write_results

CORPORA = ("apm", "rustc", "msmarco", "vite", "mkdocs", "hugo", "rustbook")
SETS = ROOT / "bench" / "ranking" / "sets"
QUERIES = 400
_encode = msgspec.json.Encoder().encode


def bench_hit_fields() -> list[Figure]:
    embedder = Embedder.load()
    figures: list[Figure] = []
    raw: dict[str, dict[str, float]] = {}
    for corpus in CORPORA:
        sizes, bare, fields = _answers(DataDir(head_index(corpus)), embedder, _queries(corpus))
        raw[corpus] = dict(fields.most_common())
        group = f"hit-fields {corpus}"
        figures += [
            Figure(group, f"answer chars median (n={len(sizes)})", median(sizes), "ch"),
            Figure(group, "answer chars max", max(sizes), "ch"),
            Figure(group, "besides the hits' text: chars median", median(bare), "ch"),
        ]
        say(f"[hit-fields] {corpus}: median {median(sizes):,.0f} ch, max {max(sizes):,} ch")
    write_results("hit-fields", figures, raw)
    return figures


def _queries(corpus: str) -> list[str]:
    files = [EVAL / EVAL_FILES[corpus]] if corpus in EVAL_FILES else []
    files += sorted(SETS.glob(f"{corpus}.*.jsonl"))
    rows = [json.loads(line) for f in files for line in f.read_text().splitlines() if line.strip()]
    return [row["query"] for row in rows][:QUERIES]


def _answers(
    data: DataDir, embedder: Embedder, queries: list[str]
) -> tuple[list[int], list[int], Counter[str]]:
    """Each answer's size, its size less the hits' text, and each field's characters per
    answer (averaged over the queries)."""
    holder = VersionHolder(data, engine_loader(data, embedder))
    holder.refresh()
    docs = Docs(data, embedder, holder)
    sizes, bare, fields = [], [], Counter[str]()
    try:
        for query in queries:
            answer = msgspec.to_builtins(docs.search(query))
            size = len(_encode(answer).decode())
            sizes.append(size)
            bare.append(size - sum(len(_encode(hit["text"]).decode()) for hit in answer["results"]))
            for hit in answer["results"]:
                for key, value in hit.items():
                    fields[key] += (len(_encode({key: value}).decode()) - 1) / len(queries)
    finally:
        holder.stop()
    return sizes, bare, fields
