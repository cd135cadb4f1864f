"""Hits that answer on their own (server/answers/widening.py): a short hit is widened to its
section, or to the chunks beside it, within the answer's budget; a hit that an earlier one
holds is folded into it; one page's further hits follow the other pages'."""

from __future__ import annotations

import pytest

from docdex.server.answers.widening import with_context

from fixtures import open_indexed_docs

INSTALL = """# Installing

Pick the way that suits your machine.

## Docker

The image builds the tool from the script in the repository.

### Dockerfile

ADD install.sh /opt/install.sh

The script installs the server under /opt and its configuration under /etc, creates the
service user, and leaves the data directory empty for the first index. It needs network
access only to the package registries, never to a model hub, and it takes about a minute on
a small machine. Run it again after an upgrade: it keeps the data directory as it is.

### Running it

Start the container with the data directory mounted, then run the installer once.

## From source

""" + "\n\n".join(
    f"Build step {n}: clone the repository and run the build, which needs a compiler."
    for n in range(40)
)

STEPS = (
    "# Upgrading\n\n## Steps\n\n"
    + "\n\n".join(
        f"{n}. Step {n} of the upgrade: stop the worker, move the index aside and restart it."
        for n in range(1, 41)
    )
    + "\n\n## Afterwards\n\nCheck the health page.\n"
)

NOTES = "# Notes\n\n" + "\n\n".join(
    f"## Note {n}\n\nThe signing key rotation note number {n} says the key rotates."
    for n in range(6)
)
OTHER = "# Keys\n\n## Rotation\n\nThe signing key rotates every ninety days on its own.\n"
RELAY = """# Relay

The relay forwards the agents' events to the collector, through the firewall.

## Network

Open the firewall for the relay before its first start, for both of its ports.

### Ports

The relay listens on port 8443 for the agents and on port 9443 for the collector: open
both ports in the firewall.
"""


@pytest.fixture(scope="module")
def docs(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("context")
    files = {
        "install.md": INSTALL,
        "upgrade.md": STEPS,
        "notes.md": NOTES,
        "keys.md": OTHER,
        "relay.md": RELAY,
    }
    docs = open_indexed_docs(root, files, embedder, budget_chars=400)
    yield docs
    docs.holder.stop()


def lines_of(page: str, first: int, last: int) -> str:
    return "\n".join(page.split("\n")[first - 1 : last])


def test_a_one_line_hit_comes_with_its_section(docs):
    # One hit: in a longer answer the page's first section, which is the whole page, holds
    # this one and is folded into it (below).
    top = docs.search("ADD install.sh /opt/install.sh", num_results=1).results[0]
    assert top.path == "install.md" and top.context == "section"
    assert top.heading == "Installing › Docker › Dockerfile"  # its whole section
    assert top.text.startswith("### Dockerfile") and "keeps the data directory" in top.text
    assert "Running it" not in top.text
    assert top.start_line <= top.chunk_start_line <= top.chunk_end_line <= top.end_line
    assert top.text == lines_of(INSTALL, top.start_line, top.end_line)  # an exact slice
    assert not top.truncated


def test_without_context_a_hit_is_its_chunk(docs):
    with docs.holder.acquire() as engine:
        found = engine.search("ADD install.sh /opt/install.sh", 3)
        plain = with_context(engine.index, found, 3, 20_000, 0)
    top = plain.results[0]
    assert top.context == "" and "keeps the data directory" not in top.text
    assert (top.start_line, top.end_line) == top.matched_lines
    assert (top.chunk_start_line, top.chunk_end_line) == (0, 0)  # left out of the answer


def test_a_section_too_long_gives_the_chunks_beside_the_hit(docs):
    with docs.holder.acquire() as engine:
        found = engine.search("Step 20 of the upgrade", 5, engine.scope(path_prefix="upgrade"))
        top = with_context(engine.index, found, 5, 20_000, 900).results[0]
    assert top.context == "neighbours" and top.heading == "Upgrading › Steps"
    assert len(top.text) <= 900
    assert top.start_line <= top.chunk_start_line <= top.chunk_end_line <= top.end_line
    assert (top.start_line, top.end_line) != (top.chunk_start_line, top.chunk_end_line)
    assert top.text == lines_of(STEPS, top.start_line, top.end_line)


def test_a_hit_an_earlier_one_holds_is_folded_into_it(docs):
    with docs.holder.acquire() as engine:
        found = engine.search("upgrade steps stop the worker", 20)
        answered = with_context(engine.index, found, 4, 20_000, 1_500)
    hits = answered.results
    first_four = [h.chunk_id for h in found.results[:4]]
    assert [h.chunk_id for h in hits] != first_four  # some were folded in ...
    assert len(hits) == 4  # ... and the next hits took their places
    for n, hit in enumerate(hits):
        for earlier in hits[:n]:
            inside = earlier.start_line <= hit.matched_lines[0] <= earlier.end_line
            assert not (earlier.doc_id == hit.doc_id and inside), (earlier.heading, hit.heading)


def test_a_later_hits_section_that_holds_an_earlier_hit_is_folded_into_it(docs):
    # The subsection matches best; the page's first section, widened, is the whole page,
    # which holds it (the page's lines 9-12, then 1-12): the page comes once, at the rank
    # and with the chunk of the subsection.
    with docs.holder.acquire() as engine:
        found = engine.search("relay firewall ports", 10, engine.scope(path_prefix="relay"))
        hits = with_context(engine.index, found, 3, 20_000).results
    best = found.results[0]
    assert best.heading == "Relay › Network › Ports" and len(found.results) == 3
    assert len(hits) == 1
    top = hits[0]
    assert (top.chunk_id, top.score) == (best.chunk_id, best.score)
    assert top.matched_lines == (best.start_line, best.end_line)
    assert (top.heading, top.context) == ("Relay", "section")
    assert (top.start_line, top.text) == (1, RELAY.rstrip("\n"))


def test_neighbours_stop_at_the_lines_an_earlier_hit_shows(docs):
    with docs.holder.acquire() as engine:
        found = engine.search("upgrade steps stop the worker", 20)
        hits = with_context(engine.index, found, 6, 20_000, 1_500).results
    steps = [h for h in hits if h.path == "upgrade.md"]
    assert len(steps) > 1 and any(h.context == "neighbours" for h in steps)
    for n, hit in enumerate(steps):
        for earlier in steps[:n]:
            apart = hit.end_line < earlier.start_line or earlier.end_line < hit.start_line
            assert apart, (earlier.start_line, earlier.end_line, hit.start_line, hit.end_line)


def test_widening_stays_within_the_budget(docs):
    result = docs.search("upgrade the worker", num_results=10, max_chars=1_000)
    assert sum(len(h.text) for h in result.results) <= 1_000
    assert all(h.start_line <= h.matched_lines[0] for h in result.results)


def test_one_pages_further_hits_follow_the_other_pages(docs):
    query = "signing key rotation note"
    with docs.holder.acquire() as engine:
        found = engine.search(query, 16)
        spread = [h.path for h in with_context(engine.index, found, 8, 20_000, 0, 2).results]
        crowded = [h.path for h in with_context(engine.index, found, 8, 20_000, 0, 0).results]

    def notes_after_the_second(pages: list[str]) -> list[int]:
        return [n for n, p in enumerate(pages) if p == "notes.md"][2:]

    def last_other(pages: list[str]) -> int:
        return max(n for n, p in enumerate(pages) if p != "notes.md")

    assert any(n < last_other(crowded) for n in notes_after_the_second(crowded))
    assert all(n > last_other(spread) for n in notes_after_the_second(spread))
    assert len(spread) == 8 and spread.count("notes.md") > 2  # followed, not dropped


def option_text(name: str) -> str:
    return "\n\n".join(
        f"The {name} option, paragraph {n}: it changes how the relay batches the agents' "
        f"events before it forwards them to the collector, and what it keeps on disk."
        for n in range(6)
    )


OPTIONS = ["batch_size", "flush_interval", "spool_dir", "tls_mode", "retry_limit", "gzip_level"]
REFERENCE = (
    "# Relay reference\n\nEvery setting of the relay.\n\n## Options\n\nThe relay reads these "
    "from relay.toml.\n\n"
    + "\n\n".join(f"### {name}\n\n{option_text(name)}" for name in OPTIONS)
    + "\n\n## Exit codes\n\nThe relay exits with 3 when relay.toml does not parse.\n"
)


@pytest.fixture(scope="module")
def reference(tmp_path_factory, embedder):
    docs = open_indexed_docs(tmp_path_factory.mktemp("outline"), {"relay.md": REFERENCE}, embedder)
    yield docs
    docs.holder.stop()


def test_a_hit_in_a_long_section_carries_its_outline(reference):
    options = REFERENCE.split("\n").index("## Options") + 1
    assert len(lines_of(REFERENCE, options, REFERENCE.count("\n"))) > 4_000  # past the bound
    top = reference.search("spool_dir option", 3).results[0]
    assert top.heading == "Relay reference › Options › spool_dir"
    section, *parts = top.outline
    assert section.heading == "Options" and section.start_line == options
    assert [p.heading for p in parts] == OPTIONS
    assert section.start_line < parts[0].start_line and parts[-1].end_line == section.end_line
    for part, name in zip(parts, OPTIONS, strict=True):  # each one get_document away
        fetched = reference.get_document("docs:relay.md", part.start_line, part.end_line)
        assert fetched.text.startswith(f"### {name}") and option_text(name) in fetched.text
    assert top.start_line == parts[2].start_line and top.end_line == parts[2].end_line

    short = reference.search("exit code when relay.toml does not parse", 1).results[0]
    assert short.heading == "Relay reference › Exit codes" and short.outline == []
