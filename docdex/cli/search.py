"""`docdex search QUERY`: the server's search engine run once, without a server."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Sequence

import msgspec

from docdex.index_format.layout import DataDir
from docdex.index_format.ref_names import UnknownRef
from docdex.model.model_environment import UNCONFIGURED, ModelEnvironment
from docdex.server.engine import Engine, Hit, Scope, SearchResult

SNIPPET_CHARS = 240
FOUND_BY = {  # which retriever found a hit (Hit.match)
    "bm25": "found by keywords",
    "dense": "found by meaning",
    "both": "found by keywords and meaning",
}
SCORE_LEGEND = "score: how well a hit matches this query, comparable within one search only"
WHERE_REFS_ARE = "`docdex inspect` shows each source's refs"


def run_search_command(
    data: DataDir,
    query: str,
    source: str = "",
    path_prefix: str = "",
    n: int = 10,
    as_json: bool = False,
    reranker: str = "default",
    ref: str = "",
    tags: Sequence[str] = (),
    model_environment: ModelEnvironment = UNCONFIGURED,
    changed_since: str = "",
) -> int:
    """Search the current version and print the hits; returns the exit code. Errors (a bad
    argument, no data directory, no version, a refused version) reach the CLI's handler."""
    from docdex.server.boot import engine_settings
    from docdex.server.query_model import load_query_model

    # the model the current version was built with
    embedder = load_query_model(data, model_environment)
    settings = engine_settings(data, reranker, model_environment)
    engine = Engine.open(data, embedder, settings=settings)
    try:
        scope = engine.scope(source, ref, path_prefix, tags)
        if changed_since:
            scope = changed_scope(data, engine, scope, changed_since)
        result = engine.search(query, n, scope)
    except UnknownRef as exc:
        raise exc.pointing_to(WHERE_REFS_ARE) from None
    finally:
        engine.close()
    if as_json:
        encoded = msgspec.json.encode(result).decode()
        sys.stdout.write(msgspec.json.format(encoded, indent=2) + "\n")
    else:
        sys.stdout.write(format_result(result))
    return 0


def changed_scope(data: DataDir, engine: Engine, scope: Scope, since: str) -> Scope:
    """`scope` narrowed to the pages changed since `since`, as search_docs narrows it."""
    from docdex.index_format.config import load_config
    from docdex.server.answers.git_history.source_history import SourceHistory
    from docdex.server.answers.permalinks import LinkBook
    from docdex.server.answers.source_limits import EVERY_SOURCE

    history = SourceHistory(data, LinkBook(data))
    try:
        return history.changed_scope(load_config(data), EVERY_SOURCE, engine.index, scope, since)
    finally:
        history.close()


def format_result(result: SearchResult) -> str:
    lines = [format_hit(rank, hit) for rank, hit in enumerate(result.results, 1)]
    summary = (
        f"{len(result.results)} results from index version {result.index_version} "
        f"in {result.took_ms:.1f} ms"
    )
    if result.results:
        summary += f"\n{SCORE_LEGEND}"
    if result.low_confidence:
        summary += "\nlow confidence: nothing matched well; try other words or an identifier"
    return "\n".join([*lines, summary]) + "\n"


def format_hit(rank: int, hit: Hit) -> str:
    where = f"{hit.source}:{hit.path}:{hit.start_line}-{hit.end_line}"
    return (
        f"{rank:>2}. {where}  score {hit.score:.3f}, {FOUND_BY.get(hit.match, hit.match)}\n"
        f"    {hit.heading}\n"
        f"{textwrap.indent(snippet(hit.text), '    ')}\n"
    )


def snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    """The chunk's text after its heading lines (the breadcrumb shows them), whitespace
    collapsed, cut at `limit` characters."""
    lines = text.split("\n")
    while len(lines) > 1 and (lines[0].lstrip().startswith("#") or not lines[0].strip()):
        lines.pop(0)
    flat = " ".join(" ".join(lines).split())
    if len(flat) <= limit:
        return flat
    return flat[: limit - 1].rsplit(" ", 1)[0] + " …"
