"""Running a query file through the engine: `docdex eval`, one configuration or the
baselines side by side (docs/retrieval.md, "Evaluation")."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import msgspec

from docdex.index_format.layout import DataDir
from docdex.model.model_environment import UNCONFIGURED, ModelEnvironment
from docdex.server.engine import Engine, EngineSettings, Fusion, Scope, SearchResult

from .scoring import DEPTH, BaselineReport, EvalReport, aggregate, load_queries, score_query
from .tables import format_baselines, format_table

SearchFn = Callable[[str], SearchResult]


class Baseline(msgspec.Struct, frozen=True):
    """A retrieval configuration to score beside the default (`docdex eval --baselines`)."""

    name: str
    fusion: Fusion
    reranker: str
    needs_tokens: bool = False  # only on an index with token vectors (late_interaction)


# Peer-style systems built from docdex's own retrievers, the fixed weighted fusion that was
# the default before adr/0026, then docdex's default (an index without token vectors, as
# `late_interaction` leaves it off), then the default with MaxSim over stored token vectors
# (docs/retrieval.md).
BASELINES = (
    Baseline("bm25", Fusion.BM25, "none"),
    Baseline("dense", Fusion.DENSE, "none"),
    Baseline("rrf", Fusion.RRF, "none"),
    Baseline("weighted", Fusion.WEIGHTED, "none"),
    Baseline("default", Fusion.ADAPTIVE, "none"),
    Baseline("maxsim", Fusion.ADAPTIVE, "maxsim", needs_tokens=True),
)


def evaluate(
    engine: Engine,
    queries_path: str | Path,
    source: str,
    k: int = 3,
    search_fn: SearchFn | None = None,
) -> EvalReport:
    """Run every query of the file through `search_fn` (default: the engine's search
    restricted to `source`, DEPTH results) and score the ranked lists."""
    if search_fn is None:
        scope = Scope(frozenset([source] if source else []))

        def search_fn(text: str) -> SearchResult:
            return engine.search(text, max(k, DEPTH), scope)

    queries = load_queries(queries_path)
    outcomes = []
    for q in queries:
        result = search_fn(q.query)
        outcomes.append(score_query(q, result.results, result.low_confidence, result.took_ms))
    return aggregate(queries, outcomes, k, source, engine.version)


def evaluate_baselines(
    engine: Engine, queries_path: str | Path, source: str, k: int = 3
) -> list[BaselineReport]:
    out = []
    for b in BASELINES:
        if b.needs_tokens and not engine.index.has_token_vectors:
            out.append(BaselineReport(b.name, None, "the index has no token vectors"))
            continue
        settings = msgspec.structs.replace(engine.settings, fusion=b.fusion, reranker=b.reranker)
        report = evaluate(engine.with_settings(settings), queries_path, source, k)
        out.append(BaselineReport(b.name, report))
    return out


def write_dump(report: EvalReport, path: str | Path) -> None:
    """One JSON line per query: its outcome and ranked hits, for diffing two configurations."""
    encoder = msgspec.json.Encoder()
    with open(path, "wb") as out:
        for outcome in report.outcomes:
            out.write(encoder.encode(outcome) + b"\n")


def run_eval_command(
    data_dir: str,
    queries: str,
    source: str,
    k: int,
    as_json: bool,
    dump: str | None,
    reranker: str = "default",
    fusion: str = "adaptive",
    baselines: bool = False,
    against: str = "",
    model_environment: ModelEnvironment = UNCONFIGURED,
) -> int:
    """`docdex eval`: print the table (or JSON), optionally dump per-query hits; exit code.
    With `baselines`, every configuration of BASELINES is scored instead of one; with
    `against` (another data directory), the same queries on both indexes side by side, each
    searched with the model its version was built with (loaded with `model_environment`)."""
    from docdex.errors import InvalidArgument
    from docdex.index_format.layout import IndexFormatError
    from docdex.model.files import ModelMissing
    from docdex.model.protocol import EmbedderUnavailable
    from docdex.server.boot import engine_settings

    if k < 1 or k > DEPTH:
        print(f"docdex eval: -k must be between 1 and {DEPTH}", file=sys.stderr)
        return 2
    if (baselines or against) and dump:
        print("docdex eval: --dump scores one configuration and one index", file=sys.stderr)
        return 2
    if baselines and against:
        print("docdex eval: --baselines and --against each make the columns", file=sys.stderr)
        return 2
    try:
        settings = engine_settings(
            DataDir(data_dir), reranker, model_environment, fusion=Fusion(fusion)
        )
    except ValueError:
        choices = ", ".join(f.value for f in Fusion)
        print(f"docdex eval: unknown fusion {fusion!r}; choose one of: {choices}", file=sys.stderr)
        return 2
    engines: list[Engine] = []
    try:
        for where in [data_dir, *([against] if against else [])]:
            engines.append(_open(DataDir(where), settings))
        engine = engines[0]
        for opened in engines:
            opened.index.check_source(source)
        if baselines or against:
            if against:
                reports = [
                    BaselineReport(_label(e), evaluate(e, queries, source, k)) for e in engines
                ]
            else:
                reports = evaluate_baselines(engine, queries, source, k)
            print(format_baselines(reports) if not as_json else _baselines_json(reports))
            return 0
        report = evaluate(engine, queries, source, k)
    except (IndexFormatError, ModelMissing, EmbedderUnavailable) as exc:
        print(f"docdex eval: {exc}", file=sys.stderr)
        return 2
    except (OSError, ValueError, InvalidArgument) as exc:
        print(f"docdex eval: {exc}", file=sys.stderr)
        return 2
    finally:
        for opened in engines:
            opened.close()
    if dump:
        write_dump(report, dump)
    if as_json:
        print(msgspec.json.encode(msgspec.structs.replace(report, outcomes=[])).decode())
    else:
        print(format_table(report))
    return 0


def _open(data: DataDir, settings: EngineSettings) -> Engine:
    from docdex.server.query_model import load_query_model

    model = load_query_model(data, settings.model_environment)
    return Engine.open(data, model, settings=settings)


def _label(engine: Engine) -> str:
    """A column's name: the embedder the version was built with, and its data directory."""
    index = engine.index
    return f"{index.manifest.embedder.id} ({index.data.root.name})"


def _baselines_json(reports: list[BaselineReport]) -> str:
    summaries = [
        msgspec.structs.replace(
            r, report=msgspec.structs.replace(r.report, outcomes=[]) if r.report else None
        )
        for r in reports
    ]
    return msgspec.json.encode(summaries).decode()
