"""Score every set of bench/ranking per split with `docdex eval`, as a markdown table.

    python -m bench.ranking.report --index apm=/tmp/docdex-lead/apm \
        --index rustc=/tmp/docdex-lead/rustc --index powershell=/tmp/docdex-lead/ps:ps \
        [--reranker none] [--fusion rrf]

`--index CORPUS=DATA_DIR[:SOURCE]` names the data directory holding that corpus's index
(read only) and its source name (default: the corpus name). Each set file is cut by
`split` (and unanswerable sets also by `kind`) into temporary query files, each scored by
one `docdex eval --json` run; sets whose corpus has no --index are skipped.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from .check import HERE, SETS, expected_split

# The dense-friendly set is the shipped graded file; its split is the same line rule.
SHARED = {"msmarco-5k.queries.jsonl": "msmarco"}
COLUMNS = ["set", "split", "n", "R@3", "R@10", "MRR@10", "sec R@3", "nDCG@10", "flagged"]


def parse_index(values: list[str]) -> dict[str, tuple[str, str]]:
    out = {}
    for value in values:
        corpus, _, rest = value.partition("=")
        data, _, source = rest.partition(":")
        out[corpus] = (data, source or corpus)
    return out


def docdex() -> str:
    return str(Path(sys.executable).with_name("docdex"))


def score(rows: list[dict], data: str, source: str, extra: list[str]) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as handle:
        handle.write("".join(json.dumps(r) + "\n" for r in rows))
    try:
        done = subprocess.run(
            [docdex(), "--data", data, "eval", handle.name, "--source", source, "--json", *extra],
            check=True,
            capture_output=True,
            text=True,
        )
    finally:
        Path(handle.name).unlink()
    return json.loads(done.stdout)


def read_rows(path: Path) -> list[dict]:
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [json.loads(line) for line in lines]
    for number, row in enumerate(rows, start=1):
        row.setdefault("split", expected_split(number))
    return rows


def groups(name: str, rows: list[dict]) -> list[tuple[str, list[dict]]]:
    out = []
    for split in ("dev", "heldout"):
        part = [r for r in rows if r["split"] == split]
        out.append((split, part))
        if name.endswith("unanswerable.jsonl"):
            for kind in ("off-topic", "near-miss"):
                out.append((f"{split} {kind}", [r for r in part if r.get("kind") == kind]))
    return [(label, part) for label, part in out if part]


def row_of(name: str, label: str, report: dict) -> list[str]:
    cls = report["classes"][0]
    if cls["class"] == "unanswerable":
        return [name, label, str(cls["queries"]), "", "", "", "", "", pct(cls["flagged"])]
    section, ndcg = cls["section_recall_at_k"], cls["ndcg_at_10"]
    return [
        name,
        label,
        str(cls["queries"]),
        f"{cls['recall_at_k']:.3f}",
        f"{cls['recall_at_10']:.3f}",
        f"{cls['mrr_at_10']:.3f}",
        "" if section is None else f"{section:.3f}",
        "" if ndcg is None else f"{ndcg:.3f}",
        pct(cls["flagged"]),
    ]


def pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ranking.report")
    parser.add_argument("--index", action="append", default=[], metavar="CORPUS=DIR[:SOURCE]")
    parser.add_argument("--reranker")
    parser.add_argument("--fusion")
    args = parser.parse_args(argv)
    indexes = parse_index(args.index)
    extra = [f"--{o}={v}" for o, v in (("reranker", args.reranker), ("fusion", args.fusion)) if v]
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    from bench.common import EVAL

    files = [(HERE / n, c) for n, c in SETS.items()] + [(EVAL / n, c) for n, c in SHARED.items()]
    for path, corpus in files:
        name = path.name
        if corpus not in indexes or not path.exists():
            continue
        data, source = indexes[corpus]
        rows = read_rows(path)
        for label, part in groups(name, rows):
            cells = row_of(name.removesuffix(".jsonl"), label, score(part, data, source, extra))
            print("| " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
