"""`docdex search` and `docdex eval`: the search engine run once, without a server."""

from __future__ import annotations

import argparse

from docdex.index_format.config import load_config
from docdex.index_format.layout import DataDir

from .commands import Commands, Context, add_command, json_flag


def add_commands(commands: Commands) -> None:
    search = add_command(commands, "search", cmd_search, "search the index without a server")
    search.add_argument("query", help="the words, identifier or question to look for")
    search.add_argument("--source", default="", help="only this source (default: every one)")
    search.add_argument(
        "--ref",
        default="",
        help="a branch or tag the source indexes, named as docdex names it: v2.1, "
        "SOURCE@v2.1 or refs/tags/v2.1 (default: each source's default branch; `docdex "
        "inspect` lists the refs)",
    )
    search.add_argument("--path-prefix", default="", help="only paths starting with this")
    search.add_argument(
        "--tag", action="append", default=[], help="only pages carrying this tag (repeatable)"
    )
    search.add_argument(
        "--changed-since",
        default="",
        help="only pages changed since this tag, branch, commit id, date (2026-11-01) or age "
        "(7d), read from the sources' git history",
    )
    search.add_argument(
        "-n", "--num-results", type=int, default=10, help="how many hits (1-100; default 10)"
    )
    _reranker_flag(search)
    json_flag(search)
    _add_eval(commands)


def _add_eval(commands: Commands) -> None:
    evaluate = add_command(commands, "eval", cmd_eval, "score retrieval on a query file")
    evaluate.add_argument(
        "queries",
        metavar="QUERIES.jsonl",
        help='one JSON object a line: {"id", "query", "class": known-item, literal, '
        'handwritten, labeled or unanswerable, "relevant": [{"path", "heading"?, "grade"?}], '
        '"alt"?: [...], "literal"?} (docs/retrieval.md, "Query files")',
    )
    evaluate.add_argument("--source", required=True, help="the source the queries are about")
    evaluate.add_argument("-k", type=int, default=3, help="the k of recall@k (default 3)")
    evaluate.add_argument("--dump", metavar="FILE", help="write each query's ranked hits")
    _reranker_flag(evaluate)
    evaluate.add_argument(
        "--fusion",
        default="adaptive",
        help="score fusion: adaptive (default), weighted (the previous default), rrf (the "
        "baseline), bm25 or dense (one retriever alone; docs/retrieval.md)",
    )
    evaluate.add_argument(
        "--baselines",
        action="store_true",
        help="score BM25 only, dense only, RRF, the default and MaxSim side by side",
    )
    evaluate.add_argument(
        "--against",
        metavar="DATA",
        help="score the same queries on the index of another data directory too, side by "
        "side: one built with another embedder, say (each searched with its own model)",
    )
    json_flag(evaluate)


def _reranker_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--reranker",
        help="default, none, maxsim, cross-encoder:DIR or the NAME of a rerank [models.NAME] "
        "table (default: the `reranker` setting)",
    )


def _reranker(data: DataDir, args: argparse.Namespace) -> str:
    return args.reranker or load_config(data).settings.reranker


def cmd_search(ctx: Context, args: argparse.Namespace) -> int:
    from .search import run_search_command

    return run_search_command(
        ctx.data,
        args.query,
        args.source,
        args.path_prefix,
        args.num_results,
        args.json,
        reranker=_reranker(ctx.data, args),
        ref=args.ref,
        tags=args.tag,
        model_environment=ctx.model_environment,
        changed_since=args.changed_since,
    )


def cmd_eval(ctx: Context, args: argparse.Namespace) -> int:
    from docdex.evaluation.runs import run_eval_command

    return run_eval_command(
        str(ctx.data.root),
        args.queries,
        args.source,
        args.k,
        args.json,
        args.dump,
        reranker=_reranker(ctx.data, args),
        fusion=args.fusion,
        baselines=args.baselines,
        against=args.against or "",
        model_environment=ctx.model_environment,
    )
