"""What the block parser reads of a page's lines: docs generators' markers reduced to what a
reader sees (cleanup.without_markers), and the lines that include files (include_lines),
pinned on lines that look like markers and are not."""

from __future__ import annotations

from docdex.indexer.chunking.cleanup import without_markers
from docdex.indexer.chunking.include_syntax import IncludeLine, include_lines


def test_markers_are_reduced_outside_fences_only() -> None:
    lines = [
        " " * 90 + "# deep {#id}",  # indented past where markers are looked for
        '!!! note "Title"',
        "    body",
        "plain # text",
        "> [!NOTE]",
        "> alert",
        ":::: tip Hi",
        "```",
        "!!! inside",
        "```",
        "{: .class }",
        "## Heading {#anchor}",
        "~~~",
        "{{#include ../listing.rs}}",
        "~~~",
    ]
    assert without_markers(lines) == [
        " " * 90 + "# deep {#id}",
        "Title",
        "body",
        "plain # text",
        "> ",
        "> alert",
        "Hi",
        "```",
        "!!! inside",
        "```",
        "",
        "## Heading",
        "~~~",
        "",
        "~~~",
    ]


def test_each_include_syntax_is_found_and_fenced_ones_are_not() -> None:
    lines = [
        "# Page",
        "{! docs/a.md !}",
        '--8<-- "b.md"',
        "{* ./c.py ln[1:3] *}",
        "{% include d.html %}",
        '{{< readfile file="e.md" >}}',
        "```",
        '--8<-- "in-fence.md"',
        "```",
        "--8<--",
        "f.md",
        "--8<--",
    ]
    assert include_lines(lines) == {
        1: IncludeLine("markdown-include", "docs/a.md"),
        2: IncludeLine("snippet", "b.md"),
        3: IncludeLine("fastapi", "./c.py", ((1, 3),)),
        4: IncludeLine("include", "d.html"),
        5: IncludeLine("hugo", "e.md"),
        9: IncludeLine("marker", ""),
        10: IncludeLine("snippet", "f.md"),
        11: IncludeLine("marker", ""),
    }


def test_a_page_without_include_syntax_has_no_include_lines() -> None:
    lines = ["# Page", "A { brace, a {{ template }} and % percent", "--8< almost", "{!"]
    assert include_lines(lines) == {}
    assert include_lines([*lines, "{! a.md !}"]) == {4: IncludeLine("markdown-include", "a.md")}
