"""An identifier query finds the section that defines the identifier (its heading names it,
or a definition-list entry, a table's first cell or a list item's key opens with it) before
sections that only mention it (docs/retrieval.md, "Fusion"): here a short error page that
names the identifier beside its error ranks first without the definition bonus."""

from __future__ import annotations

import pytest

from docdex.server.engine import Engine, EngineSettings

from fixtures import indexed_engine

OPTIONS = "\n".join(
    f"| `cache.{name}` | int | {meaning} |"
    for name, meaning in [
        ("size", "how many entries the cache keeps before it evicts the oldest"),
        ("ttl", "seconds an entry lives before it expires and is fetched again"),
        ("shards", "how many shards the cache is split into, one lock each"),
        ("warmup", "entries loaded when the server starts, from the last snapshot"),
    ]
)
PAGES = {
    "errors.md": (
        "# Errors\n\n## E42\n\nE42: `cache.ttl` is out of range; `retry.delay` too.\n\n"
        "## E43\n\nE43: `log.level` names no level.\n"
    ),
    "reference/config.md": (
        "# Configuration reference\n\nEvery key of `docdex.toml`, with its type and meaning."
        " Keys are read once at start; a changed key takes effect at the next start.\n\n"
        f"## Cache keys\n\n| key | type | meaning |\n|---|---|---|\n{OPTIONS}\n\n"
        "## Retry keys\n\nThe retry keys bound how often a failed fetch is tried again.\n\n"
        "`retry.delay`\n: seconds between two tries of a failed fetch, doubled each time\n\n"
        "`retry.limit`\n: how many tries before the fetch is given up\n"
    ),
    "reference/logging.md": (
        "# Logging\n\nThe server writes one line per event to its standard error, as text or"
        " as JSON, and never a secret it holds.\n\n## Log keys\n\n"
        "- `log.format`: `text` (the default) or `json`, one object a line\n"
        "- `log.level`: the least severe event written, `info` unless given\n"
        "- `log.file`: a file to append to instead of standard error\n"
    ),
}
DEFINED_IN = {  # query -> where it is defined (heading text of the hit)
    "cache.ttl": "Cache keys",  # a table's first cell
    "retry.delay": "Retry keys",  # a definition-list term
    "log.level": "Log keys",  # a list item's key
}


@pytest.fixture(scope="module")
def engine(tmp_path_factory, embedder):
    with indexed_engine(tmp_path_factory.mktemp("definitions"), PAGES, embedder) as opened:
        yield opened


def _first(engine: Engine, query: str, **settings) -> tuple[str, str]:
    ranked = engine.with_settings(EngineSettings(reranker="none", **settings))
    hit = ranked.search(query, 5, ranked.scope(source="docs")).results[0]
    return hit.path, hit.headings[-1]


@pytest.mark.parametrize("query", sorted(DEFINED_IN))
def test_the_defining_section_outranks_a_mention(engine, query):
    assert _first(engine, query, definition_bonus=0.0)[0] == "errors.md"  # the short mention
    path, heading = _first(engine, query)  # the shipped settings
    assert path.startswith("reference/") and heading == DEFINED_IN[query]
