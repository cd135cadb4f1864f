"""`docdex hook install|uninstall` and `docdex worker`: how a push gets indexed."""

from __future__ import annotations

import argparse
from pathlib import Path

from docdex.index_format.config import SourceConfig

from .commands import (
    EXIT_OK,
    Commands,
    Context,
    add_command,
    added_text,
    new_source_settings,
    refs_text,
    source_options,
)


def add_commands(commands: Commands) -> None:
    hook = commands.add_parser("hook", help="install or remove the post-receive hook")
    actions = hook.add_subparsers(metavar="ACTION")
    install = add_command(
        actions, "install", cmd_hook_install, "index every push to a bare repository (post-receive)"
    )
    install.add_argument("repo", metavar="BARE_REPO")
    install.add_argument("--source", help="source name (default: the repository's name)")
    source_options(install, changing=False)  # for the source it registers
    uninstall = add_command(
        actions, "uninstall", cmd_hook_uninstall, "remove the hook, restoring any earlier one"
    )
    uninstall.add_argument("repo", metavar="BARE_REPO")
    worker = add_command(
        commands, "worker", cmd_worker, "run the indexing worker (the queue)", daemon=True
    )
    worker.add_argument("--once", action="store_true", help="drain the queue once, then exit")
    worker.add_argument(
        "--idle-exit", type=float, metavar="SECONDS", help="exit after this long with no work"
    )
    worker.add_argument("--parent-pid", type=int, help=argparse.SUPPRESS)
    worker.add_argument("--detach", action="store_true", help=argparse.SUPPRESS)


def cmd_hook_install(ctx: Context, args: argparse.Namespace) -> int:
    from docdex.hooks.installer import install_hook

    done = install_hook(ctx.data, args.repo, args.source, settings=new_source_settings(args))
    if done.registered:
        print(added_text(next(s for s in done.tracked if s.name == done.source)))
    pushes = pushes_text(Path(args.repo).expanduser().resolve(), done.tracked)
    print(f"installed {done.hook}: {pushes} in {ctx.data.root}")
    if done.chained:
        print(f"the earlier hook runs first, kept as {done.hook.name}.docdex-chained")
    return EXIT_OK


def pushes_text(repository: Path, tracked: list[SourceConfig]) -> str:
    """What a push to the repository indexes, as an installed hook matches it."""
    if not tracked:
        return (
            f"pushes index nothing, as no source tracks {repository} now "
            f"(`docdex hook uninstall {repository}` removes the hook)"
        )
    return "pushes index " + ", ".join(f"{s.name} ({refs_text(s)})" for s in tracked)


def cmd_hook_uninstall(ctx: Context, args: argparse.Namespace) -> int:
    from docdex.hooks.installer import uninstall_hook

    done = uninstall_hook(args.repo)
    if not done.removed:
        print(f"no docdex hook in {done.hook}; nothing to do")
    elif done.restored:
        print(f"removed the docdex hook; the earlier hook is back at {done.hook}")
    else:
        print(f"removed {done.hook} (the source stays: `docdex source remove NAME`)")
    return EXIT_OK


def cmd_worker(ctx: Context, args: argparse.Namespace) -> int:
    from docdex.indexer.triggers.worker import run_worker

    return run_worker(
        ctx.data, args.once, args.idle_exit, args.parent_pid, args.detach, logs=ctx.logs
    )
