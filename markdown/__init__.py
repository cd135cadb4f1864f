"""What docs generators add to markdown, recognised once for both sides (adr/0018, adr/0033):
the chunker leaves it out of the text it indexes (indexer/chunking/cleanup.py, mdx.py) and
the page view renders it as what it stands for (server/rendering/renderer.py, dialects.py).

One module per dialect family:

- `fences.py`: fenced code, which every other rule leaves alone.
- `jsx.py`: MDX recognised (`is_mdx`), its ESM, JSX tags and `{expressions}` blanked, and
  component tags in other pages; `tag_scanner.py` is the scan that finds them.
- `attribute_lists.py`: heading ids and attribute lists (`{#id}`, `{: #id .class}`, MDX's
  `{/*id*/}`).
- Callouts (`callouts.py`: their kinds): MkDocs `!!! note` in `admonitions.py`,
  Docusaurus and VitePress `:::tip` in `containers.py`, GitHub's `> [!NOTE]` in
  `alerts.py`, GitBook's `{% hint %}` in `hints.py`, MDX's `<Admonition>` and `<Note>` in
  `callout_components.py`.
- `template_tags.py`: GitBook/Jinja `{% ... %}` and Hugo shortcodes `{{< ... >}}`.
- `directives.py`: one-line directives: mkdocstrings `::: package.module`, DocFX
  `:::image ... :::`, mdBook `{{#include path}}`, MkDocs snippets `--8<-- "path"`.
- `deep_blocks.py`: markdown-it's block parser, keeping blocks nested past its limit.

The patterns are written so that no line makes them backtrack (possessive quantifiers,
anchored searches): a page is untrusted input. Functions that rewrite a page's lines keep
their count (a removed tag leaves its newlines, one space between words and nothing at a
line's start), so positions still match the file.
"""
