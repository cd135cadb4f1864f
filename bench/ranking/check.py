"""Validate the query sets of bench/ranking: format, split rule, and the corpus itself.

    python -m bench.ranking.check            # format + corpus checks (corpora needed)
    python -m bench.ranking.check --format   # format checks only

Exit status 1 and one line per problem when anything is wrong. The rules are in
bench/ranking/README.md; the corpus checks read each bundle at its head through
bench/common.py's cached clone.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from docdex.evaluation.scoring import norm_heading

HERE = Path(__file__).resolve().parent / "sets"  # the query sets, SETS' files

SETS = {  # file -> corpus (a key of bench.common.CORPORA)
    "apm.handwritten.jsonl": "apm",
    "apm.unanswerable.jsonl": "apm",
    "rustc.handwritten.jsonl": "rustc",
    "rustc.unanswerable.jsonl": "rustc",
    "powershell.sections.jsonl": "powershell",
    "powershell.handwritten.jsonl": "powershell",
    "powershell.unanswerable.jsonl": "powershell",
    "msmarco.unanswerable.jsonl": "msmarco",
    "vite.handwritten.jsonl": "vite",
    "mkdocs.handwritten.jsonl": "mkdocs",
    "rustbook.handwritten.jsonl": "rustbook",
    "hugo.handwritten.jsonl": "hugo",
    "material.handwritten.jsonl": "material",
    "pymdownx.handwritten.jsonl": "pymdownx",
    "starlight.handwritten.jsonl": "starlight",
    "sqlmodel.handwritten.jsonl": "sqlmodel",
    "cargo.handwritten.jsonl": "cargo",
}
CLASSES = {"handwritten", "unanswerable"}
KINDS = {"off-topic", "near-miss"}
SPLITS = {"dev", "heldout"}
HELDOUT_EVERY = 3  # the split rule: line n (1-based) is held out when n % 3 == 0


def expected_split(line_number: int) -> str:
    return "heldout" if line_number % HELDOUT_EVERY == 0 else "dev"


@dataclass
class Problems:
    lines: list[str] = field(default_factory=list)

    def add(self, where: str, message: str) -> None:
        self.lines.append(f"{where}: {message}")


# --- format --------------------------------------------------------------------------------


def read_set(path: Path, problems: Problems) -> list[tuple[int, dict]]:
    rows: list[tuple[int, dict]] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            problems.add(f"{path.name}:{number}", f"not JSON ({error.msg})")
            continue
        if not isinstance(row, dict):
            problems.add(f"{path.name}:{number}", "not a JSON object")
            continue
        rows.append((number, row))
    return rows


def check_format(name: str, rows: list[tuple[int, dict]], problems: Problems) -> None:
    seen: set[str] = set()
    for number, row in rows:
        where = f"{name}:{number}"
        rid = row.get("id")
        if not isinstance(rid, str) or not rid:
            problems.add(where, "missing id")
        elif rid in seen:
            problems.add(where, f"duplicate id {rid}")
        else:
            seen.add(rid)
        query = row.get("query")
        if not isinstance(query, str) or not query.strip():
            problems.add(where, "missing query")
        if row.get("split") not in SPLITS:
            problems.add(where, f"split must be one of {sorted(SPLITS)}")
        elif row["split"] != expected_split(number):
            problems.add(where, f"split {row['split']!r} breaks the every-third rule")
        cls = row.get("class")
        if cls not in CLASSES:
            problems.add(where, f"class must be one of {sorted(CLASSES)}")
        elif cls == "unanswerable":
            check_unanswerable(where, row, problems)
        else:
            check_answerable(where, row, problems)


def check_unanswerable(where: str, row: dict, problems: Problems) -> None:
    if row.get("relevant") != [] or row.get("alt", []) != []:
        problems.add(where, "an unanswerable query has relevant: [] and no alt")
    kind = row.get("kind")
    if kind not in KINDS:
        problems.add(where, f"kind must be one of {sorted(KINDS)}")
    checked = row.get("checked")
    if kind == "near-miss" and not (
        isinstance(checked, list) and checked and all(isinstance(t, str) and t for t in checked)
    ):
        problems.add(where, "a near miss lists its grep terms in checked")


def check_answerable(where: str, row: dict, problems: Problems) -> None:
    relevant = row.get("relevant")
    if not isinstance(relevant, list) or not relevant:
        problems.add(where, "a handwritten query needs relevant entries")
        return
    for entry in relevant + list(row.get("alt", [])):
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            problems.add(where, f"bad judgment {entry!r}")
    if not all(isinstance(e, dict) and e.get("heading") for e in relevant):
        problems.add(where, "every relevant entry names the answering heading")


# --- headings ------------------------------------------------------------------------------

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_SUMMARY = re.compile(r"<summary>(.*?)</summary>", re.IGNORECASE | re.DOTALL)
_DESTINATION = r"\((?:<[^>]*>[^)]*|[^)]*)\)"  # (url "title") or (<url with parentheses>)
_IMAGE = re.compile(r"!\[([^\]]*)\]" + _DESTINATION)
_LINK = re.compile(r"\[([^\]]*)\](?:" + _DESTINATION + r"|\[[^\]]*\])")
_TAG = re.compile(r"</?[A-Za-z][^>]*>")
_MDX_COMMENT = re.compile(r"\{/\*.*?\*/\}")
# A trailing attribute list: {#id}, {.class}, {: #id .class } (attr_list), {class=foo} (Hugo)
_ATTRS = re.compile(r"\s*\{[ \t]*(?:[#.:]|[A-Za-z][\w-]*=)[^}]*\}\s*$")
_STARS = re.compile(r"(\*{1,3})(\S(?:.*?\S)?)\1")
_UNDERSCORES = re.compile(r"(?<![A-Za-z0-9])(_{1,3})(\S(?:.*?\S)?)\1(?![A-Za-z0-9])")
_CODE = re.compile(r"(`+)(.+?)\1")
_TEMPLATE = re.compile(r"\{%.*?%\}|\{\{.*?\}\}")


def reader_text(markdown: str) -> str:
    """A heading as a reader sees it: links, emphasis, code marks, tags, template tags, MDX
    comments and a trailing attribute list removed, entities decoded; code spans are kept
    verbatim."""
    spans: list[str] = []

    def keep(match: re.Match[str]) -> str:
        spans.append(match.group(2).strip())
        return f"\0{len(spans) - 1}\0"

    text = _CODE.sub(keep, _MDX_COMMENT.sub("", _TEMPLATE.sub("", markdown)))
    text = _IMAGE.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)
    text = _TAG.sub("", text)
    for _ in range(3):
        text = _UNDERSCORES.sub(r"\2", _STARS.sub(r"\2", text))
    text = html.unescape(_ATTRS.sub("", text.replace("\\", "")))
    return re.sub("\0(\\d+)\0", lambda m: spans[int(m.group(1))], text)


def headings_of(markdown: str) -> set[str]:
    """The folded headings of a page: ATX, setext, and <details> summaries."""
    found: set[str] = set()
    fence = ""
    previous = ""
    for line in _without_front_matter(markdown.replace("\r\n", "\n").lstrip("\ufeff")):
        opening = _FENCE.match(line)
        if fence:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence):
                fence = ""
            continue
        if opening:
            fence, previous = opening.group(1), ""
            continue
        atx = _ATX.match(line)
        if atx:
            found.add(norm_heading(reader_text(atx.group(2) or "")))
        elif _SETEXT.match(line) and previous.strip() and not previous.startswith("    "):
            found.add(norm_heading(reader_text(previous)))
        previous = line
    found.update(norm_heading(reader_text(m.group(1))) for m in _SUMMARY.finditer(markdown))
    found.discard("")
    return found


def _without_front_matter(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[0].strip() == "---":
        for end, line in enumerate(lines[1:], start=1):
            if line.strip() in ("---", "..."):
                return lines[end + 1 :]
    return lines


# --- corpus --------------------------------------------------------------------------------


class Corpus:
    """The markdown files of one corpus at its head, read from the cached clone."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        names = _git(repo, "ls-tree", "-r", "--name-only", "HEAD").splitlines()
        self.paths = set(names)
        self._text: dict[str, str] = {}

    def text(self, path: str) -> str:
        if path not in self._text:
            self.read([path])
        return self._text[path]

    def read(self, paths: Iterable[str]) -> None:
        """Read many files at once (one `git cat-file --batch` run)."""
        wanted = sorted({p for p in paths if p in self.paths and p not in self._text})
        if not wanted:
            return
        done = subprocess.run(
            ["git", "cat-file", "--batch"],
            cwd=self.repo,
            input="".join(f"HEAD:{p}\n" for p in wanted).encode(),
            capture_output=True,
            check=True,
        )
        out, at = done.stdout, 0
        for path in wanted:
            header_end = out.index(b"\n", at)
            size = int(out[at:header_end].split()[2])
            body = out[header_end + 1 : header_end + 1 + size]
            self._text[path] = body.decode("utf-8", errors="replace")
            at = header_end + 1 + size + 1

    def found_terms(self, terms: Iterable[str]) -> set[str]:
        """Which of `terms` occur in some markdown file at the head (case-insensitive)."""
        wanted = {t.casefold() for t in terms}
        if not wanted:
            return set()
        patterns = [arg for term in sorted(wanted) for arg in ("-e", term)]
        done = subprocess.run(
            ["git", "grep", "-o", "-h", "-i", "-F", *patterns, "HEAD", "--", "*.md"],
            cwd=self.repo,
            capture_output=True,
            text=True,
            errors="replace",
        )
        hits = {line.split(":", 1)[-1].casefold() for line in done.stdout.splitlines()}
        return {t for t in wanted if any(t in hit for hit in hits)}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True, errors="replace"
    ).stdout


def corpora_present(names: Iterable[str] = SETS) -> bool:
    """Whether the bundle of every corpus the set files `names` are judged on is here."""
    from bench.common import corpus_bundle

    return all(corpus_bundle(SETS[name]).is_file() for name in names)


def open_corpus(name: str) -> Corpus:
    from bench.common import source_repo

    return Corpus(source_repo(name))


def check_corpus(name: str, rows: list[tuple[int, dict]], corpus: Corpus, problems: Problems):
    corpus.read(entry.get("path", "") for _, row in rows for entry in judged(row))
    present = corpus.found_terms(t for _, row in rows for t in row.get("checked") or [])
    for number, row in rows:
        where = f"{name}:{number}"
        for entry in judged(row):
            path = entry.get("path", "")
            if path not in corpus.paths:
                problems.add(where, f"{path} is not in the corpus at its head")
            elif entry.get("heading") and norm_heading(entry["heading"]) not in headings_of(
                corpus.text(path)
            ):
                problems.add(where, f"{entry['heading']!r} is not a heading of {path}")
        for term in row.get("checked") or []:
            if term.casefold() in present:
                problems.add(where, f"checked term {term!r} occurs in the corpus")


def judged(row: dict) -> Iterator[dict]:
    for entry in list(row.get("relevant") or []) + list(row.get("alt") or []):
        if isinstance(entry, dict):
            yield entry


# --- command -------------------------------------------------------------------------------


def run(names: Iterable[str], with_corpus: bool) -> Problems:
    problems = Problems()
    corpora: dict[str, Corpus] = {}
    for name in names:
        path = HERE / name
        if not path.exists():
            problems.add(name, "missing")
            continue
        rows = read_set(path, problems)
        check_format(name, rows, problems)
        if with_corpus:
            corpus_name = SETS[name]
            if corpus_name not in corpora:
                corpora[corpus_name] = open_corpus(corpus_name)
            check_corpus(name, rows, corpora[corpus_name], problems)
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ranking.check")
    parser.add_argument("--format", action="store_true", help="format checks only")
    parser.add_argument("files", nargs="*", help="set files (default: all)")
    args = parser.parse_args(argv)
    names = args.files or list(SETS)
    unknown = [n for n in names if n not in SETS]
    if unknown:
        print(f"unknown set file(s): {', '.join(unknown)}", file=sys.stderr)
        return 2
    with_corpus = not args.format
    if with_corpus and not corpora_present(names):
        print("corpora not found (bench/corpora, ../shared/corpora); use --format", file=sys.stderr)
        return 2
    problems = run(names, with_corpus)
    for line in problems.lines:
        print(line)
    print(f"{len(names)} file(s), {len(problems.lines)} problem(s)", file=sys.stderr)
    return 1 if problems.lines else 0


if __name__ == "__main__":
    sys.exit(main())
