"""List the long pages of a corpus (the candidates for section-level questions).

    python -m bench.ranking.long_pages powershell [--under reference/7.6] [--top 60]

One line per markdown file at the corpus head, longest first: size in KB, number of
sections (headings: ATX, setext, <details> summaries, as bench/ranking/check.py reads
them), and how many other files share its path below the version folder (PowerShell-Docs
keeps near-identical copies per version: reference/5.1, 7.4, ... ; a question judged on one
copy lists the others as `alt`).
"""

from __future__ import annotations

import argparse
import re
import sys

from .check import headings_of, open_corpus

_VERSION = re.compile(r"^reference/[0-9.]+/")


def unversioned(path: str) -> str:
    return _VERSION.sub("reference/*/", path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ranking.long_pages")
    parser.add_argument("corpus")
    parser.add_argument("--under", default="", help="only paths below this folder")
    parser.add_argument("--top", type=int, default=60)
    args = parser.parse_args(argv)
    corpus = open_corpus(args.corpus)
    pages = sorted(p for p in corpus.paths if p.endswith(".md"))
    copies: dict[str, int] = {}
    for path in pages:
        copies[unversioned(path)] = copies.get(unversioned(path), 0) + 1
    rows = []
    for path in pages:
        if not path.startswith(args.under):
            continue
        text = corpus.text(path)
        rows.append((len(text.encode()), len(headings_of(text)), path))
    rows.sort(reverse=True)
    print(f"{'KB':>6} {'sections':>8} {'copies':>6}  path")
    for size, sections, path in rows[: args.top]:
        print(f"{size / 1024:6.1f} {sections:8d} {copies[unversioned(path)] - 1:6d}  {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
