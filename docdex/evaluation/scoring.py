"""Scoring ranked hits against a query file, as docs/retrieval.md ("Scoring") defines.

- literal: a hit counts when its text contains the literal, case-insensitively.
- known-item: section level, a hit counts when its path matches a relevant (or alt) entry
  and that entry's heading equals one of the hit's headings (case-folded, whitespace
  collapsed).
- other classes: page level, a hit counts when its path is a relevant or alt path; section
  level is reported beside it (over queries whose entries name headings).
- unanswerable (no relevant entry): the share flagged `low_confidence`, and the false-alarm
  rate (flagged share) among the answerable queries.
- per class: recall@k (k, 1 and 10), MRR@10, the same at section level where headings are
  judged, and nDCG@10 over distinct paths for graded sets
  (linear gain = grade, discount log2(rank + 1), ideal from all judged paths).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgspec

DEPTH = 10  # metrics look at the first 10 hits


class Judgment(msgspec.Struct, frozen=True):
    path: str
    heading: str = ""
    grade: int | None = None


class Query(msgspec.Struct, frozen=True):
    id: str
    query: str
    relevant: list[Judgment] = []
    alt: list[Judgment] = []
    literal: str = ""
    # `class` is a Python keyword; the file's field is renamed on decode
    cls: str = msgspec.field(default="", name="class")


class QueryOutcome(msgspec.Struct, rename={"cls": "class"}):
    id: str
    cls: str
    query: str
    rank: int | None  # first counting hit (1-based) at the class's level, within DEPTH
    section_rank: int | None  # section level beside page level (None: no headings judged)
    has_sections: bool
    ndcg: float | None
    low_confidence: bool
    took_ms: float
    hits: list[dict[str, Any]]


class ClassMetrics(msgspec.Struct, rename={"cls": "class"}):
    cls: str
    queries: int
    level: str  # "literal" | "section" | "page" | "flag"
    recall_at_k: float
    recall_at_10: float
    mrr_at_10: float
    ndcg_at_10: float | None = None
    section_recall_at_k: float | None = None
    section_mrr_at_10: float | None = None
    recall_at_1: float = 0.0
    section_recall_at_1: float | None = None  # the judged section is the first hit
    flagged: float = 0.0  # share with low_confidence


class EvalReport(msgspec.Struct):
    source: str
    index_version: int
    k: int
    queries: int
    classes: list[ClassMetrics]
    unanswerable_flagged: float | None
    false_alarm_rate: float | None
    latency_p50_ms: float
    latency_p95_ms: float
    outcomes: list[QueryOutcome] = []


# --- loading --------------------------------------------------------------------------------


def load_queries(path: str | Path) -> list[Query]:
    decoder = msgspec.json.Decoder(Query)
    out = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(decoder.decode(line))
        except msgspec.DecodeError as exc:
            raise ValueError(f"{path}:{n}: not a query record: {exc}") from None
    return out


# --- scoring one ranked list ------------------------------------------------------------------


def norm_heading(text: str) -> str:
    return " ".join(text.split()).casefold()


def is_answerable(q: Query) -> bool:
    return bool(q.relevant)


def level_of(q: Query) -> str:
    if not is_answerable(q):
        return "flag"
    if q.cls == "literal":
        return "literal"
    if q.cls == "known-item":
        return "section"
    return "page"


def _judged(q: Query) -> list[Judgment]:
    return [*q.relevant, *q.alt]


def page_match(q: Query, hit) -> bool:
    return hit.path in {j.path for j in _judged(q)}


def section_match(q: Query, hit) -> bool:
    headings = {norm_heading(h) for h in hit.headings}
    return any(
        j.heading and j.path == hit.path and norm_heading(j.heading) in headings for j in _judged(q)
    )


def literal_match(q: Query, hit) -> bool:
    return bool(q.literal) and q.literal.casefold() in hit.text.casefold()


def counts(q: Query, hit, level: str) -> bool:
    if level == "literal":
        return literal_match(q, hit)
    if level == "section":
        return section_match(q, hit)
    if level == "page":
        return page_match(q, hit)
    return False


def first_rank(q: Query, hits: list, level: str) -> int | None:
    for rank, hit in enumerate(hits[:DEPTH], 1):
        if counts(q, hit, level):
            return rank
    return None


def is_graded(q: Query) -> bool:
    return any(j.grade is not None for j in q.relevant)


def ndcg_at_10(q: Query, hits: list) -> float:
    """nDCG@10 over distinct paths, gain = grade (default 1), ideal from all judged paths."""
    gains: dict[str, int] = {}
    for j in _judged(q):
        gains[j.path] = max(gains.get(j.path, 0), 1 if j.grade is None else j.grade)
    paths: list[str] = []
    for hit in hits:
        if hit.path not in paths:
            paths.append(hit.path)
        if len(paths) == DEPTH:
            break
    dcg = sum(gains.get(p, 0) / math.log2(i + 2) for i, p in enumerate(paths))
    ideal = sorted(gains.values(), reverse=True)[:DEPTH]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def score_query(q: Query, hits: list, low_confidence: bool, took_ms: float = 0.0) -> QueryOutcome:
    level = level_of(q)
    has_sections = level == "page" and any(j.heading for j in _judged(q))
    return QueryOutcome(
        id=q.id,
        cls=q.cls,
        query=q.query,
        rank=first_rank(q, hits, level),
        section_rank=first_rank(q, hits, "section") if has_sections else None,
        has_sections=has_sections,
        ndcg=ndcg_at_10(q, hits) if is_graded(q) else None,
        low_confidence=low_confidence,
        took_ms=took_ms,
        hits=[_hit_record(q, hit, level, r) for r, hit in enumerate(hits[:DEPTH], 1)],
    )


def _hit_record(q: Query, hit, level: str, rank: int) -> dict[str, Any]:
    return {
        "rank": rank,
        "path": hit.path,
        "heading": " › ".join(hit.headings),
        "chunk_id": getattr(hit, "chunk_id", ""),
        "score": getattr(hit, "score", 0.0),
        "match": getattr(hit, "match", ""),
        "counts": counts(q, hit, level),
    }


# --- aggregating ----------------------------------------------------------------------------


def _mean(values: Iterable[float]) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


def _recall(ranks: list[int | None], k: int) -> float:
    return _mean(1.0 if r is not None and r <= k else 0.0 for r in ranks)


def _mrr(ranks: list[int | None]) -> float:
    return _mean(1.0 / r if r is not None and r <= DEPTH else 0.0 for r in ranks)


def class_metrics(cls: str, outcomes: list[QueryOutcome], queries: list[Query], k: int):
    level = level_of(queries[0])
    ranks = [o.rank for o in outcomes]
    ndcgs = [o.ndcg for o in outcomes if o.ndcg is not None]
    sections = [o.section_rank for o in outcomes if o.has_sections]
    return ClassMetrics(
        cls=cls,
        queries=len(outcomes),
        level=level,
        recall_at_k=_recall(ranks, k),
        recall_at_10=_recall(ranks, DEPTH),
        mrr_at_10=_mrr(ranks),
        ndcg_at_10=_mean(ndcgs) if ndcgs else None,
        section_recall_at_k=_recall(sections, k) if sections else None,
        section_mrr_at_10=_mrr(sections) if sections else None,
        recall_at_1=_recall(ranks, 1),
        section_recall_at_1=_recall(sections, 1) if sections else None,
        flagged=_mean(1.0 if o.low_confidence else 0.0 for o in outcomes),
    )


def aggregate(
    queries: list[Query], outcomes: list[QueryOutcome], k: int, source: str, version: int
) -> EvalReport:
    by_class: dict[str, tuple[list[Query], list[QueryOutcome]]] = {}
    for q, o in zip(queries, outcomes, strict=True):
        cls = q.cls if is_answerable(q) else "unanswerable"
        by_class.setdefault(cls, ([], []))
        by_class[cls][0].append(q)
        by_class[cls][1].append(o)
    classes = [class_metrics(c, os_, qs, k) for c, (qs, os_) in by_class.items()]
    unanswerable = [o for q, o in zip(queries, outcomes, strict=True) if not is_answerable(q)]
    answerable = [o for q, o in zip(queries, outcomes, strict=True) if is_answerable(q)]
    took = sorted(o.took_ms for o in outcomes) or [0.0]
    return EvalReport(
        source=source,
        index_version=version,
        k=k,
        queries=len(queries),
        classes=classes,
        unanswerable_flagged=_mean(o.low_confidence for o in unanswerable)
        if unanswerable
        else None,
        false_alarm_rate=_mean(o.low_confidence for o in answerable) if answerable else None,
        latency_p50_ms=round(statistics.median(took), 2),
        latency_p95_ms=round(took[min(len(took) - 1, int(0.95 * len(took)))], 2),
        outcomes=outcomes,
    )


class BaselineReport(msgspec.Struct):
    name: str
    report: EvalReport | None  # None: not applicable to this index (why in `skipped`)
    skipped: str = ""
