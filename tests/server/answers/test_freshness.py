"""Is the index current? list_sources and /health compare each indexed ref with its tip in
the repository (server/answers/freshness.py): commits behind, since when, queued, stale."""

from __future__ import annotations

import time
from datetime import datetime

import msgspec
import pytest

from docdex.index_format.config import load_config, save_config
from docdex.index_format.queue import file_request, pending_requests, remove_requests

from fixtures import FAQ, INSTALL, open_workspace_docs, pushed_workspace


@pytest.fixture
def indexed(tmp_path, embedder):
    ws = pushed_workspace(tmp_path, {"faq.md": FAQ})
    docs = open_workspace_docs(tmp_path, ws, embedder)
    yield docs, ws
    docs.holder.stop()


def set_stale_after(docs, seconds: int) -> None:
    config = load_config(docs.data)
    settings = msgspec.structs.replace(config.settings, stale_after_s=seconds)
    save_config(docs.data, msgspec.structs.replace(config, settings=settings))


def source(docs):
    return docs.list_sources().sources[0]


def test_a_current_index_is_not_behind(indexed):
    docs, _ = indexed
    entry = source(docs)
    assert entry.tip == entry.commit and entry.behind == 0
    assert (entry.behind_since, entry.queued, entry.stale) == ("", False, False)
    status, health = docs.health()
    assert status == 200 and health["status"] == "ok"
    assert health["sources"]["docs"]["behind"] == 0


def test_pushes_the_worker_did_not_take_make_it_behind_then_stale(indexed):
    docs, ws = indexed
    indexed_commit = source(docs).commit
    ws.write("guide/install.md", INSTALL)
    ws.commit()
    ws.write("faq.md", FAQ + "\n## More\n\nAnother answer.\n")
    tip = ws.commit_and_push("two commits nobody indexed")

    entry = source(docs)
    assert entry.commit == indexed_commit and entry.tip == tip and entry.behind == 2
    assert entry.behind_since and not entry.queued and not entry.stale  # within 900 s
    assert docs.health()[1]["status"] == "ok"

    request = file_request(docs.data, "docs", origin="hook")  # what the hook files
    entry = source(docs)
    assert entry.queued and entry.behind_since <= request.requested_at

    set_stale_after(docs, 0)
    time.sleep(1.1)  # times are to the second
    status, health = docs.health()
    assert status == 200 and health["status"] == "stale"
    assert health["sources"]["docs"]["stale"] and health["sources"]["docs"]["behind"] == 2
    datetime.fromisoformat(health["sources"]["docs"]["behind_since"])  # a real time
    remove_requests(docs.data, pending_requests(docs.data))


def test_an_unreadable_repository_is_unknown_not_an_error(indexed, tmp_path):
    docs, _ = indexed
    (tmp_path / "docs.git").rename(tmp_path / "moved.git")
    entry = source(docs)
    assert (entry.tip, entry.behind, entry.stale) == ("", None, False)
    assert docs.health()[0] == 200
