"""Two embedders compared query by query: every query set of every corpus given, scored on
an index built with each (the same corpus, settings and commit), the differences paired.

    python -m bench.ranking.embedder_pairs --base CORPUS=DATA_DIR[:SOURCE] ...
        --other CORPUS=DATA_DIR[:SOURCE] ... [--resamples N] [--json FILE] [--keep DIR]

Each query file (the corpus's shared one, then its sets here) goes through `docdex eval FILE
--source SOURCE --dump FILE` once on each side (the real CLI, in its own process). Per query:
the reciprocal rank of its first counting hit within 10 at the level its class is judged at
(0 when none), at section level too where headings are judged, nDCG@10 on graded queries,
and whether it was flagged `low_confidence`. Printed: per set, the questions found in the
top 3 on each side and the most the other side loses (page, section; flagged on
unanswerable sets); then the pooled test (docs/adr/0041, "The paired test"): the mean of
other - base over every answerable query, with a bootstrap 95 % interval (queries resampled
within their set) and a t interval, and the same with every set weighted alike (a
stratified bootstrap).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from .report import docdex, parse_index
from .side_by_side import set_files

TOP = 3  # the k of recall@k the per-set counts use
DEPTH = 10  # the depth of MRR@10


class Paired(msgspec.Struct, frozen=True):
    """One query scored on both indexes."""

    set: str
    id: str
    answerable: bool
    rr: tuple[float, float]  # reciprocal rank at the class's level (base, other)
    section_rr: tuple[float, float] | None  # at section level, where headings are judged
    ndcg: tuple[float, float] | None
    top: tuple[bool, bool]  # found within TOP at the class's level
    section_top: tuple[bool, bool] | None
    flagged: tuple[bool, bool]


def outcomes(data: str, source: str, path: Path, keep: Path | None) -> dict[str, dict[str, Any]]:
    """Each query's outcome in `docdex eval --dump`, by id; with `keep`, the dump is kept
    there and read again by the next run instead of scoring the file again."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = keep or Path(tmp)
        dump = folder / f"{Path(data).name}-{Path(data).parent.name}-{path.stem}.jsonl"
        if not dump.exists():
            folder.mkdir(parents=True, exist_ok=True)
            command = [docdex(), "--data", data, "eval", str(path), "--source", source]
            fresh = dump.with_suffix(".tmp")
            subprocess.run(
                [*command, "--dump", str(fresh), "--json"],
                check=True,
                capture_output=True,
                text=True,
            )
            fresh.rename(dump)
        rows = [json.loads(line) for line in dump.read_text().splitlines() if line.strip()]
    return {row["id"]: row for row in rows}


def _rr(rank: int | None) -> float:
    return 1.0 / rank if rank is not None and rank <= DEPTH else 0.0


def _top(rank: int | None) -> bool:
    return rank is not None and rank <= TOP


def paired(label: str, base: dict[str, dict], other: dict[str, dict]) -> list[Paired]:
    out = []
    for qid, a in base.items():
        b = other[qid]
        sections = a["has_sections"]
        out.append(
            Paired(
                set=label,
                id=qid,
                answerable=a["class"] != "unanswerable",
                rr=(_rr(a["rank"]), _rr(b["rank"])),
                section_rr=(_rr(a["section_rank"]), _rr(b["section_rank"])) if sections else None,
                ndcg=(a["ndcg"], b["ndcg"]) if a["ndcg"] is not None else None,
                top=(_top(a["rank"]), _top(b["rank"])),
                section_top=(_top(a["section_rank"]), _top(b["section_rank"]))
                if sections
                else None,
                flagged=(a["low_confidence"], b["low_confidence"]),
            )
        )
    return out


# --- the statistics ---------------------------------------------------------------------------


def t_interval(diffs: list[float]) -> tuple[float, float, float]:
    """(mean, low, high): the mean and its 95 % t interval (normal quantile: n is large)."""
    mean = statistics.fmean(diffs)
    if len(diffs) < 2:
        return mean, mean, mean
    half = 1.96 * statistics.stdev(diffs) / math.sqrt(len(diffs))
    return mean, mean - half, mean + half


def bootstrap(
    groups: list[list[float]], resamples: int, weighted_alike: bool
) -> tuple[float, float]:
    """95 % percentile interval of the mean difference, the queries of each group resampled
    with replacement within it; `weighted_alike`: the mean of the groups' means (each set
    counts the same), else the mean over every query."""
    rng = np.random.default_rng(44)
    sums = np.zeros(resamples)
    means = np.zeros(resamples)
    for group in groups:
        values = np.asarray(group)
        drawn = np.zeros(resamples)
        for start in range(0, resamples, 500):  # bounded memory: 500 resamples at a time
            rows = min(500, resamples - start)
            drawn[start : start + rows] = values[
                rng.integers(0, len(values), (rows, len(values)))
            ].sum(axis=1)
        sums += drawn
        means += drawn / len(values)
    total = sum(len(g) for g in groups)
    estimates = means / len(groups) if weighted_alike else sums / total
    low, high = np.percentile(estimates, [2.5, 97.5])
    return float(low), float(high)


def pooled(pairs: list[Paired], field: str, resamples: int) -> dict[str, Any]:
    """The paired test of `field` ("rr", "section_rr" or "ndcg") over the queries that have it."""
    by_set: dict[str, list[float]] = {}
    for p in pairs:
        value = getattr(p, field)
        if p.answerable and value is not None:
            by_set.setdefault(p.set, []).append(value[1] - value[0])
    diffs = [d for group in by_set.values() for d in group]
    mean, t_low, t_high = t_interval(diffs)
    boot = bootstrap(list(by_set.values()), resamples, weighted_alike=False)
    set_means = [statistics.fmean(g) for g in by_set.values()]
    alike = bootstrap(list(by_set.values()), resamples, weighted_alike=True)
    return {
        "field": field,
        "queries": len(diffs),
        "sets": len(by_set),
        "better": sum(d > 0 for d in diffs),
        "worse": sum(d < 0 for d in diffs),
        "mean": mean,
        "t95": (t_low, t_high),
        "bootstrap95": boot,
        "sets_alike_mean": statistics.fmean(set_means),
        "sets_alike_bootstrap95": alike,
    }


def per_set(pairs: list[Paired]) -> list[dict[str, Any]]:
    """Per set: queries found within TOP (page, section) or flagged, on each side."""
    rows: dict[str, dict[str, Any]] = {}
    for p in pairs:
        row = rows.setdefault(
            p.set, {"set": p.set, "answerable": 0, "unanswerable": 0, "top": [0, 0],
                    "section_top": [0, 0], "sections": 0, "flagged": [0, 0], "rr": [0.0, 0.0]}
        )  # fmt: skip
        if not p.answerable:
            row["unanswerable"] += 1
            row["flagged"] = [row["flagged"][i] + p.flagged[i] for i in (0, 1)]
            continue
        row["answerable"] += 1
        row["top"] = [row["top"][i] + p.top[i] for i in (0, 1)]
        row["rr"] = [row["rr"][i] + p.rr[i] for i in (0, 1)]
        if p.section_top is not None:
            row["sections"] += 1
            row["section_top"] = [row["section_top"][i] + p.section_top[i] for i in (0, 1)]
    return list(rows.values())


def worst_loss(row: dict[str, Any]) -> int:
    """The most questions the other side loses on a set: found within TOP (page or section)
    or, on an unanswerable set, flagged."""
    losses = [row["top"][0] - row["top"][1], row["flagged"][0] - row["flagged"][1]]
    if row["sections"]:
        losses.append(row["section_top"][0] - row["section_top"][1])
    return max(losses)


# --- printing ---------------------------------------------------------------------------------


def set_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        f"| set | queries | R@{TOP} base / other | section R@{TOP} base / other | "
        "MRR@10 base / other | flagged (unanswerable) base / other | most lost |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        n = r["answerable"]
        top = f"{r['top'][0]} / {r['top'][1]}" if n else ""
        sec = f"{r['section_top'][0]} / {r['section_top'][1]}" if r["sections"] else ""
        mrr = f"{r['rr'][0] / n:.3f} / {r['rr'][1] / n:.3f}" if n else ""
        flag = f"{r['flagged'][0]} / {r['flagged'][1]}" if r["unanswerable"] else ""
        queries = n or r["unanswerable"]
        lines.append(
            f"| {r['set']} | {queries} | {top} | {sec} | {mrr} | {flag} | {worst_loss(r):+d} |"
        )
    return lines


def test_lines(tests: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| paired difference (other - base) | queries (sets) | better / worse | mean "
        "| bootstrap 95 % | t 95 % | sets alike: mean | sets alike: bootstrap 95 % |",
        "|---|---|---|---|---|---|---|---|",
    ]
    names = {"rr": "reciprocal rank", "section_rr": "section reciprocal rank", "ndcg": "nDCG@10"}
    for t in tests:
        lo, hi = t["bootstrap95"]
        tlo, thi = t["t95"]
        alo, ahi = t["sets_alike_bootstrap95"]
        lines.append(
            f"| {names[t['field']]} | {t['queries']} ({t['sets']}) | {t['better']} / "
            f"{t['worse']} | {t['mean']:+.4f} | [{lo:+.4f}, {hi:+.4f}] | [{tlo:+.4f}, "
            f"{thi:+.4f}] | {t['sets_alike_mean']:+.4f} | [{alo:+.4f}, {ahi:+.4f}] |"
        )
    return lines


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.ranking.embedder_pairs")
    ap.add_argument("--base", action="append", required=True, metavar="CORPUS=DATA[:SOURCE]")
    ap.add_argument("--other", action="append", required=True, metavar="CORPUS=DATA[:SOURCE]")
    ap.add_argument("--resamples", type=int, default=10_000)
    ap.add_argument("--json", type=Path, help="write every paired query and the tests here")
    ap.add_argument("--keep", type=Path, help="keep each side's dumps here, and reuse them")
    args = ap.parse_args(argv)
    base, other = parse_index(args.base), parse_index(args.other)
    if set(base) != set(other):
        print("--base and --other must name the same corpora", file=sys.stderr)
        return 2
    pairs: list[Paired] = []
    for corpus, (data, source) in base.items():
        for label, path in set_files(corpus):
            print(f"[embedder-pairs] {label}", file=sys.stderr, flush=True)
            a = outcomes(data, source, path, args.keep)
            b = outcomes(other[corpus][0], other[corpus][1], path, args.keep)
            pairs += paired(label, a, b)
    rows = per_set(pairs)
    fields = [f for f in ("rr", "section_rr", "ndcg") if any(getattr(p, f) for p in pairs)]
    tests = [pooled(pairs, field, args.resamples) for field in fields]
    print("\n".join(set_table(rows) + [""] + test_lines(tests)))
    if args.json:
        args.json.write_bytes(msgspec.json.encode({"pairs": pairs, "sets": rows, "tests": tests}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
