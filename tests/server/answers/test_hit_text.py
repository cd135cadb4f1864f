"""What a hit shows (server/answers/hit_text.py), on real pages of the corpora: the file an
include line names in its place (sqlmodel's `{!...!}` inside fences, pymdown-extensions'
`--8<--`, one line and block form; FastAPI's `{* ... *}`), an MDX page without its imports
and component tags (starlight), terminal colour markup as its text; get_document still
serves the file's exact lines."""

from __future__ import annotations

import re

import pytest

from fixtures import open_indexed_docs
from pagetext import bench_corpus_files

WHERE = "docs/tutorial/where.md"
LICENSE_PAGE = "docs/src/markdown/about/license.md"
REFS = "docs/src/markdown/refs.md"  # the real .snippets/refs.md, where the indexer reads it
STARTED = "docs/src/content/docs/getting-started.mdx"
FIRST_STEPS = "docs/en/docs/tutorial/first-steps.md"
TUTORIAL = "docs_src/first_steps/tutorial001.py"

# FastAPI's docs as written upstream (its own repository is not among the corpora): a code
# example by `{* path *}`, a console block whose output carries terminal colours.
FASTAPI_PAGE = """# First Steps

The simplest FastAPI file could look like this:

{* ../../docs_src/first_steps/tutorial001.py *}

Copy that to a file `main.py` and run the live server:

<div class="termy">

```console
$ <font color="#4E9A06">fastapi</font> dev <u style="text-decoration-style:solid">main.py</u>
<span style="background-color:#009485"><font color="#D3D7CF"> FastAPI </font></span>  Starting
<font color="#4E9A06">INFO</font>:     Uvicorn running on <b>http://127.0.0.1:8000</b>
```

</div>
"""
FASTAPI_CODE = """from fastapi import FastAPI

app = FastAPI()


@app.get("/")
async def root():
    return {"message": "Hello World"}
"""
_MARKDOWN_INCLUDE = re.compile(r"\{!\s*\./([^\[!\s]+)")
_COMPONENT_TAG = re.compile(r"</?[A-Z][\w.]*")


def real_pages(tmp_path_factory) -> dict[str, str | bytes]:
    """The pages, and the files they include, at the heads of the corpora."""
    root = tmp_path_factory.mktemp("corpora")
    sqlmodel = bench_corpus_files("sqlmodel", root)
    pymdownx = bench_corpus_files("pymdownx", root)
    starlight = bench_corpus_files("starlight", root)
    where = sqlmodel[WHERE].decode()
    files: dict[str, str | bytes] = {WHERE: where, STARTED: starlight[STARTED]}
    files.update({path: sqlmodel[path] for path in _MARKDOWN_INCLUDE.findall(where)})
    snippets = "docs/src/markdown/.snippets"
    files.update({LICENSE_PAGE: pymdownx[LICENSE_PAGE], "LICENSE.md": pymdownx["LICENSE.md"]})
    files[REFS] = pymdownx[f"{snippets}/refs.md"]
    for name in ("links.md", "abbr.md"):
        files[f"docs/src/markdown/{name}"] = pymdownx[f"{snippets}/{name}"]
    files.update({FIRST_STEPS: FASTAPI_PAGE, TUTORIAL: FASTAPI_CODE})
    return files


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, embedder):
    files = real_pages(tmp_path_factory)
    root = tmp_path_factory.mktemp("hit-text")
    docs = open_indexed_docs(root, files, embedder)  # type: ignore[arg-type]  # bytes too
    yield docs, files
    docs.holder.stop()


def text_of(file: str | bytes) -> str:
    return file.decode() if isinstance(file, bytes) else file


def test_sqlmodel_code_comes_in_place_of_its_include_line(indexed):
    docs, files = indexed
    hits = docs.search("select heroes where the name is Deadpond", 10, path_prefix=WHERE).results
    carrying = [h for h in hits if h.included]
    assert carrying, [h.heading for h in hits]
    for hit in carrying:
        raw = docs.get_document(f"docs:{WHERE}", hit.start_line, hit.end_line).text
        # shown instead of their lines (an include past the hit's room keeps its line)
        assert hit.text.count("{!./docs_src/") < raw.count("{!./docs_src/")
        for path in hit.included:
            code = [line for line in text_of(files[path]).split("\n") if len(line) > 20]
            assert any(line in hit.text for line in code), path  # the file's own lines
        assert "{!./docs_src/" in docs.get_document(hit.chunk_id).text  # stored as written
    page = docs.get_document(f"docs:{WHERE}", max_chars=100_000)
    assert page.text == text_of(files[WHERE]).rstrip("\n")


def test_pymdownx_snippets_one_line_and_block(indexed):
    docs, files = indexed
    licence = docs.search("MIT license permission is hereby granted", 5, path_prefix=LICENSE_PAGE)
    top = licence.results[0]
    assert top.included == ["LICENSE.md"] and "--8<--" not in top.text
    assert "Permission is hereby granted" in top.text
    assert '--8<-- "LICENSE.md"' in docs.get_document(f"docs:{LICENSE_PAGE}").text

    block = docs.search("abbreviations and links", 10, path_prefix=REFS).results
    assert block and all("--8<--" not in h.text for h in block)
    shown = {path for h in block for path in h.included}
    assert shown == {"docs/src/markdown/links.md", "docs/src/markdown/abbr.md"}
    links = text_of(files["docs/src/markdown/links.md"])
    assert any(links.split("\n")[0] in h.text for h in block)
    # 7,555 characters: shown up to the hit's room, and says what it leaves out
    more = [h for h in block if "more lines of docs/src/markdown/links.md)" in h.text]
    assert more and all(len(h.text) <= 4_000 for h in more)
    assert docs.get_document(f"docs:{REFS}").text.count("--8<--") == 2


def test_an_mdx_page_shows_without_imports_and_component_tags(indexed):
    docs, files = indexed
    hits = docs.search("create a new Astro Starlight project", 10, path_prefix=STARTED).results
    assert any("npm create astro@latest -- --template starlight" in h.text for h in hits)
    for hit in hits:
        lines = hit.text.split("\n")
        assert not any(line.startswith(("import ", "export ")) for line in lines), hit.text
        assert not _COMPONENT_TAG.search(hit.text), hit.text
        assert "\n\n\n" not in hit.text
    page = docs.get_document(f"docs:{STARTED}").text
    assert "import { Tabs, TabItem } from '@astrojs/starlight/components';" in page
    assert '<Tabs syncKey="pkg">' in page


def test_fastapi_example_and_terminal_colours(indexed):
    docs, _files = indexed
    top = docs.search("simplest FastAPI file run the live server", 3).results[0]
    assert top.path == FIRST_STEPS and top.included == [TUTORIAL]
    assert "```python\n" + FASTAPI_CODE.rstrip("\n") + "\n```" in top.text
    assert "{*" not in top.text and "<font" not in top.text
    assert "INFO:     Uvicorn running on http://127.0.0.1:8000" in top.text
    assert "<span" not in top.text and "<u " not in top.text
    assert "{* ../../docs_src/first_steps/tutorial001.py *}" in docs.get_document(top.chunk_id).text
