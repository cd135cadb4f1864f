"""/health's status says in a sentence why it is not "ok": a cycle of the worker that failed
after its last good one makes it "failing" until a cycle completes again."""

from __future__ import annotations

from docdex.index_format import metrics

from fixtures import FAQ, open_indexed_docs


def test_a_failed_cycle_is_failing_until_one_completes(tmp_path, embedder):
    docs = open_indexed_docs(tmp_path, {"faq.md": FAQ}, embedder)
    try:
        assert docs.health()[1]["status"] == "ok" and docs.health()[1]["status_detail"] == ""
        done = metrics.IngestionMetrics("2026-12-01T10:00:00Z", 1.0, 100.0, 3, version=1)
        metrics.write_last_ingestion(docs.data, done)
        killed = "the indexing cycle ran longer than cycle_timeout_s (3600 s) and was killed"
        metrics.write_last_failure(
            docs.data, metrics.IngestionFailure("2026-12-01T11:00:00Z", killed)
        )
        status, health = docs.health()
        assert status == 200 and health["status"] == "failing" and health["failed_sources"] == {}
        assert health["status_detail"] == f"the last indexing cycle failed: {killed}"

        again = metrics.IngestionMetrics("2026-12-01T12:00:00Z", 1.0, 100.0, 0, version=1)
        metrics.write_last_ingestion(docs.data, again)
        assert docs.health()[1]["status"] == "ok"
    finally:
        docs.holder.stop()
