"""Every query set scored by `docdex eval --baselines`, as one markdown table.

    python -m bench.ranking.side_by_side --index apm=DATA_DIR[:SOURCE] ...

For each corpus given, its shared query file (../shared/eval) and its sets of bench/ranking
each go through one `docdex eval FILE --source SOURCE --baselines --json` run (the real
CLI, in its own process). A row per class: recall@3 / MRR@10, then section recall@1 /
section recall@3 / section MRR@10 where sections are judged; nDCG@10 on graded sets; the
share flagged `low_confidence` for unanswerable questions; and after each file's answerable
classes, its false-alarm rate. `--only TEXT`: the files whose label holds TEXT alone.
A column per configuration (`docdex eval --baselines`: BM25 alone, dense alone, RRF k=60,
the weighted fusion, the default; MaxSim only on an index with token vectors).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from .check import HERE, SETS
from .report import docdex, parse_index
from bench.common import EVAL, EVAL_FILES
from bench.tables import markdown

Report = dict[str, Any]


def set_files(corpus: str) -> list[tuple[str, Path]]:
    """(label, path) of the corpus's query files: the shared one first."""
    out = []
    if corpus in EVAL_FILES:
        out.append((f"{corpus} (shared)", EVAL / EVAL_FILES[corpus]))
    for name, of in SETS.items():
        if of == corpus:
            out.append((name.removesuffix(".jsonl"), HERE / name))
    return out


def baselines(data: str, source: str, path: Path) -> list[Report]:
    command = [docdex(), "--data", data, "eval", str(path), "--source", source]
    done = subprocess.run(
        [*command, "--baselines", "--json"], check=True, capture_output=True, text=True
    )
    return [b for b in json.loads(done.stdout) if b["report"] is not None]


def cell(metrics: Report) -> str:
    if metrics["level"] == "flag":
        return f"{metrics['flagged']:.0%}"
    if metrics.get("ndcg_at_10") is not None:
        return f"{metrics['ndcg_at_10']:.3f}".removeprefix("0")
    figures = [metrics["recall_at_k"], metrics["mrr_at_10"]]
    if metrics.get("section_recall_at_k") is not None:
        figures += [
            metrics["section_recall_at_1"],
            metrics["section_recall_at_k"],
            metrics["section_mrr_at_10"],
        ]
    return " / ".join(f"{x:.3f}".removeprefix("0") for x in figures)


def rows_of(label: str, scored: list[Report]) -> list[list[str]]:
    first = scored[0]["report"]
    rows = []
    for position, metrics in enumerate(first["classes"]):
        kind = "unanswerable: flagged" if metrics["level"] == "flag" else metrics["class"]
        cells = [cell(b["report"]["classes"][position]) for b in scored]
        rows.append([label, f"{kind} ({metrics['queries']})", *cells])
    if first["false_alarm_rate"] is not None and any(
        m["level"] != "flag" for m in first["classes"]
    ):
        alarms = [f"{b['report']['false_alarm_rate']:.1%}" for b in scored]
        rows.append([label, "false alarms", *alarms])
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ranking.side_by_side")
    parser.add_argument("--index", action="append", default=[], metavar="CORPUS=DIR[:SOURCE]")
    parser.add_argument(
        "--only", default="", metavar="TEXT", help="only the query files whose label holds TEXT"
    )
    args = parser.parse_args(argv)
    table: list[list[str]] = []
    for corpus, (data, source) in parse_index(args.index).items():
        for label, path in set_files(corpus):
            if args.only not in label:
                continue
            print(f"scoring {label}", file=sys.stderr, flush=True)
            scored = baselines(data, source, path)
            if not table:
                table.append(["set", "class (n)", *(b["name"] for b in scored)])
            table += rows_of(label, scored)
    print("\n".join(markdown(table)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
