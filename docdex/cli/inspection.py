"""`docdex inspect [source NAME | doc DOC_ID]` and `docdex verify`: reading the index as it
is on disk."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from docdex.index_format.ref_names import split_key

from .commands import (
    EXIT_ERROR,
    EXIT_OK,
    Commands,
    Context,
    UsageError,
    add_command,
    json_flag,
    print_answer,
    print_json,
)

if TYPE_CHECKING:  # docdex.index_views reads the store, which imports numpy: not at parse time
    from docdex import index_views
    from docdex.index_format.records import SourceState
    from docdex.index_format.verify import VerifyReport

SHORT_COMMIT = 12  # hex digits of a commit in a listing, as the hook's messages show it


def add_commands(commands: Commands) -> None:
    inspect = add_command(
        commands, "inspect", cmd_inspect_versions, "show versions, a source, or a document"
    )
    json_flag(inspect)
    what = inspect.add_subparsers(metavar="WHAT")
    source = add_command(what, "source", cmd_inspect_source, "a source's state and pages")
    source.add_argument("name")
    _ref_flag(source)
    doc = add_command(what, "doc", cmd_inspect_doc, "a document's chunks")
    doc.add_argument("doc_id", metavar="DOC_ID", help="SOURCE:PATH")
    _ref_flag(doc)
    verify = add_command(
        commands, "verify", cmd_verify, "check every kept version's files (exit 1 if damaged)"
    )
    verify.add_argument("--version", type=int, metavar="N", help="only version N")
    json_flag(verify)


def _ref_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--ref",
        default="",
        help="at this branch or tag of the source: v2.1, SOURCE@v2.1 or refs/tags/v2.1 "
        "(default: its default branch)",
    )
    json_flag(parser)


def cmd_inspect_versions(ctx: Context, args: argparse.Namespace) -> int:
    from docdex import index_views

    found = index_views.version_details(ctx.data)
    if args.json:
        print_json([details.info for details in found])
        return EXIT_OK
    _print_versions(found)
    under_way = index_views.indexing(ctx.data)
    if under_way:
        print(f"now: {under_way}")
    return EXIT_OK


def cmd_inspect_source(ctx: Context, args: argparse.Namespace) -> int:
    from docdex import index_views

    print_answer(index_views.source(ctx.data, args.name, args.ref), args.json, _print_source)
    return EXIT_OK


def cmd_inspect_doc(ctx: Context, args: argparse.Namespace) -> int:
    from docdex import index_views

    print_answer(index_views.document(ctx.data, args.doc_id, args.ref), args.json, _print_document)
    return EXIT_OK


def cmd_verify(ctx: Context, args: argparse.Namespace) -> int:
    from docdex.index_format.store import list_versions
    from docdex.index_format.verify import verify_data

    ctx.data.check()
    if args.version is not None and args.version not in list_versions(ctx.data):
        raise UsageError(f"version {args.version} is not on disk")
    report = verify_data(ctx.data.root, args.version)
    print_answer(report, args.json, _print_verification)
    return EXIT_OK if report.ok else EXIT_ERROR


def _print_versions(versions: list[index_views.VersionDetails]) -> None:
    if not versions:
        print("no published version yet; run `docdex index`")
    for details in versions:
        v = details.info
        served = " (current)" if v.current else ""
        print(
            f"{'*' if v.current else ' '} version {v.version}{served}, {v.created_at}: "
            f"{count_text(v.segments, 'segment')}, {count_text(v.chunks, 'chunk')}, "
            f"{count_text(v.vectors, 'vector')}, {v.bytes / 1e6:.1f} MB"
            + (f", {count_text(v.waiting, 'chunk')} waiting for vectors" if v.waiting else "")
        )
        for state in details.entries:
            print(f"    {entry_text(state)}")


def _print_source(info: index_views.SourceDetails) -> None:
    s = info.state
    where = ", ".join(filter(None, [ref_text(s), commit_text(s.commit, full=True)]))
    print(
        f"{s.name} ({s.kind}) {s.location}\n  {where}\n"
        f"  indexed {s.indexed_at}: {count_text(s.files, 'file')}, "
        f"{count_text(s.chunks, 'chunk')}"
    )
    if s.last_error:
        print(f"  last error: {s.last_error}")
    for problem in info.problems:
        print(f"  problem {problem.path}: {problem.problem}")
    for path in info.pages:
        print(f"  {path}")


def _print_document(info: index_views.DocInfo) -> None:
    p = info.page
    commit = commit_text(p.commit) if p.commit else "an uncommitted edit"
    print(
        f"{p.doc_id}: {p.title}\n  created {p.created}, modified {p.modified} "
        f"({commit}), {p.size} bytes"
    )
    for c in info.chunks:
        print(
            f"  {c.chunk_id}  lines {c.start_line}-{c.end_line}  "
            f"{count_text(c.windows, 'window')}  "
            f"{c.chars} chars  {c.breadcrumb}"
        )


def commit_text(commit: str, full: bool = False) -> str:
    """A recorded commit in words: "commit 39b6a1c2e4f5", and for a checkout's working
    tree as `docdex watch` indexes it ("<sha>+worktree") "... + uncommitted edits"."""
    from docdex.indexer.sources.worktree import WORKTREE_SUFFIX  # dulwich: not at parse time

    sha = commit.removesuffix(WORKTREE_SUFFIX)
    shown = sha if full else sha[:SHORT_COMMIT]
    if sha == commit:
        return f"commit {shown}" if shown else "no commit"
    return f"commit {shown} + uncommitted edits" if shown else "uncommitted files, no commit yet"


def ref_text(state: SourceState) -> str:
    """The branch or tag an entry indexes: "branch main", "tag 0.9.0" ("" if unrecorded)."""
    ref = state.ref or state.branch
    return f"{state.ref_kind} {ref}" if ref else ""


def count_text(n: int, noun: str) -> str:
    """A count and its noun, singular for one: "1 chunk", "2 chunks"."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def entry_text(state: SourceState) -> str:
    """An entry's source, ref and commit: "uvtags at tag 0.9.0, commit 39b6a1c2e4f5"."""
    source = state.base or split_key(state.name)[0]
    ref = ref_text(state)
    at = f" at {ref}" if ref else ""
    return f"{source}{at}, {commit_text(state.commit)}"


def _print_verification(report: VerifyReport) -> None:
    for problem in report.problems:
        print(f"{problem.file}: {problem.kind}: {problem.detail}")
    for v in report.versions:
        mark = "*" if v.version == report.current else " "
        n = len(v.problems)
        state = "ok" if v.ok else f"{n} problem{'s' if n > 1 else ''}"
        print(f"{mark} version {v.version}: {state}" + "".join(f"; {note}" for note in v.notes))
        for problem in v.problems:
            print(f"    {problem.file}: {problem.kind}: {problem.detail}")
