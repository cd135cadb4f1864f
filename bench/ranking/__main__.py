"""`python -m bench.ranking COMMAND [ARGS...]` (`just ranking ...`): the ranking evaluation's
scripts by name, each with its own arguments (`COMMAND --help`); bench/ranking/README.md."""

from __future__ import annotations

import importlib
import sys

COMMANDS = {  # command -> what it does; its module is the command, "-" written "_"
    "check": "validate the query sets: format, split rule, the corpora",
    "report": "score every set per split with `docdex eval`, as a markdown table",
    "sweep": "sweep the adaptive fusion's dense trust over the answerable sets",
    "loco": "choose ranking settings by corpora held out of the choice (leave one out)",
    "answers-alone": "how often a top-3 hit holds the whole judged section, and its size",
    "ceiling": "how often each ranking's top 3 holds it, and a reranker's reach",
    "margins": "each set's margin to its floor, with a paired bootstrap interval",
    "side-by-side": "every query set scored by `docdex eval --baselines`, as one table",
    "embedder-pairs": "two embedders' indexes compared query by query, with the pooled test",
    "stability": "whether a source's ranking holds when other sources join its index",
    "section-precision": "section precision per handwritten set, per retriever and ranking",
    "reach": "count the judged sections today's chunker can reach",
    "copies": "judge the other PowerShell-Docs versions' copies of a section as answers",
    "long-pages": "list the long pages of a corpus",
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = [f"  {name:<{width}}  {what}" for name, what in COMMANDS.items()]
    return "usage: python -m bench.ranking COMMAND [ARGS...]\n\n" + "\n".join(lines)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(usage(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    command, *args = argv
    if command not in COMMANDS:
        print(f"unknown command {command!r}\n\n{usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(f"bench.ranking.{command.replace('-', '_')}")
    return module.main(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
