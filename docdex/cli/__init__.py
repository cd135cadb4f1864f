"""The `docdex` command: a thin argparse layer over the application modules."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path

import msgspec

from docdex.index_format.config import (
    DEFAULT_INCLUDE,
    ConfigError,
    SourceConfig,
    default_data_dir,
    load_config,
    save_config,
    validate_ref_pattern,
    validate_source_name,
)
from docdex.index_format.layout import DataDir, IndexFormatError
from docdex.runtime.logs import FORMATS, LoggingError, configure_logging

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


class CommandError(Exception):
    """A failure to report as one line, without a traceback."""


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help()
        return EXIT_USAGE
    data = DataDir(Path(args.data).expanduser().resolve() if args.data else default_data_dir())
    try:
        _configure_logging(args)
    except LoggingError as exc:
        print(f"docdex: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return args.run(data, args) or EXIT_OK
    except (CommandError, ConfigError, IndexFormatError) as exc:
        print(f"docdex: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="docdex", description="Documentation search for AI agents, from markdown in git."
    )
    parser.add_argument(
        "--data", help="data directory (default: $DOCDEX_DATA or $XDG_DATA_HOME/docdex)"
    )
    parser.add_argument(
        "--log-format",
        choices=FORMATS,
        help="log lines as readable text or JSON lines (default: $DOCDEX_LOG_FORMAT or text)",
    )
    parser.add_argument(
        "--log-level",
        help="DEBUG, INFO, WARNING or ERROR (default: $DOCDEX_LOG_LEVEL, else INFO for "
        "serve, watch and worker and WARNING for the others)",
    )
    commands = parser.add_subparsers(metavar="COMMAND")
    _add_watch_command(commands)
    _add_source_commands(commands)
    _add_index_commands(commands)
    _add_inspect_commands(commands)
    _add_query_commands(commands)
    _add_worker_commands(commands)
    return parser


# long-running commands log at INFO by default
_DAEMONS = {"cmd_serve", "cmd_mcp", "cmd_watch", "cmd_worker"}


def _configure_logging(args) -> None:
    daemon = getattr(args.run, "__name__", "") in _DAEMONS
    configure_logging(args.log_format, args.log_level, "INFO" if daemon else "WARNING")


def _command(commands, name: str, run: Callable, help: str) -> argparse.ArgumentParser:
    sub = commands.add_parser(name, help=help, description=help)
    sub.set_defaults(run=run)
    return sub


def _json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def _print_json(value: object) -> None:
    sys.stdout.write(msgspec.json.format(msgspec.json.encode(value).decode(), indent=2) + "\n")


# --- sources -------------------------------------------------------------------------------


def _add_source_commands(commands) -> None:
    source = commands.add_parser("source", help="add, list or remove sources")
    sub = source.add_subparsers(metavar="ACTION")
    add = _command(sub, "add", cmd_source_add, "register a git repository as a source")
    add.add_argument("name")
    add.add_argument("location", help="bare repository, checkout, or git URL")
    add.add_argument("--branch", default="", help="branch to index (default: HEAD's)")
    add.add_argument(
        "--ref",
        action="append",
        default=[],
        metavar="PATTERN",
        help="more branches or tags to index, each on its own, e.g. 'release/*' or 'v2.*' "
        "(repeatable; `*` matches '/' too)",
    )
    add.add_argument(
        "--description", default="", help="one line on what the source holds, shown to agents"
    )
    add.add_argument(
        "--include",
        action="append",
        metavar="GLOB",
        help=f"files to index (repeatable; default: {' '.join(DEFAULT_INCLUDE)})",
    )
    add.add_argument(
        "--exclude", action="append", default=[], metavar="GLOB", help="files to skip (repeatable)"
    )
    listing = _command(sub, "list", cmd_source_list, "list the configured sources")
    _json_flag(listing)
    remove = _command(
        sub, "remove", cmd_source_remove, "remove a source (its documents leave the next version)"
    )
    remove.add_argument("name")


def cmd_source_add(data: DataDir, args) -> int:
    from docdex.index_format.config import SourceError, source_kind

    name = validate_source_name(args.name)
    refs = [validate_ref_pattern(pattern) for pattern in args.ref]
    location = args.location
    try:
        kind = source_kind(location)
    except SourceError as exc:
        raise CommandError(str(exc)) from None
    if kind != "remote":
        location = str(Path(location).expanduser().resolve())
    data.ensure()
    config = load_config(data)
    if any(s.name == name for s in config.sources):
        raise CommandError(f"source {name!r} already exists; remove it first to change it")
    source = SourceConfig(
        name=name,
        location=location,
        branch=args.branch,
        refs=refs,
        include=args.include or list(DEFAULT_INCLUDE),
        exclude=args.exclude,
        description=args.description.strip(),
    )
    save_config(data, msgspec.structs.replace(config, sources=[*config.sources, source]))
    print(f"added source {name} ({kind}: {location}); run `docdex index {name}` to index it")
    return EXIT_OK


def cmd_source_list(data: DataDir, args) -> int:
    config = load_config(data)
    if args.json:
        _print_json(config.sources)
        return EXIT_OK
    if not config.sources:
        print(config.describe_sources())
    for s in config.sources:
        print(
            f"{s.name}\t{s.location}\t{_refs_text(s)}\tinclude={','.join(s.include)}"
            + (f"\texclude={','.join(s.exclude)}" if s.exclude else "")
            + (f"\t{s.description}" if s.description else "")
        )
    return EXIT_OK


def _refs_text(source: SourceConfig) -> str:
    """The refs a source indexes: its branch (or HEAD's), then its `refs` patterns."""
    branch = source.branch or "HEAD branch"
    return branch + (f" + refs {' '.join(source.refs)}" if source.refs else "")


def cmd_source_remove(data: DataDir, args) -> int:
    config = load_config(data)
    config.source(args.name)  # raises with the list of valid names
    kept = [s for s in config.sources if s.name != args.name]
    save_config(data, msgspec.structs.replace(config, sources=kept))
    print(f"removed source {args.name}; its documents leave the next version (`docdex index`)")
    return EXIT_OK


# --- indexing ------------------------------------------------------------------------------


def _add_index_commands(commands) -> None:
    index = _command(commands, "index", cmd_index, "index sources now (incrementally)")
    index.add_argument("names", nargs="*", metavar="NAME", help="sources (default: all)")
    index.add_argument(
        "--full",
        action="store_true",
        help="re-read every file (vectors of unchanged text are still reused)",
    )
    _json_flag(index)
    gc = _command(commands, "gc", cmd_gc, "delete old versions and unreferenced files")
    _json_flag(gc)


def cmd_index(data: DataDir, args) -> int:
    from docdex.indexer.build.nospace import NoSpace
    from docdex.indexer.build.run import IndexingError, index_sources

    config = load_config(data)
    if not config.sources and not args.names:
        raise CommandError(config.describe_sources())
    try:
        report = index_sources(
            data,
            config,
            args.names or None,
            full=args.full,
            on_wait=lambda pid: print(
                f"waiting for the running indexer (pid {pid})...", file=sys.stderr
            ),
        )
    except (IndexingError, NoSpace) as exc:
        raise CommandError(str(exc)) from None
    if args.json:
        _print_json(report)
    else:
        _print_run(report)
    return EXIT_ERROR if any(s.status == "failed" for s in report.sources) else EXIT_OK


def _print_run(report) -> None:
    for s in report.sources:
        line = f"{s.name}: {s.status}"
        if s.status in ("indexed", "branch-deleted", "removed"):
            line += (
                f" — files +{s.added} ~{s.modified} -{s.deleted} >{s.renamed}; "
                f"chunks embedded {s.chunks_embedded}, reused {s.chunks_reused}"
            )
        if s.commit:
            line += f" @ {s.commit[:12]}"
        print(line)
        if s.error:
            print(f"  error: {s.error}")
        for problem in s.problems:
            print(f"  skipped {problem.path}: {problem.problem}")
        for ignored in s.ignored_refs:
            print(f"  not indexed: {ignored}")
    if report.published:
        print(
            f"published version {report.version} ({report.chunks} chunks, "
            f"{report.segments} segments{', compacted' if report.compacted else ''}) "
            f"in {report.took_s:.1f}s"
        )
    else:
        print(f"nothing changed; version {report.version} stays current")


def cmd_gc(data: DataDir, args) -> int:
    from docdex.indexer.build.gc import collect_garbage
    from docdex.indexer.build.lock import writer_lock

    data.check()
    with writer_lock(data):
        report = collect_garbage(data, load_config(data).settings.keep_versions)
    if args.json:
        _print_json(report)
    else:
        print(
            f"kept versions {report.kept_versions}; deleted {report.deleted_files} entries, "
            f"{report.freed_bytes / 1e6:.1f} MB"
        )
    return EXIT_OK


def _add_watch_command(commands) -> None:
    watch = _command(
        commands,
        "watch",
        cmd_watch,
        "index checkouts' working trees (uncommitted edits included) as files are saved",
    )
    watch.add_argument("names", nargs="*", metavar="NAME", help="checkout sources (default: all)")
    watch.add_argument(
        "--quiet-ms",
        type=int,
        default=200,
        help="index once the tree has been quiet this long (default: 200)",
    )
    watch.add_argument(
        "--max-latency-ms",
        type=int,
        default=1000,
        help="index at the latest this long after the first change of a burst (default: 1000)",
    )


def cmd_watch(data: DataDir, args) -> int:
    import signal
    import threading

    from docdex.indexer.build.run import IndexingError
    from docdex.indexer.triggers.watch import WatchError, watch

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    data.ensure()
    try:
        watch(
            data,
            args.names or None,
            stop,
            quiet_ms=args.quiet_ms,
            max_latency_ms=args.max_latency_ms,
        )
    except (WatchError, IndexingError) as exc:
        raise CommandError(str(exc)) from None
    except OSError as exc:  # e.g. inotify's limit on watches
        raise CommandError(f"cannot watch: {exc} (see fs.inotify.max_user_watches)") from None
    return EXIT_OK


# --- inspection ----------------------------------------------------------------------------


def _add_inspect_commands(commands) -> None:
    inspect = _command(
        commands, "inspect", cmd_inspect_versions, "show versions, a source, or a document"
    )
    _json_flag(inspect)
    sub = inspect.add_subparsers(metavar="WHAT")
    source = _command(sub, "source", cmd_inspect_source, "a source's state and pages")
    source.add_argument("name")
    _json_flag(source)
    doc = _command(sub, "doc", cmd_inspect_doc, "a document's chunks")
    doc.add_argument("doc_id", metavar="DOC_ID", help="SOURCE:PATH")
    _json_flag(doc)
    verify = _command(
        commands, "verify", cmd_verify, "check every kept version's files (exit 1 if damaged)"
    )
    verify.add_argument("--version", type=int, metavar="N", help="only version N")
    _json_flag(verify)


def cmd_inspect_versions(data: DataDir, args) -> int:
    from docdex import inspection

    versions = inspection.versions(data)
    if args.json:
        _print_json(versions)
        return EXIT_OK
    if not versions:
        print("no published version yet; run `docdex index`")
    for v in versions:
        mark = "*" if v.current else " "
        commits = ", ".join(f"{n}@{c[:12] or '-'}" for n, c in sorted(v.commits.items()))
        print(
            f"{mark} version {v.version}  {v.created_at}  {v.segments} segments  "
            f"{v.chunks} chunks  {v.vectors} vectors  {v.bytes / 1e6:.1f} MB  {commits}"
        )
    return EXIT_OK


def cmd_inspect_source(data: DataDir, args) -> int:
    from docdex import inspection

    info = inspection.source(data, args.name)
    if args.json:
        _print_json(info)
        return EXIT_OK
    s = info.state
    print(
        f"{s.name} ({s.kind}) {s.location}\n  branch {s.branch} @ {s.commit or '-'}\n"
        f"  indexed {s.indexed_at}: {s.files} files, {s.chunks} chunks"
    )
    if s.last_error:
        print(f"  last error: {s.last_error}")
    for problem in info.problems:
        print(f"  problem {problem.path}: {problem.problem}")
    for path in info.pages:
        print(f"  {path}")
    return EXIT_OK


def cmd_inspect_doc(data: DataDir, args) -> int:
    from docdex import inspection

    info = inspection.document(data, args.doc_id)
    if args.json:
        _print_json(info)
        return EXIT_OK
    p = info.page
    print(
        f"{p.doc_id}: {p.title}\n  created {p.created}, modified {p.modified} "
        f"({p.commit[:12]}), {p.size} bytes"
    )
    for c in info.chunks:
        print(
            f"  {c.chunk_id}  lines {c.start_line}-{c.end_line}  {c.windows} windows  "
            f"{c.chars} chars  {c.breadcrumb}"
        )
    return EXIT_OK


def cmd_verify(data: DataDir, args) -> int:
    from docdex.index_format.store import list_versions
    from docdex.index_format.verify import verify_data

    data.check()
    if args.version is not None and args.version not in list_versions(data):
        print(f"docdex: error: version {args.version} is not on disk", file=sys.stderr)
        return EXIT_USAGE
    report = verify_data(data.root, args.version)
    if args.json:
        _print_json(report)
    else:
        for problem in report.problems:
            print(f"{problem.file}: {problem.kind}: {problem.detail}")
        for v in report.versions:
            mark = "*" if v.version == report.current else " "
            n = len(v.problems)
            state = "ok" if v.ok else f"{n} problem{'s' if n > 1 else ''}"
            print(f"{mark} version {v.version}: {state}" + "".join(f"; {n}" for n in v.notes))
            for problem in v.problems:
                print(f"    {problem.file}: {problem.kind}: {problem.detail}")
    return EXIT_OK if report.ok else EXIT_ERROR


# --- querying and serving ------------------------------------------------------------------


def _add_query_commands(commands) -> None:
    search = _command(commands, "search", cmd_search, "search the index without a server")
    search.add_argument("query")
    search.add_argument("--source", default="")
    search.add_argument("--path-prefix", default="")
    search.add_argument("-n", "--num-results", type=int, default=10)
    _reranker_flag(search)
    _json_flag(search)
    evaluate = _command(commands, "eval", cmd_eval, "score retrieval on a query file")
    evaluate.add_argument("queries", metavar="QUERIES.jsonl")
    evaluate.add_argument("--source", required=True)
    evaluate.add_argument("-k", type=int, default=3)
    evaluate.add_argument("--dump", metavar="FILE", help="write each query's ranked hits")
    _reranker_flag(evaluate)
    evaluate.add_argument(
        "--fusion",
        default="adaptive",
        help="score fusion: adaptive (default), weighted (the default before W2.5), rrf (the "
        "baseline), bm25 or dense (one retriever alone; docs/retrieval.md)",
    )
    evaluate.add_argument(
        "--baselines",
        action="store_true",
        help="score BM25 only, dense only, RRF, the default and MaxSim side by side",
    )
    _json_flag(evaluate)
    serve = _command(commands, "serve", cmd_serve, "run the MCP server")
    serve.add_argument("--host", default=os.environ.get("DOCDEX_HOST", "127.0.0.1"))
    serve.add_argument("--port", type=int, default=int(os.environ.get("DOCDEX_PORT", "8085")))
    serve.add_argument(
        "--insecure", action="store_true", help="allow a non-loopback address without DOCDEX_TOKEN"
    )
    serve.add_argument(
        "--no-worker", action="store_true", help="do not run the indexing worker beside it"
    )
    mcp = _command(
        commands,
        "mcp",
        cmd_mcp,
        "the MCP server over stdin/stdout, for clients that launch it (reads the index only)",
    )
    mcp.add_argument(
        "--watch",
        action="store_true",
        help="also index the checkout sources' working trees as they change, as `docdex "
        "watch` does, unless another process already watches them",
    )


def _reranker_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--reranker",
        help="default, none, maxsim or cross-encoder:DIR (default: the `reranker` setting)",
    )


def _reranker(data: DataDir, args) -> str:
    return args.reranker or load_config(data).settings.reranker


def cmd_search(data: DataDir, args) -> int:
    from .search import run_search_command

    return run_search_command(
        data,
        args.query,
        args.source,
        args.path_prefix,
        args.num_results,
        args.json,
        reranker=_reranker(data, args),
    )


def cmd_eval(data: DataDir, args) -> int:
    from docdex.evaluation.scoring import run_eval_command

    return run_eval_command(
        str(data.root),
        args.queries,
        args.source,
        args.k,
        args.json,
        args.dump,
        reranker=_reranker(data, args),
        fusion=args.fusion,
        baselines=args.baselines,
    )


def cmd_serve(data: DataDir, args) -> int:
    from docdex.server.http.auth import BindRefused, check_bind, server_token
    from docdex.server.http.limits import LimitsRefused, limits_from_env
    from docdex.server.memory import limit_malloc_arenas
    from docdex.server.query_model import start_loading

    try:
        check_bind(args.host, server_token(), args.insecure)
        limits = limits_from_env()
    except (BindRefused, LimitsRefused) as exc:
        raise CommandError(str(exc)) from None
    limit_malloc_arenas()  # before any thread starts
    model = start_loading(data)  # before the other imports: it loads while they run
    from docdex.indexer.triggers.background import Background
    from docdex.server.http.app import serve

    background = Background(data, worker=not args.no_worker)  # starts once listening
    try:
        return serve(data, args.host, args.port, args.insecure, model, background.start, limits)
    finally:
        background.stop()


def cmd_mcp(data: DataDir, args) -> int:
    from docdex.server.memory import limit_malloc_arenas
    from docdex.server.query_model import start_loading

    limit_malloc_arenas()  # before any thread starts
    model = start_loading(data)  # before the other imports: it loads while they run
    from docdex.server.mcp.stdio import serve_stdio

    if not args.watch:
        return serve_stdio(data, model)
    from docdex.indexer.triggers.watch import watching_in_background

    data.ensure()
    with watching_in_background(data):
        return serve_stdio(data, model)


# --- hook and worker -----------------------------------------------------------------------


def _add_worker_commands(commands) -> None:
    hook = commands.add_parser("hook", help="install or remove the post-receive hook")
    sub = hook.add_subparsers(metavar="ACTION")
    install = _command(
        sub, "install", cmd_hook_install, "index every push to a bare repository (post-receive)"
    )
    install.add_argument("repo", metavar="BARE_REPO")
    install.add_argument("--source", help="source name (default: the repository's name)")
    uninstall = _command(
        sub, "uninstall", cmd_hook_uninstall, "remove the hook, restoring any earlier one"
    )
    uninstall.add_argument("repo", metavar="BARE_REPO")
    worker = _command(commands, "worker", cmd_worker, "run the indexing worker (the queue)")
    worker.add_argument("--once", action="store_true", help="drain the queue once, then exit")
    worker.add_argument(
        "--idle-exit", type=float, metavar="SECONDS", help="exit after this long with no work"
    )
    worker.add_argument("--parent-pid", type=int, help=argparse.SUPPRESS)
    worker.add_argument("--detach", action="store_true", help=argparse.SUPPRESS)


def cmd_hook_install(data: DataDir, args) -> int:
    from docdex.hooks.install import HookError, install_hook

    try:
        done = install_hook(data, args.repo, args.source)
    except HookError as exc:
        raise CommandError(str(exc)) from None
    if done.registered:
        print(f"added source {done.source} ({done.hook.parent.parent})")
    tracked = ", ".join(f"{s.name} ({_refs_text(s)})" for s in done.tracked)
    print(f"installed {done.hook}: pushes index {tracked} in {data.root}")
    if done.chained:
        print(f"the earlier hook runs first, kept as {done.hook.name}.docdex-chained")
    return EXIT_OK


def cmd_hook_uninstall(data: DataDir, args) -> int:
    from docdex.hooks.install import HookError, uninstall_hook

    try:
        done = uninstall_hook(args.repo)
    except HookError as exc:
        raise CommandError(str(exc)) from None
    if not done.removed:
        print(f"no docdex hook in {done.hook}; nothing to do")
    elif done.restored:
        print(f"removed the docdex hook; the earlier hook is back at {done.hook}")
    else:
        print(f"removed {done.hook} (the source stays: `docdex source remove NAME`)")
    return EXIT_OK


def cmd_worker(data: DataDir, args) -> int:
    from docdex.indexer.triggers.worker import run_worker

    return run_worker(data, args.once, args.idle_exit, args.parent_pid, args.detach)


if __name__ == "__main__":
    sys.exit(main())
