"""Judge the other versions' copies of a PowerShell-Docs section as acceptable answers.

    python -m bench.ranking.copies powershell.sections.jsonl [...]

PowerShell-Docs keeps one copy of each reference page per version (reference/5.1, 7.4,
7.5, 7.6, 7.7). A question judged on reference/7.6/X.md is answered just as well by
reference/7.5/X.md when that copy has the same section, so every such copy (of the
relevant entry and of its alts) is written into `alt`, in place. Hand-made entries (paths
outside reference/<version>/, or in the relevant entry's version) are kept as they are.
Run it again after editing a judgment.
"""

from __future__ import annotations

import json
import re
import sys

from docdex.evaluation.scoring import norm_heading

from .check import HERE, SETS, Corpus, headings_of, open_corpus

_VERSIONED = re.compile(r"^reference/([0-9.]+)/(.+)$")


def versions(corpus: Corpus) -> list[str]:
    return sorted({m.group(1) for p in corpus.paths if (m := _VERSIONED.match(p))})


def copies_of(entry: dict, corpus: Corpus, all_versions: list[str]) -> list[dict]:
    match = _VERSIONED.match(entry.get("path", ""))
    if not match or not entry.get("heading"):
        return []
    found = []
    for version in all_versions:
        path = f"reference/{version}/{match.group(2)}"
        if (
            path != entry["path"]
            and path in corpus.paths
            and norm_heading(entry["heading"]) in headings_of(corpus.text(path))
        ):
            found.append({"path": path, "heading": entry["heading"]})
    return found


def with_copies(row: dict, corpus: Corpus, all_versions: list[str]) -> dict:
    """Keep the hand-made judgments (unversioned paths and the relevant entry's version)
    and regenerate every other version's copy of them."""
    primary = _VERSIONED.match(row["relevant"][0]["path"])
    version = primary.group(1) if primary else "7.6"

    def hand_made(entry: dict) -> bool:
        match = _VERSIONED.match(entry.get("path", ""))
        return match is None or match.group(1) == version

    alt = [e for e in row.get("alt", []) if hand_made(e)]
    for entry in row["relevant"] + list(alt):
        alt.extend(c for c in copies_of(entry, corpus, all_versions) if c not in alt)
    out = {k: v for k, v in row.items() if k not in ("alt", "split")}
    if alt:
        out["alt"] = alt
    out["split"] = row["split"]
    return out


def main(argv: list[str] | None = None) -> int:
    names = argv if argv is not None else sys.argv[1:]
    corpus = open_corpus("powershell")
    all_versions = versions(corpus)
    for name in names:
        if SETS.get(name) != "powershell":
            print(f"{name}: not a PowerShell-Docs set", file=sys.stderr)
            return 2
        path = HERE / name
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        rows = [
            with_copies(row, corpus, all_versions) if row.get("relevant") else row for row in rows
        ]
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
        print(f"{name}: {len(rows)} records", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
