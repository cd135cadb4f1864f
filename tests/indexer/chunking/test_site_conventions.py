"""The markdown people really write (adr/0018): Docusaurus (MDX, versioned docs), MkDocs
(admonitions, snippets) and Hugo (shortcodes, _index.md, drafts) trees in real git
repositories, indexed by the pipeline, checked in what the index holds."""

from __future__ import annotations

import pytest
import tantivy

from docdex.index_format.config import Config, Settings, SourceConfig, save_config
from docdex.index_format.layout import DataDir
from docdex.index_format.reassembly import reassemble
from docdex.index_format.store import load_current, load_pages, load_segment
from docdex.index_format.text import analyze, identifier_terms, text_schema
from docdex.indexer.chunking.page_parser import parse_page
from docdex.indexer.run.pipeline import index_sources
from docdex.indexer.sources.include_files import MAX_INCLUDE_BYTES, worktree_reader

from fixtures import pushed_workspace

INTRO_MDX = """---
sidebar_label: Getting started
tags: [onboarding, quickstart]
description: First steps with the frobnicator.
---
import Tabs from '@theme/Tabs';
import TabItem from '@theme/TabItem';
import {
  Highlight,
  Callout,
} from '@site/src/components';

export const release = {version: '2.1'};

# Install the frobnicator

<Tabs groupId="operating-systems">
  <TabItem value="linux" label="Linuxlabel">

Run the zypperlike installer to fetch the frobnicator package.

  </TabItem>
  <TabItem value="mac" label={"Maclabel"} onClick={() => track(1 > 0)}>

Use the brewmaster formula on a Mac.

  </TabItem>
</Tabs>

<Callout
  kind="warning"
  extra={{urgent: true}}
/>

{/* reviewers: keep this page short */}

<Highlight color="#25c2a0">Quartzite</Highlight> is the default theme.
"""

VERSIONED_MDX = """---
title: Install (1.0)
---
import Admonition from '@theme/Admonition';

# Install

<Admonition type="note">
Version one used the legacyinstaller script.
</Admonition>
"""

MKDOCS_INDEX = """# Welcome

!!! note "Heads up"
    The admonition body mentions the gravelpit service.

Regular prose about the quarry.

--8<-- "includes/shared.md"
"""

MKDOCS_SHARED = """## Shared notice

Maintenance windows happen on the marmalade schedule.
"""

HUGO_SECTION = """+++
linkTitle = "Operations"
description = "Running the service."
+++

Everything about operations, including the {{< param "product" >}} daemon.

{{< alert color="warning" >}}Backups run at the halibut hour.{{< /alert >}}

{{< include "snippets/oncall.md" >}}
"""

HUGO_ONCALL = "The on-call rota is kept in the pagerwhale tool.\n"

HUGO_DRAFT = """---
title: Secret roadmap
draft: true
---
# Roadmap

The unreleased zeppelinmode feature.
"""


def index_tree(tmp_path, files: dict[str, str], embedder, **source) -> DataDir:
    ws = pushed_workspace(tmp_path, files)
    data = DataDir(tmp_path / "data")
    config = Config(
        settings=Settings(), sources=[SourceConfig(name="docs", location=str(ws.bare), **source)]
    )
    data.ensure()
    save_config(data, config)
    report = index_sources(data, config, embedder=embedder)
    assert report.published, report
    return data


def pages_of(data: DataDir):
    manifest = load_current(data)
    state = manifest.sources["docs"]
    return manifest, state, {p.path: p for p in load_pages(data, state.pages_file)}


def chunks_of(data: DataDir, path: str):
    manifest = load_current(data)
    out = []
    for ref in manifest.segments:
        segment = load_segment(data, ref.id, manifest.embedder.dim)
        out += [
            c for i, c in enumerate(segment.chunks) if c.path == path and i not in ref.tombstones
        ]
    return sorted(out, key=lambda c: c.start_line)


def indexed(data: DataDir, path: str, word: str, field: str = "body") -> bool:
    """Whether the page's chunks hold `word` in a text field (as analysed) or, for
    field="ident", as an identifier term."""
    manifest = load_current(data)
    index = tantivy.Index.open(str(data.text_index(manifest.text_index)))
    schema = text_schema()
    term = identifier_terms(word)[0] if field == "ident" else analyze(word)[0]
    query = tantivy.Query.boolean_query(
        [
            (tantivy.Occur.Must, tantivy.Query.term_query(schema, "doc_id", f"docs:{path}")),
            (tantivy.Occur.Must, tantivy.Query.term_query(schema, field, term)),
        ]
    )
    return index.searcher().search(query, 10).count > 0


def tagged_hits(data: DataDir, pages, word: str, tag: str) -> set[str]:
    """doc_ids of the chunks holding `word`, of pages tagged `tag` ("" = any page)."""
    manifest = load_current(data)
    index = tantivy.Index.open(str(data.text_index(manifest.text_index)))
    schema = text_schema()
    clauses = [(tantivy.Occur.Must, tantivy.Query.term_query(schema, "body", analyze(word)[0]))]
    if tag:
        wanted = tag.casefold()
        doc_ids = [p.doc_id for p in pages.values() if wanted in {t.casefold() for t in p.tags}]
        clauses.append(
            (tantivy.Occur.Must, tantivy.Query.term_set_query(schema, "doc_id", doc_ids))
        )
    searcher = index.searcher()
    hits = searcher.search(tantivy.Query.boolean_query(clauses), 100).hits
    return {searcher.doc(address)["chunk_id"][0].split("#")[0] for _score, address in hits}


def test_docusaurus_tree(tmp_path, embedder) -> None:
    files = {
        "docs/intro.mdx": INTRO_MDX,
        "versioned_docs/version-1.0/intro.mdx": VERSIONED_MDX,
        "docusaurus.config.js": "module.exports = {};\n",
    }
    data = index_tree(tmp_path, files, embedder)
    _manifest, _state, pages = pages_of(data)
    assert set(pages) == {"docs/intro.mdx", "versioned_docs/version-1.0/intro.mdx"}
    intro = pages["docs/intro.mdx"]
    assert intro.title == "Getting started"  # sidebar_label, no title key
    assert intro.tags == ["onboarding", "quickstart"]
    assert pages["versioned_docs/version-1.0/intro.mdx"].title == "Install (1.0)"
    path = "docs/intro.mdx"
    for child in ("zypperlike", "brewmaster", "Quartzite", "onboarding", "quickstart"):
        assert indexed(data, path, child), child
    for code in (
        "import",
        "TabItem",
        "Tabs",
        "groupId",
        "Linuxlabel",
        "Maclabel",
        "Callout",
        "Highlight",
        "urgent",
        "reviewers",
        "release",
        "track",
        "src",
    ):
        assert not indexed(data, path, code), code
        assert not indexed(data, path, code, "ident"), code
    assert indexed(data, "versioned_docs/version-1.0/intro.mdx", "legacyinstaller")
    # a tags filter, as the server can apply it: the page table's tags, then doc_id terms
    assert tagged_hits(data, pages, "install", "Onboarding") == {"docs:docs/intro.mdx"}
    assert tagged_hits(data, pages, "install", "") == {
        "docs:docs/intro.mdx",
        "docs:versioned_docs/version-1.0/intro.mdx",
    }
    assert not indexed(data, "versioned_docs/version-1.0/intro.mdx", "Admonition")
    # the description is ranked with the first chunk (full text), not embedded
    assert indexed(data, path, "frobnicator") and indexed(data, path, "steps")
    # chunk text is the file's text, exactly
    chunks = chunks_of(data, path)
    lines = INTRO_MDX.split("\n")
    for chunk in chunks:
        assert chunk.text == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
    assert any("<TabItem" in chunk.text for chunk in chunks)
    rebuilt = reassemble(chunks).split("\n")
    assert all(rebuilt[i] in ("", lines[i]) for i in range(len(rebuilt)))


def test_mkdocs_tree(tmp_path, embedder) -> None:
    files = {
        "mkdocs.yml": "site_name: Quarry\n",
        "docs/index.md": MKDOCS_INDEX,
        "includes/shared.md": MKDOCS_SHARED,
    }
    data = index_tree(tmp_path, files, embedder, exclude=["includes/**"])
    _manifest, _state, pages = pages_of(data)
    assert set(pages) == {"docs/index.md"}
    assert pages["docs/index.md"].title == "Welcome"
    for word in ("gravelpit", "Heads", "quarry", "marmalade", "Maintenance"):
        assert indexed(data, "docs/index.md", word), word
    chunks = chunks_of(data, "docs/index.md")
    assert "\n".join(c.text for c in chunks).count("--8<--") == 1  # raw text as written
    assert all("marmalade" not in c.text for c in chunks)


def test_hugo_tree(tmp_path, embedder) -> None:
    files = {
        "config.toml": 'title = "Ops"\n',
        "content/docs/operations/_index.md": HUGO_SECTION,
        "content/docs/operations/roadmap.md": HUGO_DRAFT,
        "snippets/oncall.md": HUGO_ONCALL,
    }
    data = index_tree(tmp_path, files, embedder, include=["content/**/*.md"])
    _manifest, state, pages = pages_of(data)
    section = "content/docs/operations/_index.md"
    assert set(pages) == {section}  # the draft is not indexed
    assert [p.path for p in state.problems] == ["content/docs/operations/roadmap.md"]
    assert "draft" in state.problems[0].problem
    assert pages[section].title == "Operations"  # linkTitle
    for word in ("halibut", "Backups", "pagerwhale", "daemon"):
        assert indexed(data, section, word), word
    for shortcode in ("alert", "param", "color"):
        assert not indexed(data, section, shortcode), shortcode


def test_drafts_kept_when_the_source_says_so(tmp_path, embedder) -> None:
    files = {"content/roadmap.md": HUGO_DRAFT}
    data = index_tree(tmp_path, files, embedder, drafts=True)
    _manifest, state, pages = pages_of(data)
    assert set(pages) == {"content/roadmap.md"} and not state.problems
    assert indexed(data, "content/roadmap.md", "zeppelinmode")


# --- the chunker alone ------------------------------------------------------------------


def embed_text(page) -> str:
    return "\n".join(chunk.embed_text for chunk in page.chunks)


@pytest.mark.parametrize(
    ("line", "files", "expected"),
    [
        ('--8<-- "snip.md"', {"snip.md": "Snipped walrus."}, True),
        ("--8<-- 'docs/snip.md'", {"docs/snip.md": "Snipped walrus."}, True),
        ('--8<-- "snip.md:section"', {"snip.md": "Snipped walrus."}, True),
        ("{% include note.md %}", {"_includes/note.md": "Snipped walrus."}, True),
        ("{% include_relative note.md %}", {"guide/note.md": "Snipped walrus."}, True),
        ('{{< readfile file="x.md" >}}', {"x.md": "Snipped walrus."}, True),
        ('{{% include "x.md" %}}', {"guide/x.md": "Snipped walrus."}, True),
        ('--8<-- "../outside.md"', {"../outside.md": "Snipped walrus."}, False),
        ('--8<-- "/etc/passwd"', {"/etc/passwd": "Snipped walrus."}, False),
        ('--8<-- "missing.md"', {}, False),
        ("--8<--\nsnip.md\n--8<--", {"guide/snip.md": "Snipped walrus."}, True),
        ('--8<-- "snip.md:2:2"', {"snip.md": "Snipped.\nThe walrus."}, True),
        ('--8<-- "snip.md:1:1"', {"snip.md": "Snipped.\nThe walrus."}, False),
        ("{* ../docs_src/app.py ln[2:2] hl[1] *}", {"docs_src/app.py": "a = 1\nwalrus = 2"}, True),
        ("{* ../docs_src/app.py ln[1:1] *}", {"docs_src/app.py": "a = 1\nwalrus = 2"}, False),
        ("```py\n{!./docs_src/app.py[ln:2-2]!}\n```", {"docs_src/app.py": "a\nwalrus"}, True),
        ("{!./docs_src/app.py[ln:1-1]!}", {"docs_src/app.py": "a = 1\nwalrus = 2"}, False),
        ("{* ../../../docs_src/app.py *}", {"docs_src/app.py": "walrus = 1"}, False),
    ],
)
def test_include_forms(line: str, files: dict[str, str], expected: bool) -> None:
    asked: list[str] = []

    def read(path: str) -> str | None:
        asked.append(path)
        return files.get(path)

    page = parse_page(
        f"# Page\n\nSome prose about the page itself.\n\n{line}\n", "guide/p.md", read=read
    )
    assert ("walrus" in embed_text(page)) is expected
    assert all(not p.startswith(("/", "..")) for p in asked)
    assert "\n".join(c.text for c in page.chunks).count(line) == 1  # the raw text as written


def test_includes_are_bounded() -> None:
    loop = {"a.md": '--8<-- "b.md"\nalpha words here', "b.md": '--8<-- "a.md"\nbeta words here'}
    page = parse_page(
        '# P\n\nSome prose about the page itself.\n\n--8<-- "a.md"\n', "p.md", read=loop.get
    )
    assert "alpha" in embed_text(page) and "beta" in embed_text(page)
    big = {
        f"{i}.md": "\n".join(f'--8<-- "{i * 4 + j}.md"' for j in range(1, 5)) + f"\nw{i}"
        for i in range(200)
    }
    page = parse_page(
        '# P\n\nSome prose about the page itself.\n\n--8<-- "0.md"\n', "p.md", read=big.get
    )
    assert embed_text(page).count("\n") < 100  # depth and count bounded


def test_front_matter_keys() -> None:
    page = parse_page("---\nlinkTitle: Short\ndraft: true\nkeywords: [a1, b2]\n---\nText\n", "x.md")
    assert (page.title, page.draft, page.tags) == ("Short", True, ["a1", "b2"])
    page = parse_page(
        '+++\ntitle = "Long"\nlinkTitle = "Short"\ndraft = false\n+++\nText\n', "x.md"
    )
    assert (page.title, page.draft) == ("Long", False)


def test_worktree_reader_stays_inside(tmp_path) -> None:
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "in.md").write_text("inside text")
    (tmp_path / "secret.md").write_text("outside text")
    (root / "docs" / "out.md").symlink_to(tmp_path / "secret.md")
    (root / "docs" / "big.md").write_text("x" * (MAX_INCLUDE_BYTES + 1))
    read = worktree_reader(root)
    assert read("docs/in.md") == "inside text"
    assert read("docs/out.md") is None and read("../secret.md") is None
    assert read("docs/big.md") is None and read("docs/none.md") is None


def test_checkout_working_tree_includes(tmp_path, embedder) -> None:
    """A checkout indexed as watch does: includes are read from the working tree (an
    uncommitted snippet counts), never through a symlink that leaves it."""
    ws = pushed_workspace(tmp_path, {"docs/index.md": MKDOCS_INDEX})
    ws.write("includes/shared.md", MKDOCS_SHARED)  # not committed
    (tmp_path / "outside.md").write_text("The forbidden lighthouse.\n")
    (ws.work / "includes" / "escape.md").symlink_to(tmp_path / "outside.md")
    ws.write(
        "docs/other.md",
        '# Other\n\nProse on the other page, long enough.\n\n--8<-- "includes/escape.md"\n',
    )
    data = DataDir(tmp_path / "data")
    config = Config(
        sources=[SourceConfig(name="docs", location=str(ws.work), include=["docs/**/*.md"])]
    )
    data.ensure()
    save_config(data, config)
    report = index_sources(data, config, embedder=embedder, worktree=True)
    assert report.published, report
    assert indexed(data, "docs/index.md", "marmalade")
    assert indexed(data, "docs/other.md", "prose")
    assert not indexed(data, "docs/other.md", "lighthouse")
