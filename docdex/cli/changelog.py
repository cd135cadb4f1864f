"""`docdex changes SOURCE --since X`: what changed in a source's pages between two points of
its history, read from its repository (the index is not needed)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

import msgspec

from docdex.index_format.config import load_config

from .commands import Commands, Context, add_command, json_flag, print_answer

if TYPE_CHECKING:
    from docdex.history import ChangeSet, History, PageChange, SourceRepository

KIND_MARKS = {"added": "A", "modified": "M", "deleted": "D", "renamed": "R"}
ID_DIGITS = 12  # of a commit id, printed for people


def add_commands(commands: Commands) -> None:
    changes = add_command(
        commands,
        "changes",
        cmd_changes,
        "what changed in a source's pages between two points of its history",
    )
    changes.add_argument("source", help="the source whose history is read")
    changes.add_argument(
        "--since",
        required=True,
        help="a tag, branch, commit id, date (2026-11-01, 2026-11-01T09:30:00Z) or age "
        "(7d, 12h, 2w) to compare from",
    )
    changes.add_argument(
        "--until", default="", help="the same, to compare to (default: --ref's tip)"
    )
    changes.add_argument(
        "--ref",
        default="",
        help="the branch or tag whose history is read, dates along it (default: the source's "
        "branch)",
    )
    changes.add_argument("--path-prefix", default="", help="only pages whose path starts with this")
    json_flag(changes)


def cmd_changes(ctx: Context, args: argparse.Namespace) -> int:
    from docdex.history import History, SourceRepository

    config = load_config(ctx.data)
    source = SourceRepository.of(
        ctx.data, config.source(args.source), config.settings.section_levels
    )
    with History() as history:
        changes = every_page(history, source, args.since, args.until, args.ref, args.path_prefix)
    print_answer(changes, args.json, print_changes)
    return 0


def every_page(
    history: History,
    source: SourceRepository,
    since: str,
    until: str,
    ref: str,
    prefix: str,
    window: int = 0,
) -> ChangeSet:
    """Every page of the range in one answer, read `window` pages at a time (0: as many as
    a call may ask for); the windows after the first ask for the commits the first resolved
    to, so a branch that moves meanwhile does not mix two ranges."""
    from docdex.history import MAX_LIMIT

    window = window or MAX_LIMIT
    first = history.changes(source, since, until, ref, prefix, limit=window)
    pages, commits, notes = list(first.pages), list(first.commits), list(first.notes)
    complete = first.complete
    while len(pages) < first.total:
        more = history.changes(
            source, first.since.commit, first.until.commit, "", prefix, len(pages), window
        )
        pages += more.pages
        commits += more.commits
        notes += [note for note in more.notes if note not in notes]
        complete = complete and more.complete
    unique = {commit.id: commit for commit in commits}
    ordered = sorted(unique.values(), key=lambda c: (c.date, c.id), reverse=True)
    return msgspec.structs.replace(
        first, pages=pages, commits=ordered, complete=complete, notes=notes
    )


def print_changes(changes: ChangeSet) -> None:
    out = sys.stdout
    since, until = changes.since, changes.until
    start = f"{since.asked} ({_short(since.commit)}, {since.date})" if since.commit else "the start"
    end = f"{until.asked or until.kind} ({_short(until.commit)}, {until.date})"
    out.write(
        f"{changes.source}: {_count(changes.total, 'page')} changed from {start} to {end}; "
        f"{_count(len(changes.commits), 'commit')}\n"
    )
    subjects = {commit.id: commit for commit in changes.commits}
    for page in changes.pages:
        out.write(_page_line(page) + "\n")
        for commit_id in page.commits:
            commit = subjects[commit_id]
            out.write(f"    {_short(commit.id)} {commit.date[:10]}  {commit.subject}\n")
        if page.commits_omitted:
            out.write(f"    and {_count(page.commits_omitted, 'older commit')}\n")
    for note in changes.notes:
        out.write(f"note: {note}\n")


def _page_line(page: PageChange) -> str:
    where = f"{page.old_path} -> {page.path}" if page.old_path else page.path
    line = f"{KIND_MARKS[page.kind]} {where}"
    if page.lines_added is not None:
        line += f"  +{page.lines_added} -{page.lines_removed}"
    named = [*(["front matter"] if page.front_matter else []), *(s or "top" for s in page.sections)]
    if page.sections_omitted:
        named.append(f"{page.sections_omitted} more")
    if named:
        line += "  in " + "; ".join(named)
    return line + (f"  ({page.note})" if page.note else "")


def _count(n: int, thing: str) -> str:
    return f"{n:,} {thing}" + ("" if n == 1 else "s")


def _short(commit: str) -> str:
    return commit[:ID_DIGITS]
