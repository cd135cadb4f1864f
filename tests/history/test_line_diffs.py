"""Lines added and removed as git counts them (`git diff --no-index --numstat`) for the
edits pages see; and which sections a change is in, from the heading scan: front matter
apart, fenced code no heading, setext headings, ids and attribute lists left out."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from docdex.history import History, SourceRepository
from docdex.index_format.config import SourceConfig
from docdex.index_format.layout import DataDir

from gitrepo import Workspace

BASE = "".join(f"Line {n} of the page.\n" for n in range(40))
EDITS = {
    "an inserted line": lambda t: t.replace("Line 5 of", "New line.\nLine 5 of"),
    "a deleted block": lambda t: t.replace("Line 10 of the page.\nLine 11 of the page.\n", ""),
    "a replaced line": lambda t: t.replace("Line 20 of", "Line twenty of"),
    "edits at both ends": lambda t: "Top.\n" + t[: -len("Line 39 of the page.\n")] + "End.\n",
    "a moved block": lambda t: t.replace("Line 3 of the page.\n", "") + "Line 3 of the page.\n",
    "the last newline lost": lambda t: t[:-1],
    "repeated lines only": lambda t: t + "\n\n\n---\n\n---\n\n",
    "crlf line ends": lambda t: t.replace("\n", "\r\n"),
    "everything new": lambda t: "".join(f"Other {n}\n" for n in range(25)),
}


def numstat(tmp_path: Path, old: str, new: str) -> tuple[int, int]:
    (tmp_path / "a").write_bytes(old.encode())
    (tmp_path / "b").write_bytes(new.encode())
    out = subprocess.run(
        ["git", "diff", "--no-index", "--numstat", "a", "b"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    added, removed, _ = out.split("\t", 2)
    return int(added), int(removed)


def source_of(ws: Workspace, tmp_path: Path) -> SourceRepository:
    return SourceRepository.of(
        DataDir(tmp_path / "data"), SourceConfig(name="d", location=str(ws.bare))
    )


@pytest.mark.parametrize("edit", EDITS)
def test_lines_are_counted_as_git_counts_them(tmp_path, edit):
    ws = Workspace(tmp_path / "repo")
    ws.write("page.md", BASE)
    first = ws.commit_and_push("base")
    new = EDITS[edit](BASE)
    ws.write("page.md", new)
    ws.commit_and_push(edit)
    [page] = History().changes(source_of(ws, tmp_path), since=first).pages
    assert (page.lines_added, page.lines_removed) == numstat(tmp_path, BASE, new)


PAGE = """---
title: The page
---
Intro text.

# Title

## Install {#install}

Install it.

```sh
# a comment, no heading
echo install
```

Setext section
--------------

Set it up.

### Deep

#### Deeper than sections go

Deep text.
"""


@pytest.mark.parametrize(
    ("edits", "sections", "front_matter"),
    [
        ({"title: The page": "title: A page"}, [], True),
        ({"Intro text.": "Intro words."}, [""], False),
        ({"echo install": "echo setup"}, ["Title › Install"], False),
        ({"Set it up.": "Set it all up."}, ["Title › Setext section"], False),
        ({"Deep text.": "Deeper text."}, ["Title › Setext section › Deep"], False),
        ({"## Install {#install}": "## Setup {#install}"}, ["Title › Setup"], False),
        ({"Install it.\n": ""}, ["Title › Install"], False),
        (
            {"title: The page": "title: A page", "Deep text.": "Text."},
            ["Title › Setext section › Deep"],
            True,
        ),
    ],
)
def test_the_sections_a_change_is_in(tmp_path, edits, sections, front_matter):
    ws = Workspace(tmp_path / "repo")
    ws.write("page.md", PAGE)
    first = ws.commit_and_push("base")
    text = PAGE
    for old, new in edits.items():
        assert old in text
        text = text.replace(old, new, 1)
    ws.write("page.md", text)
    ws.commit_and_push("edit")
    [page] = History().changes(source_of(ws, tmp_path), since=first).pages
    assert (page.sections, page.front_matter) == (sections, front_matter)
