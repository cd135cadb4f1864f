"""`docdex eval`'s tables: one configuration's report, or the baselines side by side."""

from __future__ import annotations

from collections.abc import Callable

from .scoring import BaselineReport, ClassMetrics, EvalReport


def format_table(report: EvalReport) -> str:
    k = report.k
    head = f"{'class':<13} {'n':>5} {'level':<8} {'R@1':>6} {f'R@{k}':>6} {'R@10':>6} "
    head += f"{'MRR@10':>7} {'nDCG@10':>8} {'sec R@1':>8} {f'sec R@{k}':>9} {'sec MRR':>8} "
    head += f"{'flagged':>8}"
    lines = [
        f"source {report.source}, index version {report.index_version}, "
        f"{report.queries} queries, latency p50 {report.latency_p50_ms} ms "
        f"p95 {report.latency_p95_ms} ms",
        head,
        "-" * len(head),
    ]
    for c in report.classes:
        if c.level == "flag":  # nothing to find: only whether they were flagged counts
            ranked = " ".join(f"{'-':>{width}}" for width in (6, 6, 6, 7, 8, 8, 9, 8))
        else:
            ranked = (
                f"{_pct(c.recall_at_1):>6} {_pct(c.recall_at_k):>6} {_pct(c.recall_at_10):>6} "
                f"{c.mrr_at_10:>7.3f} {_opt(c.ndcg_at_10):>8} "
                f"{_opt_pct(c.section_recall_at_1):>8} {_opt_pct(c.section_recall_at_k):>9} "
                f"{_opt(c.section_mrr_at_10):>8}"
            )
        lines.append(f"{c.cls:<13} {c.queries:>5} {c.level:<8} {ranked} {_pct(c.flagged):>8}")
    if report.unanswerable_flagged is not None:
        lines.append(f"unanswerable flagged low_confidence: {_pct(report.unanswerable_flagged)}")
    if report.false_alarm_rate is not None:
        lines.append(f"false alarms (answerable flagged): {_pct(report.false_alarm_rate)}")
    return "\n".join(lines)


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _opt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _opt_pct(x: float | None) -> str:
    return "-" if x is None else _pct(x)


def format_baselines(reports: list[BaselineReport]) -> str:
    """One row per class and metric, one column per configuration."""
    scored = [(r.name, r.report) for r in reports if r.report is not None]
    first = scored[0][1]
    k = first.k
    width = max(10, *(len(name) + 2 for name, _ in scored))
    head = f"{'class':<13} {'metric':<12}" + "".join(f"{name:>{width}}" for name, _ in scored)
    lines = [
        f"source {first.source}, index version {first.index_version}, {first.queries} queries",
        head,
        "-" * len(head),
    ]
    for position, c in enumerate(first.classes):
        for label, value in _class_figures(c, k):
            cells = [value(report.classes[position]) for _, report in scored]
            lines.append(f"{c.cls:<13} {label:<12}" + "".join(f"{cell:>{width}}" for cell in cells))
    lines += [f"({r.name}: {r.skipped})" for r in reports if r.report is None]
    return "\n".join(lines)


def _class_figures(c: ClassMetrics, k: int) -> list[tuple[str, Callable[[ClassMetrics], str]]]:
    if c.level == "flag":
        return [("flagged", lambda m: _pct(m.flagged))]
    figures = [
        ("R@1", lambda m: f"{m.recall_at_1:.3f}"),
        (f"R@{k}", lambda m: f"{m.recall_at_k:.3f}"),
        ("MRR@10", lambda m: f"{m.mrr_at_10:.3f}"),
    ]
    if c.ndcg_at_10 is not None:
        figures.append(("nDCG@10", lambda m: _opt(m.ndcg_at_10)))
    if c.section_recall_at_k is not None:
        figures += [
            ("sec R@1", lambda m: _opt(m.section_recall_at_1)),
            (f"sec R@{k}", lambda m: _opt(m.section_recall_at_k)),
            ("sec MRR@10", lambda m: _opt(m.section_mrr_at_10)),
        ]
    figures.append(("flagged", lambda m: _pct(m.flagged)))
    return figures
