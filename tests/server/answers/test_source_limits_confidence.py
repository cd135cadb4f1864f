"""What a caller limited to some sources is told about its search does not depend on the other
sources: `low_confidence` counts the chunks of the caller's sources only (adr/0038). A real
index of two sources, "alpha" (a harbour handbook that never names Zorblax) and "decoy",
whose words change with a push; the caller limited to alpha asks the same question before
and after."""

from __future__ import annotations

from concurrent.futures import Future

import pytest

from docdex.index_format.config import Config, SourceConfig, save_config
from docdex.index_format.layout import DataDir
from docdex.indexer.run.pipeline import index_sources
from docdex.server.answers.source_limits import SourceLimit
from docdex.server.boot import Boot, open_docs

from fixtures import pushed_workspace

# Over 100 chunks (the index size from which an absent word counts, adr/0027), each a section.
BERTHS = "# Berths\n\n" + "\n\n".join(
    f"## Berth {n}\n\nBerth {n} is for boats of up to {n + 5} metres; its rings are checked "
    f"when the harbour is quiet, every {n % 7 + 1} weeks."
    for n in range(110)
)
TIDES = "# Tides\n\n## Tide log\n\nThe keeper logs the tide at dawn and at dusk in the tide book.\n"
ALPHA = {"berths.md": BERTHS, "tides.md": TIDES}
QUESTION = "When is the Zorblax tide logged?"  # alpha never names Zorblax


def decoy_pages(name: str) -> dict[str, str]:
    """Twenty sections naming `name`: the decoy's words, which a push changes."""
    crates = "\n\n".join(
        f"## Crate {n}\n\nThe {name} crate {n} is stacked when the crane is free."
        for n in range(20)
    )
    return {"crates.md": f"# Crates\n\n{crates}\n"}


@pytest.fixture
def docs(tmp_path, embedder):
    alpha = pushed_workspace(tmp_path / "alpha", ALPHA)
    decoy = pushed_workspace(tmp_path / "decoy", decoy_pages("Quimbly"))
    data = DataDir(tmp_path / "data")
    config = Config(
        sources=[
            SourceConfig(name="alpha", location=str(alpha.bare)),
            SourceConfig(name="decoy", location=str(decoy.bare)),
        ]
    )
    data.ensure()
    save_config(data, config)
    assert index_sources(data, config, embedder=embedder).published
    model: Future = Future()
    model.set_result(embedder)
    docs = open_docs(data, Boot(), model)
    yield docs, decoy, config
    docs.holder.stop()


def test_a_limited_callers_low_confidence_ignores_the_other_sources_words(docs, embedder):
    docs, decoy, config = docs
    alpha_only = docs.for_caller(SourceLimit(frozenset({"alpha"})))

    def answers() -> tuple[bool, bool, list[str]]:
        mine = alpha_only.search(QUESTION)
        return docs.search(QUESTION).low_confidence, mine.low_confidence, ids(mine)

    def ids(result) -> list[str]:
        return [hit.chunk_id for hit in result.results]

    every_before, alpha_before, hits_before = answers()
    decoy.write("crates.md", decoy_pages("Zorblax")["crates.md"])  # now the decoy names it
    decoy.commit_and_push("rename the crates")
    assert index_sources(docs.data, config, embedder=embedder).published
    docs.holder.refresh()
    every_after, alpha_after, hits_after = answers()

    assert (every_before, every_after) == (True, False)  # the decoy's words matter to some
    assert alpha_before == alpha_after  # ... never to a caller limited to alpha
    assert alpha_after  # alpha never names Zorblax
    assert hits_before == hits_after and all(h.startswith("alpha:") for h in hits_after)
