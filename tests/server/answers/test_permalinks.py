"""Permalinks and site pages (server/answers/permalinks.py): presets from a forge's URL, the site
rules of MkDocs, Docusaurus and Hugo, and hits whose `url` names the very lines they quote
at a commit of the repository."""

from __future__ import annotations

import re

import msgspec
import pytest

from docdex.index_format.config import load_config, save_config
from docdex.server.answers.permalinks import Links, preset, site_path

from fixtures import FAQ, INSTALL, open_indexed_docs
from gitrepo import git

GITHUB = "https://github.com/org/docs/blob/{commit}/{path}#L{start_line}-L{end_line}"


@pytest.mark.parametrize(
    ("remote", "template"),
    [
        ("https://github.com/org/docs.git", GITHUB),
        ("git@github.com:org/docs.git", GITHUB),
        (
            "ssh://git@gitlab.example.com:2222/group/sub/docs.git",
            "https://gitlab.example.com/group/sub/docs/-/blob/{commit}/{path}"
            "#L{start_line}-{end_line}",
        ),
        (
            "https://codeberg.org/org/docs",
            "https://codeberg.org/org/docs/src/commit/{commit}/{path}#L{start_line}-L{end_line}",
        ),
        (
            "https://bitbucket.org/org/docs.git",
            "https://bitbucket.org/org/docs/src/{commit}/{path}#lines-{start_line}:{end_line}",
        ),
        ("https://example.com/docs.git", ""),  # an unknown host: no guess
        ("/srv/git/docs.git", ""),
        ("https://github.com/org", ""),  # not a repository
    ],
)
def test_presets_follow_the_forge(remote, template):
    assert preset(remote) == template


@pytest.mark.parametrize(
    ("path", "site_dir", "page"),
    [
        ("docs/guide/install.md", "", "guide/install/"),
        ("docs/index.md", "", ""),
        ("content/posts/_index.md", "", "posts/"),
        ("guide/README.md", "", "guide/"),
        ("website/docs/intro.mdx", "website/docs", "intro/"),
        ("docs/a b.markdown", "", "a%20b/"),
    ],
)
def test_site_pages_follow_the_generators_rules(path, site_dir, page):
    assert Links(site_url="https://docs.example.org/", site_dir=site_dir).page_url(path) == (
        f"https://docs.example.org/{page}"
    )
    assert site_path("docs/guide/install.md") == "guide/install/"


def test_no_permalink_for_a_working_tree_or_without_a_template():
    links = Links(template=GITHUB)
    assert links.permalink("docs", "main", "f" * 40 + "+worktree", "a.md", 1, 2) == ""
    assert Links().permalink("docs", "main", "f" * 40, "a.md", 1, 2) == ""
    whole = links.permalink("docs", "main", "f" * 40, "guide/a b.md", 0, 0)
    assert whole == f"https://github.com/org/docs/blob/{'f' * 40}/guide/a%20b.md"


@pytest.fixture(scope="module")
def docs(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("permalinks")
    docs = open_indexed_docs(root, {"docs/guide/install.md": INSTALL, "faq.md": FAQ}, embedder)
    git(root / "docs.git", "remote", "add", "origin", "git@github.com:org/docs.git")
    yield docs
    docs.holder.stop()


def quoted_lines(docs_root, url: str) -> tuple[str, str]:
    """The commit a GitHub permalink names, and the lines it points at in that commit."""
    match = re.fullmatch(r"https://github\.com/org/docs/blob/(\w+)/(.+)#L(\d+)-L(\d+)", url)
    assert match, url
    commit, path, first, last = match.groups()
    text = git(docs_root, "show", f"{commit}:{path}")
    return commit, "\n".join(text.split("\n")[int(first) - 1 : int(last)])


def test_hits_carry_a_permalink_to_the_lines_they_quote(docs):
    result = docs.search("python compiler install", num_results=5)
    bare = docs.data.root.parent / "docs.git"
    for hit in result.results:
        commit, lines = quoted_lines(bare, hit.url)
        assert commit == hit.commit and lines.strip() == hit.text.strip()
    top = result.results[0]
    document = docs.get_document(top.chunk_id)  # the matched chunk, inside the hit's text
    first, last = top.matched_lines
    assert document.url.endswith(f"#L{first}-L{last}")
    assert document.url.split("#")[0] == top.url.split("#")[0]
    page = docs.query_docs(file_path_contains="install").documents[0]
    assert page.url.endswith("/docs/guide/install.md") and "#" not in page.url


def test_url_settings_apply_without_a_restart(docs):
    config = load_config(docs.data)
    custom = msgspec.structs.replace(
        config.sources[0],
        url_template="https://git.home.lan/{source}/{ref}/{commit}/{path}?lines={start_line}",
        site_url="https://docs.example.org",
    )
    save_config(docs.data, msgspec.structs.replace(config, sources=[custom]))
    try:
        hit = next(h for h in docs.search("install").results if h.path.startswith("docs/"))
        assert hit.url == (
            f"https://git.home.lan/docs/main/{hit.commit}/{hit.path}?lines={hit.start_line}"
        )
        assert hit.page_url == "https://docs.example.org/guide/install/"
        assert docs.page_view(hit.doc_id).permalink.startswith("https://git.home.lan/docs/")
    finally:
        save_config(docs.data, config)
