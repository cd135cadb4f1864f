"""`docdex inspect [source NAME | doc DOC_ID]` and `docdex verify`: reading the index as it
is on disk."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from .commands import (
    EXIT_ERROR,
    EXIT_OK,
    Commands,
    Context,
    UsageError,
    add_command,
    json_flag,
    print_answer,
)

if TYPE_CHECKING:  # docdex.inspection reads the store, which imports numpy: not at parse time
    from docdex import inspection
    from docdex.index_format.verify import VerifyReport


def add_commands(commands: Commands) -> None:
    inspect = add_command(
        commands, "inspect", cmd_inspect_versions, "show versions, a source, or a document"
    )
    json_flag(inspect)
    what = inspect.add_subparsers(metavar="WHAT")
    source = add_command(what, "source", cmd_inspect_source, "a source's state and pages")
    source.add_argument("name")
    json_flag(source)
    doc = add_command(what, "doc", cmd_inspect_doc, "a document's chunks")
    doc.add_argument("doc_id", metavar="DOC_ID", help="SOURCE:PATH")
    json_flag(doc)
    verify = add_command(
        commands, "verify", cmd_verify, "check every kept version's files (exit 1 if damaged)"
    )
    verify.add_argument("--version", type=int, metavar="N", help="only version N")
    json_flag(verify)


def cmd_inspect_versions(ctx: Context, args: argparse.Namespace) -> int:
    from docdex import inspection

    print_answer(inspection.versions(ctx.data), args.json, _print_versions)
    return EXIT_OK


def cmd_inspect_source(ctx: Context, args: argparse.Namespace) -> int:
    from docdex import inspection

    print_answer(inspection.source(ctx.data, args.name), args.json, _print_source)
    return EXIT_OK


def cmd_inspect_doc(ctx: Context, args: argparse.Namespace) -> int:
    from docdex import inspection

    print_answer(inspection.document(ctx.data, args.doc_id), args.json, _print_document)
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


def _print_versions(versions: list[inspection.VersionInfo]) -> None:
    if not versions:
        print("no published version yet; run `docdex index`")
    for v in versions:
        mark = "*" if v.current else " "
        commits = ", ".join(f"{n}@{c[:12] or '-'}" for n, c in sorted(v.commits.items()))
        print(
            f"{mark} version {v.version}  {v.created_at}  {v.segments} segments  "
            f"{v.chunks} chunks  {v.vectors} vectors  {v.bytes / 1e6:.1f} MB  {commits}"
        )


def _print_source(info: inspection.SourceDetails) -> None:
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


def _print_document(info: inspection.DocInfo) -> None:
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
