"""`docdex index`, `docdex gc` and `docdex watch`: writing the index."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from docdex.index_format.config import ConfigError, load_config

from .commands import EXIT_ERROR, EXIT_OK, Commands, Context, add_command, json_flag, print_answer
from .inspection import commit_text, count_text
from .models import say_embedder_notice

if TYPE_CHECKING:
    from docdex.indexer.run.pipeline import RunReport
    from docdex.indexer.run.report import SourceReport
    from docdex.indexer.run.storage.garbage_collection import GcReport


def add_commands(commands: Commands) -> None:
    index = add_command(commands, "index", cmd_index, "index sources now (incrementally)")
    index.add_argument("names", nargs="*", metavar="NAME", help="sources (default: all)")
    index.add_argument(
        "--full",
        action="store_true",
        help="re-read every file (vectors of unchanged text are still reused)",
    )
    json_flag(index)
    json_flag(add_command(commands, "gc", cmd_gc, "delete old versions and unreferenced files"))
    _add_watch(commands)


def _add_watch(commands: Commands) -> None:
    watch = add_command(
        commands,
        "watch",
        cmd_watch,
        "index checkouts' working trees (uncommitted edits included) as files are saved",
        daemon=True,
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


def cmd_index(ctx: Context, args: argparse.Namespace) -> int:
    from docdex.indexer.run.pipeline import index_sources

    config = load_config(ctx.data)
    if not config.sources and not args.names:
        raise ConfigError(config.describe_sources())
    report = index_sources(
        ctx.data,
        config,
        args.names or None,
        full=args.full,
        on_wait=lambda pid: print(
            f"waiting for the running indexer (pid {pid})...", file=sys.stderr
        ),
        model_environment=ctx.model_environment,
    )
    print_answer(report, args.json, _print_run)
    say_embedder_notice(ctx.data, config)
    return EXIT_ERROR if any(s.status == "failed" for s in report.sources) else EXIT_OK


def _print_run(report: RunReport) -> None:
    for s in report.sources:
        print(f"{s.name}: {_STATUS_WORDS.get(s.status, s.status)}" + _commit_words(s))
        if s.status in ("indexed", "branch-deleted", "removed"):
            print(f"  files: {_file_counts(s)}")
        if s.status == "indexed":
            print(
                f"  chunks: {s.chunks_embedded} embedded, {s.chunks_reused} reused "
                "(already embedded)"
            )
        if s.error:
            print(f"  error: {s.error}")
        for problem in s.problems:
            print(f"  skipped {problem.path}: {problem.problem}")
        for ignored in s.ignored_refs:
            print(f"  not indexed: {ignored}")
    if report.published:
        compacted = ", compacted" if report.compacted else ""
        print(
            f"published version {report.version} ({count_text(report.chunks, 'chunk')}, "
            f"{count_text(report.segments, 'segment')}{compacted}) in {report.took_s:.1f}s"
        )
    else:
        print(f"nothing changed; version {report.version} stays current")


_STATUS_WORDS = {"branch-deleted": "branch deleted", "removed": "removed from the index"}


def _commit_words(source: SourceReport) -> str:
    return f", {commit_text(source.commit)}" if source.commit else ""


def _file_counts(source: SourceReport) -> str:
    """The changed files in words ("81 added, 0 modified, 0 deleted, 0 renamed"), then
    those read again that did not change."""
    counts = (
        f"{source.added} added, {source.modified} modified, {source.deleted} deleted, "
        f"{source.renamed} renamed"
    )
    if source.reread:
        counts += f"; {source.reread} unchanged (read again)"
    return counts


def cmd_gc(ctx: Context, args: argparse.Namespace) -> int:
    from docdex.indexer.run.lock import writer_lock
    from docdex.indexer.run.storage.garbage_collection import collect_garbage

    ctx.data.check()
    with writer_lock(ctx.data):
        report = collect_garbage(ctx.data, load_config(ctx.data).settings.keep_versions)
    print_answer(report, args.json, _print_gc)
    return EXIT_OK


def _print_gc(report: GcReport) -> None:
    print(
        f"kept versions {report.kept_versions}; deleted {report.deleted_files} entries, "
        f"{report.freed_bytes / 1e6:.1f} MB"
    )


def cmd_watch(ctx: Context, args: argparse.Namespace) -> int:
    import signal
    import threading

    from docdex.indexer.triggers.watch import watch

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    ctx.data.ensure()
    watch(
        ctx.data,
        args.names or None,
        stop,
        quiet_ms=args.quiet_ms,
        max_latency_ms=args.max_latency_ms,
        model_environment=ctx.model_environment,
    )
    return EXIT_OK
