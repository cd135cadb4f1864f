"""The markdown chunker: metadata, sections, breadcrumbs, budget cuts, the upper bound, clean
text, robustness."""

from __future__ import annotations

import json
import logging
import random
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from docdex.index_format.reassembly import reassemble
from docdex.index_format.records import Chunk, ChunkerSettings, ParsedPage
from docdex.indexer.chunking.page_parser import parse_page

from pagetext import assert_served_whole
from paths import SHARED


def parse(text: str, path: str = "docs/page.md", **settings: int) -> ParsedPage:
    chunker = ChunkerSettings(**settings)
    page = parse_page(text, path, chunker)
    assert_consistent(text, page, chunker.max_chars)
    return page


def assert_consistent(text: str, page: ParsedPage, max_chars: int) -> None:
    """Chunk text is the exact source lines, or a part of one line, and never over the bound;
    spans are ordered and never overlap, except that the parts of a line are consecutive
    chunks that join back into it; reassembly gives the page back."""
    lines = lf(text).split("\n")
    runs: list[list[Chunk]] = []  # a chunk, or the parts of one line
    for chunk in page.chunks:
        assert 1 <= chunk.start_line <= chunk.end_line <= len(lines)
        assert len(chunk.text) <= max_chars
        assert chunk.headings[0] == page.title
        if runs and runs[-1][-1].end_line == chunk.start_line:
            runs[-1].append(chunk)
        else:
            assert not runs or runs[-1][-1].end_line < chunk.start_line
            runs.append([chunk])
    for run in runs:
        first, last = run[0].start_line, run[-1].end_line
        assert len(run) == 1 or all(c.start_line == c.end_line == first for c in run)
        assert "".join(c.text for c in run) == "\n".join(lines[first - 1 : last])
    assert_served_whole(text, page, max_chars)


def lf(text: str) -> str:
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def crumbs(page: ParsedPage) -> list[list[str]]:
    return [chunk.headings for chunk in page.chunks]


def chunk_with(page: ParsedPage, words: str) -> Chunk:
    matches = [chunk for chunk in page.chunks if words in chunk.text]
    assert len(matches) == 1, f"{len(matches)} chunks contain {words!r}"
    return matches[0]


def sentence(n: int) -> str:
    return f"Sentence number {n} says something useful about the product and its setup."


# --- line endings ----------------------------------------------------------------------------

LF_PAGE = """---
title: Setup
---

# Setup

Intro text that is long enough to be a chunk of its own.

## Install

Run the installer and follow the prompts until it says done.

```sh
./install.sh --yes
```
"""


def test_crlf_and_bom_give_the_same_chunks_as_lf() -> None:
    lf = parse(LF_PAGE)
    crlf = parse("\ufeff" + LF_PAGE.replace("\n", "\r\n"))
    lone_cr = parse(LF_PAGE.replace("\n", "\r"))
    assert lf.chunks and crlf == lf and lone_cr == lf
    assert [(c.start_line, c.end_line) for c in lf.chunks] == [(5, 7), (9, 15)]


# --- front matter ----------------------------------------------------------------------------


def test_front_matter_fields() -> None:
    page = parse(
        """---
title: "Deploy: the agent"
description: >-
  Rolling out the agent
  with Intune.
tags: [agent, "deploy, intune", 'ops']
date: 2024-01-02
ms.date: 06/29/2026
lastmod: "2025-03-04T05:06:07Z"
updated: 2025-05-06 # after the review
created_by: someone
author:
  name: Jane
---

Body text that is long enough to be kept as a chunk.
"""
    )
    assert page.title == "Deploy: the agent"
    assert page.description == "Rolling out the agent with Intune."
    assert page.tags == ["agent", "deploy, intune", "ops"]
    assert page.dates == {
        "date": "2024-01-02",
        "ms.date": "06/29/2026",
        "lastmod": "2025-03-04T05:06:07Z",
        "updated": "2025-05-06",
    }
    assert [(c.start_line, c.end_line) for c in page.chunks] == [(16, 16)]
    assert "title" not in page.chunks[0].text


@pytest.mark.parametrize(
    ("tags_field", "expected"),
    [
        ("tags:\n  - alpha\n  - 'beta gamma'\n", ["alpha", "beta gamma"]),
        ("tags:\n- alpha\n- beta\n", ["alpha", "beta"]),
        ("tags: alpha, beta ,gamma\n", ["alpha", "beta", "gamma"]),
        ("tags: []\n", []),
        ("tags: solo\n", ["solo"]),
    ],
)
def test_front_matter_tag_forms(tags_field: str, expected: list[str]) -> None:
    page = parse(f"---\n{tags_field}---\n\nBody text long enough to be kept here.\n")
    assert page.tags == expected


def test_toml_front_matter() -> None:
    page = parse(
        '+++\ntitle = "Hugo page"\ndate = 2024-02-03\n+++\n\nBody text of a page made for Hugo.\n'
    )
    assert (page.title, page.dates) == ("Hugo page", {"date": "2024-02-03"})
    assert page.chunks[0].start_line == 6


@pytest.mark.parametrize(
    "front_matter",
    [
        'title: "unclosed\ntags: [a, b\n',
        ": no key\n\t- stray\n  indented: x\n",
        "title: |\n",
        "tags: [[[[\ndescription: '''\n",
        "title:\n  - a\n  - b\ntags: {a: 1}\n",
        "title: 'it''s fine'\ndate: \"\\u00e9\\\"x\"\n",
    ],
)
def test_malformed_front_matter_never_raises_and_the_body_still_parses(front_matter: str) -> None:
    page = parse(f"---\n{front_matter}---\n\n# Heading\n\nBody text that is long enough to keep.\n")
    body = chunk_with(page, "Body text")
    assert body.headings[-1] == "Heading"
    assert body.embed_text.endswith("Heading\nBody text that is long enough to keep.")
    assert isinstance(page.title, str) and all(isinstance(t, str) for t in page.tags)


def test_unclosed_front_matter_is_page_content() -> None:
    page = parse("---\ntitle: nope\n\nThe rest of the page is ordinary content to index.\n")
    assert page.title == "page"
    assert "ordinary content" in page.chunks[0].text


def test_a_leading_thematic_break_is_not_front_matter() -> None:
    page = parse("---\n\nJust prose after a rule, long enough to keep.\n\n---\n\nMore prose.\n")
    assert "Just prose" in page.chunks[0].embed_text


def test_only_front_matter_gives_metadata_and_no_chunks() -> None:
    page = parse("---\ntitle: Empty page\ndescription: nothing here\n---\n")
    assert (page.title, page.description, page.chunks) == ("Empty page", "nothing here", [])


# --- titles and breadcrumbs ------------------------------------------------------------------


def test_title_fallbacks() -> None:
    body = "\n\nText long enough to be kept as a chunk of the page.\n"
    assert parse("---\ntitle: From front matter\n---\n# Heading one" + body).title == (
        "From front matter"
    )
    assert parse("## Not a title\n\n# The **first** `h1`" + body).title == "The first h1"
    assert parse("First h1\n========" + body).title == "First h1"
    assert parse("## Only h2" + body, "docs/getting-started.md").title == "getting-started"
    assert parse("", "README.md").title == "README"


def test_breadcrumbs_follow_h1_h2_h3_and_h4_stays_inside() -> None:
    page = parse(
        """Preamble before any heading, long enough to keep.

# Guide

Guide intro text that is long enough to keep.

## Install

Install text that is long enough to keep.

### On Linux

Linux text that is long enough to keep.

#### Debian notes

Debian text that stays inside the Linux section.

## Configure

Configure text that is long enough to keep.

Second part
-----------

Setext h2 text that is long enough to keep.
""",
        "guide.md",
    )
    assert page.title == "Guide"
    assert crumbs(page) == [
        ["Guide"],
        ["Guide"],
        ["Guide", "Install"],
        ["Guide", "Install", "On Linux"],
        ["Guide", "Configure"],
        ["Guide", "Second part"],
    ]
    linux = chunk_with(page, "Debian text")
    assert linux.text.startswith("### On Linux") and "Debian notes" in linux.embed_text


def test_h1_is_kept_when_it_differs_from_the_title() -> None:
    page = parse(
        "---\ntitle: Page title\n---\n# Another  H1\n\n## Part\n\nPart text, long enough here.\n"
    )
    assert crumbs(page) == [["Page title", "Another H1", "Part"]]
    page = parse("---\ntitle: Same Title\n---\n# same   title\n\nText that is long enough here.\n")
    assert crumbs(page) == [["Same Title"]]


def test_section_levels_setting() -> None:
    text = "## Two\n\nText two, long enough to keep.\n\n### Three\n\nText three, long enough too.\n"
    assert crumbs(parse(text, section_levels=2)) == [["page", "Two"]]
    assert crumbs(parse(text, section_levels=3)) == [["page", "Two"], ["page", "Two", "Three"]]


def test_heading_text_is_what_a_reader_sees() -> None:
    page = parse(
        "## **Bold** _em_ `co_de` [link](https://x.test/a)  <span>html</span> &amp; more {#anchor}"
        "\n\nBody text that is long enough to keep.\n\n"
        "## Evidence and `{{interpolation}}` for *snake_case_name*\n\nMore body text here.\n"
    )
    assert [c.headings[-1] for c in page.chunks] == [
        "Bold em co_de link html & more",
        "Evidence and {{interpolation}} for snake_case_name",
    ]


# --- <details> sections ----------------------------------------------------------------------

DETAILS_PAGE = """# FAQ

## Setup

<details>

<summary>How do I deploy the agent?</summary>

Use the platform script; it takes a minute.

</details>

<details>
<summary>
  Can I **reset** the `agent`?
</summary>

Yes, from the portal.

</details>
<details><summary>Is it free?</summary>Yes.</details>

Text after the details continues the Setup section.

<details>
Details without a summary are just content of the section.
</details>

## Limits

<details><summary>Unclosed question?</summary>

Answer of an unclosed details block.

## After

Section after the unclosed details, long enough.
"""


def test_details_with_summary_are_sections() -> None:
    page = parse(DETAILS_PAGE)
    assert crumbs(page) == [
        ["FAQ", "Setup", "How do I deploy the agent?"],
        ["FAQ", "Setup", "Can I reset the agent?"],
        ["FAQ", "Setup", "Is it free?"],
        ["FAQ", "Setup"],
        ["FAQ", "Limits", "Unclosed question?"],
        ["FAQ", "After"],
    ]
    deploy = chunk_with(page, "platform script")
    assert (deploy.start_line, deploy.end_line) == (1, 11)  # led by the two bare headings
    assert deploy.embed_text.startswith("How do I deploy the agent?")
    reset = chunk_with(page, "from the portal")
    assert "**" not in reset.embed_text and "Can I reset the agent?" in reset.embed_text
    assert chunk_with(page, "Is it free?").text == (
        "<details><summary>Is it free?</summary>Yes.</details>"
    )
    after = chunk_with(page, "continues the Setup")
    assert "Details without a summary" in after.text
    unclosed = chunk_with(page, "unclosed details block")
    assert "Section after" not in unclosed.text


def test_nested_details_and_headings_inside_details() -> None:
    page = parse(
        """## Outer

<details><summary>Parent question?</summary>

Parent answer, long enough to keep.

<details><summary>Child question?</summary>

Child answer, long enough to keep.

</details>

### Heading inside

Text under a heading inside the details.

</details>

Back in the outer section, long enough.
"""
    )
    assert crumbs(page) == [
        ["page", "Outer", "Parent question?"],
        ["page", "Outer", "Parent question?", "Child question?"],
        ["page", "Outer", "Parent question?", "Heading inside"],
        ["page", "Outer"],
    ]


def test_details_tags_in_code_are_not_sections() -> None:
    page = parse(
        "## Code\n\nWrite `<details><summary>Q</summary>` in your page like this.\n\n"
        "```html\n<details><summary>Example</summary>Body</details>\n```\n"
    )
    assert crumbs(page) == [["page", "Code"]]


# --- budget ------------------------------------------------------------------------------------


def covered_lines(chunks: list[Chunk]) -> list[int]:
    return [n for c in chunks for n in range(c.start_line, c.end_line + 1)]


def non_blank_lines(text: str, first: int = 1) -> list[int]:
    return [n for n, line in enumerate(text.split("\n"), 1) if n >= first and line.strip()]


def test_long_prose_splits_at_paragraphs_keeping_breadcrumb_and_lines() -> None:
    paragraphs = "\n\n".join(f"{sentence(n)} {sentence(n + 100)}" for n in range(20))
    text = f"# Title\n\n## Long section\n\n{paragraphs}\n\n## Next\n\nNext text, long enough.\n"
    page = parse(text, budget_chars=400)
    long_section = [c for c in page.chunks if c.headings == ["Title", "Long section"]]
    assert len(long_section) > 5
    assert all(len(c.text) <= 400 for c in long_section)
    assert long_section[0].text.startswith("# Title\n\n## Long section")  # the bare h1 too
    lines = text.split("\n")
    for before, after in zip(long_section, long_section[1:], strict=False):
        gap = lines[before.end_line : after.start_line - 1]
        assert not any(line.strip() for line in gap)  # contiguous up to blank lines
    next_heading = lines.index("## Next") + 1
    section_lines = [n for n in non_blank_lines(text) if n < next_heading]
    covered = covered_lines(long_section)
    assert {n for n in covered if lines[n - 1].strip()} == set(section_lines)
    assert [c.headings for c in page.chunks][-1] == ["Title", "Next"]


def test_tables_and_fences_under_the_bound_are_never_split() -> None:
    rows = "\n".join(f"| row {n} | {sentence(n)} |" for n in range(20))
    code = "\n".join(f"print('line {n} of a long code block')" for n in range(40))
    text = (
        "## Data\n\nA short intro.\n\n| key | value |\n| --- | --- |\n"
        f"{rows}\n\nBetween the blocks.\n\n```python\n{code}\n```\n\nAfter the code.\n"
    )
    page = parse(text, budget_chars=500)  # both blocks over the budget, under the bound (2,000)
    table = chunk_with(page, "| key | value |")
    assert all(f"| row {n} |" in table.text for n in range(20))
    fence = chunk_with(page, "```python")
    assert fence.text.count("```") == 2 and "line 39 of" in fence.text
    assert set(non_blank_lines(text)) <= set(covered_lines(page.chunks))


def test_heading_sticks_to_an_oversize_block_under_the_bound() -> None:
    code = "\n".join(f"x = {n}  # a fairly long line of example code" for n in range(30))
    page = parse(f"## Example\n\n```python\n{code}\n```\n", budget_chars=400)
    assert len(page.chunks) == 1 and page.chunks[0].text.startswith("## Example")


def test_long_list_splits_at_items() -> None:
    items = "\n".join(f"- {sentence(n)}" for n in range(30))
    text = f"## Steps\n\n{items}\n"
    page = parse(text, budget_chars=500)
    assert len(page.chunks) > 3
    for chunk in page.chunks:
        assert len(chunk.text) <= 500
        assert chunk.headings == ["page", "Steps"]
        assert chunk.text.startswith(("## Steps", "- Sentence"))
    assert set(non_blank_lines(text)) <= set(covered_lines(page.chunks))


def test_an_oversize_list_item_splits_at_its_blocks_and_lines() -> None:
    item_lines = "\n".join(f"  {sentence(n)}" for n in range(30))
    nested = "\n".join(f"  - nested {sentence(n)}" for n in range(10))
    text = f"## Big item\n\n- First line of a huge item.\n{item_lines}\n\n{nested}\n- Small item.\n"
    page = parse(text, budget_chars=400)
    assert len(page.chunks) > 4
    assert all(len(c.text) <= 400 for c in page.chunks)
    assert set(non_blank_lines(text)) <= set(covered_lines(page.chunks))
    assert all("  " not in c.embed_text for c in page.chunks)


def test_short_sections_are_kept_and_never_merged() -> None:
    page = parse(
        "## Is it free?\n\nYes.\n\n## Does it run on Linux?\n\nNo.\n\n## Empty\n\n"
        "## A heading long enough to stand on its own as a chunk\n\n## Rule only\n\n---\n"
    )
    assert crumbs(page) == [
        ["page", "Is it free?"],
        ["page", "Does it run on Linux?"],
        ["page", "A heading long enough to stand on its own as a chunk"],
    ]
    assert page.chunks[0].text == "## Is it free?\n\nYes."


def test_residue_is_no_chunk_of_its_own_but_its_lines_are_kept() -> None:
    page = parse("[![badge](https://ci.test/b.svg)](https://ci.test)\n\n## Real\n\nContent here.\n")
    assert crumbs(page) == [["page", "Real"]]
    assert page.chunks[0].text.startswith("[![badge]")  # served with the section after it
    assert page.chunks[0].embed_text == "Real\nContent here."  # and not embedded
    line = "Twenty-four alnum chars here!!"
    only = parse(f"{line}\n", min_alnum=25)  # nothing else could take the page's one line
    assert [(c.text, c.embed_text) for c in only.chunks] == [(line, line)]


def test_a_residue_piece_of_a_long_section_joins_the_previous_piece() -> None:
    long_paragraph = " ".join(sentence(n) for n in range(4))
    text = f"## Section\n\n{long_paragraph}\n\nOk.\n"
    page = parse(text, budget_chars=len(long_paragraph) + 16)
    assert len(page.chunks) == 1 and page.chunks[0].text.endswith("Ok.")


# --- the upper bound -------------------------------------------------------------------------


def sentences(first: int, count: int) -> str:
    return " ".join(sentence(n) for n in range(first, first + count))


def parts_of_line(page: ParsedPage, line: int) -> list[Chunk]:
    parts = [c for c in page.chunks if c.start_line <= line <= c.end_line]
    assert parts and all(c.start_line == c.end_line == line for c in parts)
    return parts


def test_the_bound_is_four_budgets() -> None:
    assert ChunkerSettings().max_chars == 6_000
    assert ChunkerSettings(budget_chars=300).max_chars == 1_200
    assert ChunkerSettings(budget_chars=0).max_chars == 4


def test_a_long_line_is_cut_between_sentences() -> None:
    long_sentence = "A sentence without an end " + "that goes on and on " * 40  # ~830 chars
    line = f"{sentences(0, 30)} {long_sentence.strip()}. {sentences(30, 30)}"
    text = (
        f"# Title\n\nIntro paragraph that says enough to be kept.\n\n{line}\n\n## Next\n\nMore.\n"
    )
    page = parse(text, budget_chars=300)
    parts = parts_of_line(page, 5)
    assert len(parts) > 10 and "".join(c.text for c in parts) == line
    assert all(c.text.endswith(". ") for c in parts[:-1])  # the space stays with the sentence
    assert sum(long_sentence.strip() in c.text for c in parts) == 1  # within the bound: whole
    assert all(len(c.text) <= 300 for c in parts if long_sentence.strip() not in c.text)
    assert all(
        c.headings == ["Title"] and c.embed_text.startswith(("Sentence", "A")) for c in parts
    )
    assert reassemble(page.chunks) == text.rstrip("\n")


def test_a_sentence_over_the_bound_is_cut_between_words() -> None:
    words = " ".join(f"word{n}" for n in range(500))
    page = parse(f"{words}\n", budget_chars=300)
    parts = parts_of_line(page, 1)
    assert len(parts) > 10 and all(len(c.text) <= 300 for c in parts)
    assert all(c.text.endswith(" ") for c in parts[:-1])
    assert "".join(c.text for c in parts) == words


def test_a_line_without_spaces_is_cut_anywhere_and_its_heading_stays() -> None:
    blob = "QUJD" * 2_000
    text = f"## Blob\n\n{blob}\n"
    page = parse(text, budget_chars=300)
    assert page.chunks[0].text == "## Blob"  # too big to take along, too useful to drop
    parts = parts_of_line(page, 3)
    assert [len(c.text) for c in parts] == [300] * 26 + [200]
    assert reassemble(page.chunks) == text.rstrip("\n")


def test_a_table_over_the_bound_is_cut_between_rows() -> None:
    rows = "\n".join(f"| row {n} | {sentence(n)} |" for n in range(40))
    text = (
        f"## Data\n\n| key | value |\n| --- | --- |\n{rows}\n\nAfter the table, a closing remark.\n"
    )
    page = parse(text, budget_chars=300)
    assert len(page.chunks) > 10 and all(len(c.text) <= 300 for c in page.chunks)
    assert page.chunks[0].text.startswith("## Data\n\n| key | value |\n| --- | --- |\n| row 0 |")
    assert all(c.text.startswith("| row") for c in page.chunks[1:-1])
    assert all("|" not in c.embed_text for c in page.chunks)
    assert page.chunks[0].embed_text.startswith("Data\nkey value\nrow 0 Sentence number 0")
    assert reassemble(page.chunks) == text.rstrip("\n")


def test_a_table_row_over_the_bound_is_cut_into_parts() -> None:
    row = f"| long | {sentences(0, 40)} |"
    text = f"## Data\n\n| key | value |\n| --- | --- |\n| short | row |\n{row}\n| last | row |\n"
    page = parse(text, budget_chars=300)
    parts = parts_of_line(page, 6)
    assert len(parts) > 8 and "".join(c.text for c in parts) == row
    assert all("|" not in c.embed_text for c in parts)
    assert reassemble(page.chunks) == text.rstrip("\n")


def test_a_fence_over_the_bound_is_cut_between_lines() -> None:
    code = "\n".join(f"let value_{n} = compute({n}); // step {n} of the example" for n in range(80))
    text = f"## Code\n\nSome code follows.\n\n```rust\n{code}\n```\n"
    page = parse(text, budget_chars=300)
    assert len(page.chunks) > 10 and all(len(c.text) <= 300 for c in page.chunks)
    assert all("```" not in c.embed_text and "let value_" in c.embed_text for c in page.chunks)
    assert page.chunks[-1].text.endswith("step 79 of the example\n```")
    assert reassemble(page.chunks) == text.rstrip("\n")


@pytest.mark.parametrize(
    "block",
    [
        "| key | value |\n| --- | --- |\n| long | " + "cell words " * 10_000 + "|",
        "```js\n" + "x=compute(1);" * 8_000 + "\n```",
        "    " + "indented code " * 8_000,
        "<div>" + "html words " * 10_000 + "</div>",
        "> " + "quoted words " * 8_000,
        "- " + "listed words " * 8_000,
        "# " + "heading words " * 8_000,
        "\n".join("  " * n + f"- {sentences(n, 3)}" for n in range(80)),  # a deep list
        "Title\n" + "=" * 30_000,
    ],
    ids=["table row", "fence", "indented", "html", "quote", "list", "heading", "deep", "setext"],
)
@pytest.mark.usefixtures("no_fallback")
def test_the_bound_holds_for_any_block(block: str) -> None:
    text = f"Some introduction, long enough to be a chunk of its own.\n\n{block}\n"
    page = parse(text)  # parse checks the bound, the spans and the reassembly
    assert len(page.chunks) >= 2  # the introduction, then the block (a line of "=" is residue)
    assert all(len(heading) <= 2_000 for c in page.chunks for heading in c.headings)


def test_crlf_long_lines_give_the_same_chunks_as_lf() -> None:
    rows = "\n".join(f"| row {n} | {sentence(n)} |" for n in range(20))
    text = f"# Title\n\n{sentences(0, 30)}\n\n| key | value |\n| --- | --- |\n{rows}\n"
    lf = parse(text, budget_chars=300)
    assert len(lf.chunks) > 10
    assert parse(text.replace("\n", "\r\n"), budget_chars=300) == lf
    assert reassemble(lf.chunks) == text.rstrip("\n")


def test_reassembly_gives_a_page_of_long_lines_tables_and_fences_back() -> None:
    code = "\n".join(f"print('line {n} of a long code block')" for n in range(60))
    rows = "\n".join(f"| row {n} | {sentence(n)} |" for n in range(30))
    text = (
        f"# Page\n\nA first paragraph, short and sweet enough.\n\n{sentences(0, 40)}\n\n"
        f"## Tables\n\n| key | value |\n|---|---|\n{rows}\n| wide | {sentences(40, 30)} |\n\n"
        f"## Code\n\n```python\n{code}\n" + "x = 1; " * 500 + "\n```\n\nThe end of the page.\n"
    )
    page = parse(text, budget_chars=300)
    assert reassemble(page.chunks) == text.rstrip("\n")


# --- clean text ------------------------------------------------------------------------------

NOISY_PAGE = """## Noise

{% hint style="info" %}
The hint body is content.
{% endhint %}

{{< note title="x" >}}Hugo note body.{{< /note >}} {{% tab %}}Tab body.{{% /tab %}}

> [!NOTE]
> GitHub alert body.

> **Warning:** Bold warning body.

!!! note "MkDocs title"
    MkDocs body with **bold** text.

:::tip Docusaurus title
Docusaurus body.
:::

<div class="x"><kbd>Ctrl</kbd>+<kbd>C</kbd> copies &amp; pastes.</div>

See [the guide](https://docs.test/guide) and ![diagram alt](img/d.png) and [](https://bare.test/u)
and <https://auto.test/link> with *em*, __strong__, ~~gone~~ and `snake_case_id`.

| Name | Value |
| ---- | ----- |
| `alpha` | **one** |

#### Small heading

```python
def handler(event_name):
    return {{ "a": 1 }}
```
"""


def test_embed_text_removes_markup_noise() -> None:
    embed = parse(NOISY_PAGE).chunks[0].embed_text
    for noise in ("{%", "%}", "{{<", ">}}", "{{%", "[!NOTE]", "Warning:", "!!!", ":::", "<kbd>"):
        assert noise not in embed
    for noise in ("https://docs.test", "img/d.png", "**", "__", "~~", "`", "|", "----", "#", "```"):
        assert noise not in embed
    for kept in (
        "The hint body is content.",
        "Hugo note body.",
        "Tab body.",
        "GitHub alert body.",
        "Bold warning body.",
        "MkDocs title",
        "MkDocs body with bold text.",
        "Docusaurus title",
        "Docusaurus body.",
        "Ctrl + C copies & pastes.",
        "See the guide and diagram alt and https://bare.test/u",
        "https://auto.test/link with em, strong, gone and snake_case_id.",
        "Name Value",
        "alpha one",
        "Small heading",
        "def handler(event_name):",
        '{{ "a": 1 }}',
    ):
        assert kept in embed, kept
    assert "\n\n\n" not in embed and "  " not in embed


def test_raw_text_keeps_code_html_and_urls() -> None:
    page = parse(NOISY_PAGE)
    assert page.chunks[0].text == NOISY_PAGE.rstrip("\n")


def test_reference_links_defined_elsewhere_render_as_their_text() -> None:
    page = parse(
        "## One\n\nRead [the spec][spec] before you start.\n\n## Two\n\nMore.\n\n[spec]: https://s.test\n"
    )
    assert chunk_with(page, "Read").embed_text == "One\nRead the spec before you start."


# --- never raises --------------------------------------------------------------------------


@pytest.fixture
def no_fallback(caplog: pytest.LogCaptureFixture):
    """parse_page swallows exceptions: make sure the real parser, not the fallback, ran."""
    with caplog.at_level(logging.ERROR, logger="docdex.indexer.chunking.page_parser"):
        yield
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


NASTY_INPUTS = [
    "",
    "\ufeff",
    "\n\n\n",
    "---\n",
    "---\n---\n",
    "+++\n+++",
    "```\nunclosed fence\n# not a heading",
    "<details><summary>Open",
    "<details>\n<summary>\n\nUnclosed summary and details",
    "</details></details></summary>",
    "\n".join("  " * n + "- deep" for n in range(100)),
    ">" * 500 + " deep quote",
    "[" * 50_000,
    "*a **b " * 10_000,
    "|" * 10_000 + "\n" + "-|" * 5_000,
    "\x00\x01\x02\x0b\x0c\u2028\u2029\x1c\x1d\x1e\x85",
    "# \n##\n###### \n#######",
    "<!--" * 1000,
    "{%" * 1000 + "{{<" * 1000,
    "<details>" * 2000,
    "\r\n\r\r\n\n\r",
]


@pytest.mark.usefixtures("no_fallback")
@pytest.mark.parametrize("text", NASTY_INPUTS, ids=range(len(NASTY_INPUTS)))
def test_nasty_inputs_parse(text: str) -> None:
    parse(text)


@pytest.mark.usefixtures("no_fallback")
def test_random_bytes_and_markup_soup_parse() -> None:
    rng = random.Random(1234)
    pieces = [
        *("# ", "## ", "- ", "1. ", "> ", "```", "~~~", "\n", "\r\n", "\r", "\n\n", "|", "---"),
        *("<details>", "<summary>", "</summary>", "</details>", "{% x %}", "{{< y >}}", "!!! "),
        *(":::", "[a](b)", "![", "*", "_", "`", "&amp;", "<div>", "    ", "\t", "word ", "é"),
        *("Some words. " * 8, "x" * 90, "| cell " * 12),  # long lines, over small bounds
    ]
    for _ in range(150):
        raw = bytes(rng.randrange(256) for _ in range(rng.randrange(400)))
        parse(raw.decode("utf-8", errors="replace"))
        parse("".join(rng.choice(pieces) for _ in range(rng.randrange(300))))
        budget = rng.randrange(1, 200)  # parse checks that no chunk exceeds 4 budgets
        parse("".join(rng.choice(pieces) for _ in range(300)), budget_chars=budget)


@pytest.mark.usefixtures("no_fallback")
def test_five_megabytes_on_one_line() -> None:
    text = "word " * 1_000_000
    page = parse(text)  # parse checks the bound and that the parts join back into the line
    assert len(page.chunks) > 800
    assert all(c.start_line == c.end_line == 1 and c.text.endswith(" ") for c in page.chunks)


def test_a_parser_bug_still_gives_the_page_as_plain_chunks(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*_: object) -> ParsedPage:
        raise RuntimeError("a bug")

    monkeypatch.setattr("docdex.indexer.chunking.page_parser._parse_page", broken)
    lines = [f"line {n} of the page" for n in range(100)]
    lines[50] = " ".join(sentence(n) for n in range(40))  # over the bound of 1,200
    page = parse("\r\n".join(lines), "docs/broken.md", budget_chars=300)
    assert page.title == "broken" and len(page.chunks) > 1
    assert len([c for c in page.chunks if c.start_line == c.end_line == 51]) > 3
    assert "parse failed for docs/broken.md" in caplog.text


# --- the real corpus -----------------------------------------------------------------------


def fold(text: str) -> str:
    return " ".join(text.casefold().split())


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED / "corpora" / "apm-docs.bundle").exists(), reason="no ../shared")
def test_apm_docs_known_items_are_all_findable(tmp_path: Path) -> None:
    if not shutil.which("git"):
        pytest.skip("git is not installed")
    checkout = tmp_path / "apm"
    bundle = SHARED / "corpora" / "apm-docs.bundle"
    subprocess.run(["git", "clone", "-q", "-b", "main", str(bundle), str(checkout)], check=True)
    started = time.perf_counter()
    pages = {
        relative: parse_page(path.read_text("utf-8"), relative)
        for path in sorted(checkout.rglob("*.md"))
        if (relative := path.relative_to(checkout).as_posix())
        if ".git" not in path.parts
    }
    elapsed = time.perf_counter() - started
    chunks = [chunk for page in pages.values() for chunk in page.chunks]
    queries = (SHARED / "eval" / "apm.queries.jsonl").read_text("utf-8").splitlines()
    wanted = [
        (item["path"], item["heading"])
        for query in map(json.loads, queries)
        if query["class"] == "known-item"
        for item in query["relevant"]
    ]
    missing = [
        (path, heading)
        for path, heading in wanted
        if not any(
            fold(heading) in {fold(h) for h in chunk.headings} for chunk in pages[path].chunks
        )
    ]
    average = sum(len(c.text) for c in chunks) / len(chunks)
    print(f"apm-docs: {len(pages)} pages, {len(chunks)} chunks, {average:.0f} chars on average,")
    print(f"{len(wanted) - len(missing)}/{len(wanted)} known items found, parsed in {elapsed:.2f}s")
    assert wanted and not missing
    assert 200 < average < 1500
