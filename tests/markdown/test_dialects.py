"""The markup of docs generators (the markdown/ package): GitBook, mdBook, DocFX, VitePress,
MkDocs, Hugo and MDX pages as their real repositories write them, pushed to git, indexed by
the pipeline and read back as a user sees them: clean titles and breadcrumbs, the words inside
callouts and components found, each hit's text the raw markdown, the page view with callouts
and without residue, site addresses linked to the pages they name."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from docdex.index_format.layout import DataDir
from docdex.index_format.reassembly import reassemble
from docdex.index_format.records import ChunkerSettings
from docdex.indexer.chunking.page_parser import parse_page
from docdex.markdown import jsx
from docdex.server.answers.page_views import page_view
from docdex.server.engine import Engine
from docdex.server.rendering.renderer import Where, render_markdown
from docdex.server.rendering.site_map import SiteMap

from bench.residue import MARKUP_RESIDUE
from fixtures import index_workspace, pushed_workspace
from pagetext import CORPORA, ParsedCorpus, assert_served_whole

# What must not reach a title, a breadcrumb or the text a page view shows.
RESIDUE = re.compile(
    r"\{#|\{:|\{/\*|\{\{<|\{\{%|\{\{#|\{%|:::|!!!|\[![A-Za-z]+\]|--8<--"
    r"|</[A-Z]|<[A-Z][\w.]*(?:\s+[\w-]+=|\s*/?>)"
)
# Quick to clone and chunk, one per generator: GitBook, VitePress, MkDocs, mdBook, Hugo.
FAST_CORPORA = ("apm-docs", "vite-docs", "mkdocs-docs", "rust-book", "hugo-docs")

GITBOOK = """---
description: What each plan includes.
---
# Plans

{% hint style="info" %}
🚧 **Coming soon.** The Pro plan adds the zircon dashboard for your organization.
{% endhint %}

## At a glance

{% hint style="warning" %}
If **device validation** is disabled, ingestion is blocked until you enable it.
{% endhint %}
"""

MDBOOK = """# Programming a Guessing Game

## Setting Up a New Project

<span class="filename">Filename: Cargo.toml</span>

```toml
{{#include ../listings/ch02-guessing-game/no-listing-01/Cargo.toml}}
```

<Listing number="2-1" file-name="src/main.rs" caption="Code that gets a guess">

```rust,ignore
{{#rustdoc_include ../listings/ch02-guessing-game/listing-02-01/src/main.rs:all}}
```

</Listing>

The `read_line` call stores the marmot guess the player typed.
"""

DOCFX = """---
title: about_Providers
ms.date: 01/18/2026
---
# about_Providers

## Short description

> [!NOTE]
> Providers expose the tamarind data store as if it were a drive.

:::image type="content" source="media/drive.png" alt-text="Screenshot of the provider drive":::

:::code language="powershell" source="~/samples/Get-Drive.ps1" range="1-10":::

> [!IMPORTANT]
> Restart the session after you install a provider module.
"""

VITEPRESS = """# Configuring Vite {#configuring-vite}

<ScrimbaLink href="https://scrimba.com/x" title="Configuring">Watch a lesson</ScrimbaLink>

::: tip CONFIG LOADING
By default the config file is bundled with the pelican bundler before it is loaded.
:::

## input <NonInheritBadge />

::: details What hosts are safe to add?
Hosts that you control are safe to add to the heron allow list.
:::

::: code-group
```js [vite.config.js]
export default { base: '/app/' }
```
:::

See [hot updates](/guide/features#hot-module-replacement), [deploying](../guide/static-deploy)
and [the old page](/guide/removed).

<script setup>
import graphSvg from '../images/graph.svg?raw'
</script>
"""

VITE_FEATURES = """# Features

## Hot Module Replacement

Vite provides an HMR API over native ESM for the dev server.
"""

VITE_DEPLOY = "# Deploying a Static Site\n\nThe build lands in the dist folder by default.\n"

MKDOCS = """# Configuration

## Theme directory {#theme-dir}

!!! warning "Deprecated setting"
    The `theme_dir` option names the kestrel folder of theme overrides.

    ```yaml
    theme_dir: custom
    ```

??? note "Collapsed details"
    The osprey option is read once, when the build starts.

### Options {: #options-list }

::: mkdocs.plugins.BasePlugin
    options:
        show_root_heading: false

See the [installation guide](../installation/) and [the directory](#theme-dir).
"""

MKDOCS_INSTALL = "# Installation\n\nInstall MkDocs with pip, then run the builder.\n"

HUGO = """+++
title = "collections.After"
linkTitle = "After"
+++

{{< new-in 0.140.0 />}}

> [!NOTE]
> The after function slices the iguana collection from an index on.

{{< code-toggle file=hugo >}}
[params]
reptiles = true
{{< /code-toggle >}}

### Settings {#settings-after}

{{% include "_common/functions/go-template/text-template.md" %}}

Also see [`first`](/functions/collections/first/) and [`last`](/functions/collections/last/).
"""

HUGO_FIRST = """+++
title = "collections.First"
+++

Returns the first N elements of a collection.
"""

MDX_IN_MD = """---
title: Managing State
---

<Intro>

As your application grows, the platypus state gets harder to keep in order.

</Intro>

## Reacting to input with state {/*reacting-to-input-with-state*/}

<Pitfall>

Never mutate the wombat state directly: replace it with a new object.

</Pitfall>

<Sandpack>

```js
export default function App() { return <h1>Hi</h1>; }
```

</Sandpack>

:::tip[Lift it up]
Lift the numbat state up to the closest common parent.
:::
"""

FILES = {
    "gitbook/plans.md": GITBOOK,
    "book/src/ch02-00-guessing-game.md": MDBOOK,
    "ps/reference/about_Providers.md": DOCFX,
    "docs/config/index.md": VITEPRESS,
    "docs/guide/features.md": VITE_FEATURES,
    "docs/guide/static-deploy.md": VITE_DEPLOY,
    "mkdocs/docs/user-guide/configuration.md": MKDOCS,
    "mkdocs/docs/user-guide/installation.md": MKDOCS_INSTALL,
    "content/en/functions/collections/After.md": HUGO,
    "content/en/functions/collections/First.md": HUGO_FIRST,
    "react/src/content/learn/managing-state.md": MDX_IN_MD,
}


@dataclass(frozen=True)
class Dialect:
    path: str
    title: str
    word: str  # found only inside a callout or a component of the page
    breadcrumb: list[str]  # of the hit holding the word
    raw: str  # the markup as written, in that hit's text
    shown: tuple[str, ...]  # pieces of the page view's HTML (callouts, directives)
    hidden: tuple[str, ...]  # markup words neither indexed nor shown


DIALECTS = [
    Dialect(
        "gitbook/plans.md",
        "Plans",
        "zircon",
        ["Plans"],
        '{% hint style="info" %}',
        ('<div class="callout callout-note">\n<p>🚧', '<div class="callout callout-warning">'),
        ("hint", "style", "endhint"),
    ),
    Dialect(
        "book/src/ch02-00-guessing-game.md",
        "Programming a Guessing Game",
        "marmot",
        ["Programming a Guessing Game", "Setting Up a New Project"],
        '<Listing number="2-1"',
        ('<p class="directive">included <code>../listings/ch02-guessing-game/listing-02-01',),
        ("Listing", "rustdoc_include", "caption"),
    ),
    Dialect(
        "ps/reference/about_Providers.md",
        "about_Providers",
        "tamarind",
        ["about_Providers", "Short description"],
        "> [!NOTE]",
        (
            '<div class="callout callout-note">\n<p class="callout-title">Note</p>',
            '<div class="callout callout-important">\n<p class="callout-title">Important</p>',
            '<span class="image">image: Screenshot of the provider drive</span>',
        ),
        ("alt-text", "range", "language"),
    ),
    Dialect(
        "docs/config/index.md",
        "Configuring Vite",
        "heron",
        ["Configuring Vite", "input"],
        "::: details What hosts are safe to add?",
        (
            '<details class="callout callout-note"><summary class="callout-title">What hosts',
            '<div class="callout callout-tip">\n<p class="callout-title">CONFIG LOADING</p>',
        ),
        ("ScrimbaLink", "NonInheritBadge", "graphSvg", "configuring-vite", "code-group"),
    ),
    Dialect(
        "mkdocs/docs/user-guide/configuration.md",
        "Configuration",
        "kestrel",
        ["Configuration", "Theme directory"],
        '!!! warning "Deprecated setting"',
        (
            '<div class="callout callout-warning">\n<p class="callout-title">Deprecated setting',
            '<details class="callout callout-note"><summary class="callout-title">Collapsed',
            '<p class="directive">documents <code>mkdocs.plugins.BasePlugin</code></p>',
        ),
        ("theme-dir", "options-list", "show_root_heading"),
    ),
    Dialect(
        "content/en/functions/collections/After.md",
        "collections.After",
        "iguana",
        ["collections.After"],
        "> [!NOTE]",
        (
            '<div class="callout callout-note">',
            '<pre><code class="language-toml">[params]',
            '<p class="directive">included <code>_common/functions/go-template/',
        ),
        ("new-in", "toggle", "settings-after"),
    ),
    Dialect(
        "react/src/content/learn/managing-state.md",
        "Managing State",
        "wombat",
        ["Managing State", "Reacting to input with state"],
        "<Pitfall>",
        (
            '<div class="callout callout-warning">\n<p class="callout-title">Pitfall</p>',
            '<div class="callout callout-tip">\n<p class="callout-title">Lift it up</p>',
        ),
        ("Sandpack", "Intro", "reacting-to-input-with-state"),
    ),
]
IDS = [d.path.split("/")[0] for d in DIALECTS]


@pytest.fixture(scope="module")
def engine(tmp_path_factory, embedder) -> Iterator[Engine]:
    root = tmp_path_factory.mktemp("dialects")
    data = DataDir(root / "data")
    index_workspace(data, pushed_workspace(root, FILES), embedder)
    engine = Engine.open(data, embedder)
    yield engine
    engine.close()


def doc_id(path: str) -> str:
    return f"docs:{path}"


def lines_of(text: str, start: int, end: int) -> str:
    return "\n".join(text.split("\n")[start - 1 : end])


def shown_text(page_html: str) -> str:
    """What a reader reads of the view, code aside (code shows as written)."""
    prose = re.sub(r"<pre>.*?</pre>|<code>.*?</code>", " ", page_html, flags=re.DOTALL)
    return html.unescape(re.sub(r"<[^>]+>", " ", prose))


@pytest.mark.parametrize("dialect", DIALECTS, ids=IDS)
def test_titles_and_breadcrumbs_are_clean_text(engine, dialect: Dialect) -> None:
    page = engine.index.pages[doc_id(dialect.path)]
    assert page.title == dialect.title
    breadcrumbs = [heading for c in engine.index.page_chunks(page) for heading in c.headings]
    assert breadcrumbs and not [h for h in breadcrumbs if RESIDUE.search(h)], breadcrumbs


@pytest.mark.parametrize("dialect", DIALECTS, ids=IDS)
def test_words_inside_callouts_and_components_are_found_as_written(engine, dialect) -> None:
    hit = engine.search(f"the {dialect.word}", 3).results[0]
    assert hit.doc_id == doc_id(dialect.path)
    assert hit.headings == dialect.breadcrumb
    assert dialect.raw in hit.text  # agents get the raw markdown
    assert hit.text == lines_of(FILES[dialect.path], hit.start_line, hit.end_line)


@pytest.mark.parametrize("dialect", DIALECTS, ids=IDS)
def test_the_indexed_text_leaves_the_markup_out(dialect: Dialect) -> None:
    page = parse_page(FILES[dialect.path], dialect.path)
    assert_served_whole(FILES[dialect.path], page, ChunkerSettings().max_chars)
    indexed = "\n".join(chunk.embed_text for chunk in page.chunks)
    assert dialect.word in indexed
    assert not [word for word in dialect.hidden if word in indexed], indexed
    prose = re.sub(r"\{\{#.*|export default.*|\[params\]|reptiles = true", "", indexed)
    assert not RESIDUE.search(prose), prose


@pytest.mark.parametrize("dialect", DIALECTS, ids=IDS)
def test_the_page_view_renders_callouts_without_residue(engine, dialect: Dialect) -> None:
    view = page_view(engine.index, engine.index.pages[doc_id(dialect.path)])
    assert all(piece in view.html for piece in dialect.shown), view.html
    shown = shown_text(view.html)
    assert dialect.word in shown
    assert not RESIDUE.search(shown), RESIDUE.search(shown)
    assert not [word for word in dialect.hidden if word in shown], shown


def test_heading_ids_name_the_headings_anchors(engine) -> None:
    for path, anchor in [
        ("mkdocs/docs/user-guide/configuration.md", 'id="doc-theme-dir"'),
        ("mkdocs/docs/user-guide/configuration.md", 'id="doc-options-list"'),
        ("react/src/content/learn/managing-state.md", 'id="doc-reacting-to-input-with-state"'),
        ("content/en/functions/collections/After.md", 'id="doc-settings-after"'),
    ]:
        page = engine.index.pages[doc_id(path)]
        assert anchor in page_view(engine.index, page).html, (path, anchor)


@pytest.mark.parametrize(
    ("path", "links", "text_only"),
    [
        (
            "docs/config/index.md",
            {
                "hot updates": "docs/guide/features.md#doc-hot-module-replacement",
                "deploying": "docs/guide/static-deploy.md",
            },
            "the old page",
        ),
        (
            "mkdocs/docs/user-guide/configuration.md",
            {"installation guide": "mkdocs/docs/user-guide/installation.md"},
            "",
        ),
        (
            "content/en/functions/collections/After.md",
            {"first": "content/en/functions/collections/First.md"},
            "last",
        ),
    ],
)
def test_site_addresses_link_to_the_pages_they_name(engine, path, links, text_only) -> None:
    """The page view resolves a link written as the site's address (`/guide/features`,
    `../installation/`, Hugo's lowercased `/functions/collections/first/`) to the page the
    index holds there; one that names no page stays text."""
    page = engine.index.pages[doc_id(path)]
    text = reassemble(engine.index.page_chunks(page))
    rendered = render_markdown(text, Where("docs", path, SiteMap("docs", engine.index.pages)))
    anchors = dict(re.findall(r'<a href="/\?doc=docs%3A([^"]+)">(?:<code>)?([^<]+)<', rendered))
    found = {words: target.replace("%2F", "/") for target, words in anchors.items()}
    assert found == links
    if text_only:
        assert re.search(rf'<span class="dead-link" title="[^"]*">(?:<code>)?{text_only}', rendered)


@pytest.mark.parametrize(
    ("path", "text", "mdx"),
    [
        ("a.mdx", "# Plain\n", True),
        ("a.md", "## Usage {/*usage*/}\n", True),
        ("a.md", "import Tabs from '@theme/Tabs';\n\n# T\n", True),
        ("a.md", '<Tabs groupId="os">\n<TabItem value="x" label={"X"}>\n', True),
        ("a.md", VITEPRESS, False),  # <script setup> imports, Vue components
        ("a.md", MDBOOK, False),  # <Listing> alone
        ("a.md", '{{< highlight go >}}\nimport "fmt"\n{{< /highlight >}}\n', False),
        ("a.md", "```js\nimport x from 'y'\n{/* in code */}\n```\n", False),
        ("a.md", "Use `{/* comments */}` in MDX.\n", False),
    ],
)
def test_mdx_is_recognised_in_md_pages_by_syntax_only_mdx_has(path, text, mdx) -> None:
    assert jsx.is_mdx(path, text.split("\n")) is mdx


PATHOLOGICAL = {  # lines that made the first patterns backtrack for minutes, or hours
    "admonition": "!!! note" + " " * 20_000 + '"',
    "shortcode": "{{< x" + " " * 20_000 + "/ %",
    "mdbook": "{{#include" + " " * 20_000,
    "heading-id": "## x" + " " * 20_000 + "{a}",
    "braces": "## x {" * 5_000 + "}",
    "comments": "<!-- " * 5_000,
    "code-spans": "`a ``b " * 5_000,
    "tags": "<Note a" * 5_000,
}


@pytest.mark.parametrize("line", PATHOLOGICAL.values(), ids=PATHOLOGICAL.keys())
def test_a_line_built_to_make_the_patterns_backtrack_is_read_at_once(line: str) -> None:
    """Read in milliseconds (the patterns are possessive or anchored, the scans remember
    what they found unclosed); a pattern that backtracked again would hang here until the
    suite's timeout."""
    page = parse_page(line + "\n", "a.md")
    assert reassemble(page.chunks) == line  # every character still served
    assert render_markdown(line, Where("docs", "a.md")).startswith('<div class="blk" id="L1"')


# --- the real corpora --------------------------------------------------------------------


def headings_with_markup(parsed: ParsedCorpus) -> tuple[int, list[str]]:
    """How many pages the corpus has at its head, and its titles and breadcrumb headings
    that still carry markup, by the chunker alone."""
    found = []
    for path, page in parsed.pages.items():
        for heading in {page.title, *(h for chunk in page.chunks for h in chunk.headings)}:
            if MARKUP_RESIDUE.search(heading):
                found.append(f"{parsed.corpus.name}:{path}: {heading}")
    return len(parsed.pages), found


@pytest.mark.parametrize("name", FAST_CORPORA)
def test_no_title_or_breadcrumb_of_a_small_corpus_carries_markup(name, parsed_corpus) -> None:
    pages, found = headings_with_markup(parsed_corpus(name))
    assert pages > 10 and found == []


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(set(CORPORA) - set(FAST_CORPORA)))
def test_no_title_or_breadcrumb_of_any_corpus_carries_markup(name, parsed_corpus) -> None:
    pages, found = headings_with_markup(parsed_corpus(name))
    assert pages > 10 and found == []
