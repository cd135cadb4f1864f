"""Copies folded (server/answers/widening.py): versioned docs keep a copy of a page per
version folder; a later hit whose text is the same as an earlier one's is folded into it,
which lists where else that text stands, and the next distinct hit takes its place."""

from __future__ import annotations

import asyncio

import pytest
from mcp import Client

from docdex.server.mcp.tools import build_mcp

from fixtures import open_indexed_docs

PACKAGE = """## With the package

Install the relay from the distribution's package: apt install docdex-relay, then enable
the relay service with systemctl enable --now docdex-relay. The package creates the relay's
user and its spool directory under /var/spool/docdex-relay.
"""
SOURCE = """## From source

Clone the repository and run make install; the relay then needs its user created by hand.
"""
OLD = f"# Installing the relay\n\nThe relay ships for Debian and Ubuntu.\n\n{PACKAGE}\n{SOURCE}"
# The newer version's page: one line more above the same sections, so the same text stands
# at other lines.
NEW = (
    "# Installing the relay\n\nThe relay ships for Debian and Ubuntu.\n\nNew in 2.0: arm64"
    f" packages.\n\n{PACKAGE}\n{SOURCE}"
)
SERVICE = """# Running the relay service

The relay service starts at boot once enabled; systemctl status docdex-relay says whether it
runs, and journalctl -u docdex-relay shows what it logged since the package installed it.
"""
FILES = {
    "versions/1.0/install.md": OLD,
    "versions/2.0/install.md": NEW,
    "versions/2.0/service.md": SERVICE,
}
QUERY = "install the relay package with apt and enable the relay service"


@pytest.fixture(scope="module")
def docs(tmp_path_factory, embedder):
    docs = open_indexed_docs(tmp_path_factory.mktemp("copies"), FILES, embedder)
    yield docs
    docs.holder.stop()


def from_package(page: str) -> tuple[int, int]:
    """The lines of `page` from its package section to its end (the part both versions
    share)."""
    return page.split("\n").index("## With the package") + 1, page.rstrip("\n").count("\n") + 1


def test_a_copy_is_folded_into_the_first_hit_and_listed(docs):
    with docs.holder.acquire() as engine:
        found = engine.search(QUERY, 10).results
    package_hits = [h.path for h in found if h.heading.endswith("With the package")]
    assert sorted(package_hits) == ["versions/1.0/install.md", "versions/2.0/install.md"]

    hits = docs.search(QUERY, num_results=3).results
    top, following = hits[0], hits[1:]
    assert top.chunk_id == found[0].chunk_id and PACKAGE.rstrip("\n") in top.text
    other = next(p for p in FILES if p != top.path and p.endswith("install.md"))
    [copy] = top.copies
    assert (copy.source, copy.path) == ("docs", other)
    assert (copy.start_line, copy.end_line) == from_package(FILES[other])
    fetched = docs.get_document(f"docs:{other}", copy.start_line, copy.end_line)
    assert top.text.endswith(fetched.text)  # the same text, where the copy lists it
    # the next distinct hits take the copy's place, and no text comes twice: the other
    # version's page shows only what differs
    assert len(hits) == 3
    assert all("## With the package" not in h.text for h in following)
    assert any(h.path == "versions/2.0/service.md" for h in following)


def test_a_search_of_one_version_still_returns_its_page(docs):
    for version in ("1.0", "2.0"):
        prefix = f"versions/{version}/"
        hits = docs.search(QUERY, num_results=3, path_prefix=prefix).results
        top = hits[0]
        assert top.path == f"{prefix}install.md" and PACKAGE.rstrip("\n") in top.text
        assert top.copies == []  # the other version is out of scope: nothing to fold
        assert all(h.path.startswith(prefix) for h in hits)


def test_the_text_content_lists_the_copies(docs):
    async def call() -> tuple[str, dict]:
        async with Client(build_mcp(docs)) as client:
            result = await client.call_tool("search_docs", {"query": QUERY, "num_results": 3})
            return result.content[0].text, result.structured_content

    text, structured = asyncio.run(call())
    top = structured["results"][0]
    [copy] = top["copies"]
    place = f"`docs:{copy['path']}:{copy['start_line']}-{copy['end_line']}`"
    first_hit = text.split("\n## 2. ")[0]
    assert f"Same text also at: {place}" in first_hit
    assert text.count("## With the package") == 1


VERSIONS = [f"{major}.{minor}" for major in (1, 2, 3) for minor in range(4)]  # twelve
GUIDE = """# Rotating the signing key

## Schedule

The relay rotates its signing key every ninety days and keeps the old key for a week, so
that agents holding tokens signed with it still connect.
"""
OTHERS = {
    "notes/keys.md": "# Key storage\n\nThe relay keeps its signing keys in the state folder.\n",
    "notes/tokens.md": "# Tokens\n\nAgents hold tokens signed with the relay's signing key.\n",
    "notes/agents.md": "# Agents\n\nAn agent connects to the relay with its signed token.\n",
}


@pytest.fixture(scope="module")
def many_versions(tmp_path_factory, embedder):
    files = {f"docs/{v}/keys.md": GUIDE for v in VERSIONS} | OTHERS
    docs = open_indexed_docs(tmp_path_factory.mktemp("versions"), files, embedder)
    yield docs
    docs.holder.stop()


def test_copies_past_the_spare_hits_still_leave_a_full_answer(many_versions):
    # Each of the twelve copies matches twice (the page and its section): more than the
    # spare hits asked for; the answer still has as many distinct hits as asked.
    query = "how often does the relay rotate its signing key"
    hits = many_versions.search(query, num_results=3).results
    assert len(hits) == 3
    top = hits[0]
    assert top.path.endswith("/keys.md") and "ninety days" in top.text
    assert {c.path for c in top.copies} == {f"docs/{v}/keys.md" for v in VERSIONS} - {top.path}
    assert all("ninety days" not in h.text for h in hits[1:])
    assert {h.path for h in hits[1:]} <= set(OTHERS)
