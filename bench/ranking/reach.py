"""How many judged sections today's chunker can hit at all.

    python -m bench.ranking.reach [SET.jsonl ...]

Section level counts a hit when a judged heading is in the hit's breadcrumb. The chunker
packs small sections into one chunk whose breadcrumb names only the first of them, so a
judged heading can be out of reach for any ranking. This parses each judged page with the
indexer's own parser (docdex.indexer.chunking.page_parser) and prints, per set, how many
queries have at least one judged heading in some chunk's breadcrumb, and the ids of those
that have none: the ceiling of section recall under the current chunking, not a defect of
the set.
"""

from __future__ import annotations

import json
import sys

from docdex.evaluation.scoring import norm_heading
from docdex.indexer.chunking.page_parser import parse_page

from .check import HERE, SETS, Corpus, open_corpus


def breadcrumbs(corpus: Corpus, path: str, cache: dict[str, set[str]]) -> set[str]:
    if path not in cache:
        page = parse_page(corpus.text(path), path)
        cache[path] = {norm_heading(h) for chunk in page.chunks for h in chunk.headings}
    return cache[path]


def main(argv: list[str] | None = None) -> int:
    names = (argv if argv is not None else sys.argv[1:]) or list(SETS)
    corpora: dict[str, Corpus] = {}
    caches: dict[str, dict[str, set[str]]] = {}
    for name in names:
        path = HERE / name
        if name not in SETS or not path.exists():
            continue
        corpus_name = SETS[name]
        corpus = corpora.setdefault(corpus_name, open_corpus(corpus_name))
        cache = caches.setdefault(corpus_name, {})
        judged = unreachable = 0
        missing = []
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            entries = [e for e in row.get("relevant", []) + row.get("alt", []) if e.get("heading")]
            if not entries:
                continue
            judged += 1
            if not any(
                norm_heading(e["heading"]) in breadcrumbs(corpus, e["path"], cache) for e in entries
            ):
                unreachable += 1
                missing.append(row["id"])
        if judged:
            print(f"{name}: {judged - unreachable}/{judged} reachable {' '.join(missing)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
