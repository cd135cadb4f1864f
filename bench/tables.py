"""The tables of docs/benchmarks.md and docs/reliability.md, rendered from the summaries.

A document holds each bench's table between `<!-- bench:NAME -->` and `<!-- /bench:NAME -->`.
`rewrite` replaces what is between a bench's markers by its summaries' rendering; `stale`
lists the tables that differ from it (tests/bench/test_bench_tables.py keeps it empty), so the
documents cannot drift from bench/results.

Three layouts, chosen by bench (`layout`):
- a list, one row a figure (most benchmarks);
- a column per group, one row a figure name (the cost curve: a column per size);
- a row per group, a column for each of a few figures and one cell for the rest (the fault
  scenarios: a row per injection; the embedding graphs: a row per graph).
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Iterable
from pathlib import Path

from bench.summary import RESULTS, ROOT, Figure, Summary, committed

BENCHMARKS = ROOT / "docs" / "benchmarks.md"
RELIABILITY = ROOT / "docs" / "reliability.md"
WIDTH = 90  # the documents' prose
FAULTS = "faults-"  # the fault scenarios' summaries: faults-crash, faults-soak, ...
_BLOCK = re.compile(
    r"<!-- bench:(?P<name>[\w.-]+) -->\n(?P<body>.*?)<!-- /bench:(?P=name) -->", re.S
)

Layout = Callable[[list[Figure]], list[list[str]]]


def document(bench: str) -> Path:
    """The document a bench's table is in."""
    return RELIABILITY if bench.startswith(FAULTS) else BENCHMARKS


# --- cells ------------------------------------------------------------------------------


def number(value: float) -> str:
    if value != value:  # NaN: nothing was measured
        return "n/a"
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,}"


def amount(figure: Figure) -> str:
    return f"{number(figure.value)} {figure.unit}".strip()


def verdict(figures: Iterable[Figure]) -> str:
    judged = [f.met for f in figures if f.met is not None]
    if not judged:
        return ""
    return "ok" if all(judged) else "**missed**"


def judged_amount(figure: Figure) -> str:
    """An amount in a cell of its own: marked when it misses its target."""
    text = amount(figure)
    return f"**{text}** (target {figure.target})" if figure.met is False else text


# --- layouts ----------------------------------------------------------------------------


def _groups(figures: list[Figure]) -> dict[str, list[Figure]]:
    out: dict[str, list[Figure]] = {}
    for figure in figures:
        out.setdefault(figure.group, []).append(figure)
    return out


def listed(figures: list[Figure]) -> list[list[str]]:
    """One row a figure: its name (after its group's, when there are several groups), its
    value, its target and whether it was met."""
    several = len(_groups(figures)) > 1
    rows = [["figure", "value", "target", ""]]
    for f in figures:
        label = f"{f.group}: {f.name}" if several else f.name
        rows.append([label, amount(f), f.target, verdict([f])])
    return rows


def by_column(figures: list[Figure]) -> list[list[str]]:
    """A column per group, a row per figure name, then the row's target and verdict."""
    groups = _groups(figures)
    names = list(dict.fromkeys(f.name for f in figures))
    rows = [["figure", *groups, "target", ""]]
    for name in names:
        cells = [next((f for f in g if f.name == name), None) for g in groups.values()]
        found = [f for f in cells if f is not None]
        target = next((f.target for f in found if f.target), "")
        rows.append([name, *(amount(f) if f else "" for f in cells), target, verdict(found)])
    return rows


def by_row(columns: tuple[str, ...]) -> Layout:
    """A row per group: a column for each of `columns`, then the group's other figures in
    one cell."""

    def rows_of(figures: list[Figure]) -> list[list[str]]:
        rest = any(f.name not in columns for f in figures)
        rows = [["", *columns, *(["other figures"] if rest else [])]]
        for group, members in _groups(figures).items():
            named = {f.name: f for f in members}
            cells = [judged_amount(named[c]) if c in named else "" for c in columns]
            if rest:
                others = [f for f in members if f.name not in columns]
                cells.append("; ".join(f"{f.name}: {judged_amount(f)}" for f in others))
            rows.append([group, *cells])
        return rows

    return rows_of


ROWS = {  # bench (or prefix) -> the figures that get a column each in its row per group
    FAULTS: ("times", "lost"),  # bench/faults/rows.py: as_figures
    "gauntlet": ("crashes", "problems", "pages", "served exactly", "residue"),
    "embed-graphs": ("tokens/s", "x today's graph (median of rounds)", "share of float32 FMA peak"),
    "embed-peak": ("windows/s", "GFLOP/s", "share of FMA peak", "share of sgemm", "padding"),
}


def layout(bench: str) -> Layout:
    for prefix, columns in ROWS.items():
        if bench.startswith(prefix):
            return by_row(columns)
    if bench.startswith("scale"):
        return by_column
    return listed


def markdown(rows: list[list[str]]) -> list[str]:
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    head, *body = rows
    return [line(head), "|" + "---|" * len(head), *(line(r) for r in body)]


# --- a bench's block --------------------------------------------------------------------


def when(s: Summary) -> str:
    tree = " with uncommitted changes" if s.dirty else ""
    took = f", {s.seconds:,.0f} s" if s.seconds is not None else ""
    return f"{s.date[:10]} at `{s.commit}`{tree}{took}"


def machine(s: Summary) -> str:
    return f"Python {s.machine.python}, {s.machine.cpus} CPUs, {s.machine.platform}"


def lost(s: Summary) -> str:
    rows = [f for f in s.figures if f.name == "lost"]
    count = "1 row" if len(rows) == 1 else f"{len(rows)} rows"
    return f"lost {number(sum(f.value for f in rows))} in {count}"


def render(summaries: list[Summary]) -> str:
    """A bench's block: the table of its fullest run, when and where that ran, and a line
    for each other set's run (the fault campaign's quick set)."""
    main, *others = summaries
    lines = markdown(layout(main.bench)(main.figures))
    which = f"the {main.set} set, " if main.set else ""
    facts = [f"Last run: {which}{when(main)}; {machine(main)}."]
    facts += [f"The {other.set} set: {lost(other)}; {when(other)}." for other in others]
    lines += ["", *(textwrap.fill(f, WIDTH, break_on_hyphens=False) for f in facts)]
    return "\n".join(lines) + "\n"


# --- documents --------------------------------------------------------------------------


def blocks(text: str) -> dict[str, str]:
    """Each bench's block in a document: name -> what is between its markers."""
    return {m["name"]: m["body"] for m in _BLOCK.finditer(text)}


def summaries_for(doc: Path, results: Path = RESULTS) -> dict[str, list[Summary]]:
    """The committed summaries whose tables `doc` holds."""
    return {k: v for k, v in committed(results).items() if document(k) == doc}


def rewrite(doc: Path, summaries: dict[str, list[Summary]]) -> list[str]:
    """Render the blocks of `doc` whose bench is in `summaries`; the benches of
    `summaries` that have no block there."""
    text = doc.read_text()

    def fill(match: re.Match[str]) -> str:
        name = match["name"]
        if name not in summaries:
            return match[0]
        return f"<!-- bench:{name} -->\n{render(summaries[name])}<!-- /bench:{name} -->"

    doc.write_text(_BLOCK.sub(fill, text))
    return [name for name in summaries if name not in blocks(text)]


def update(doc: Path, benches: Iterable[str] | None = None) -> list[str]:
    """Rewrite the tables of `doc` (those of `benches`, or all) from the committed
    summaries; a line for each of them that has no table there."""
    found = summaries_for(doc)
    if benches is not None:
        found = {name: found[name] for name in benches if name in found}
    return [f"{name}: {doc.name} has no table for it" for name in rewrite(doc, found)]


def stale(doc: Path, summaries: dict[str, list[Summary]]) -> list[str]:
    """What keeps `doc` from showing `summaries`: a block that differs from its rendering
    or has no summary, a summary that has no block."""
    shown = blocks(doc.read_text())
    problems = [f"{name}: a table without a summary" for name in shown if name not in summaries]
    problems += [f"{name}: a summary without a table" for name in summaries if name not in shown]
    problems += [
        f"{name}: the table is not its summary's (rewrite the tables)"
        for name, body in shown.items()
        if name in summaries and body != render(summaries[name])
    ]
    return problems
