"""Damaged files: for each kind of file of a published version, truncated or with a byte
flipped, `docdex verify` names it, the server refuses the version and keeps serving the
last good one, /health says why, and `docdex index --full` publishes a good version.

One real index per module (a push after a first run, so that version 2 has files of its
own), copied for each case."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import Future
from pathlib import Path

import msgspec
import numpy as np
import pytest

from docdex import cli
from docdex.index_format import verify
from docdex.index_format.config import Config, load_config
from docdex.index_format.layout import DataDir
from docdex.index_format.records import Manifest, Reading
from docdex.index_format.store import (
    VECTORS_FILE,
    current_version,
    load_manifest,
    load_segment,
    point_current,
    write_atomic,
    write_manifest,
)
from docdex.index_format.verify import COLLECTED_NOTE, OLD_FORMAT_NOTE
from docdex.indexer.run.context import IndexingError
from docdex.indexer.run.pipeline import index_sources
from docdex.server import versions
from docdex.server.boot import Boot, open_docs
from docdex.serverproc import ServeProcess

from fixtures import build_workspace, http, index_workspace, wait_for

KINDS = ("vectors", "chunks", "hnsw", "tantivy", "pages", "manifest", "CURRENT")
DAMAGES = ("truncate", "flip")
TOKEN = "verify-test-token"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory, embedder) -> Path:
    """Version 1 (three pages) and version 2 (one page added), version 2 current."""
    root = tmp_path_factory.mktemp("verify")
    ws = build_workspace(root)
    data = DataDir(root / "data")
    index_workspace(data, ws, embedder)
    ws.write("guide/upgrade.md", "# Upgrade\n\nStop the server, install, start it again.\n")
    ws.commit_and_push("upgrade guide")
    assert index_workspace(data, ws, embedder) == 2
    return data.root


@pytest.fixture
def data(pristine, tmp_path) -> DataDir:
    copy = tmp_path / "data"
    shutil.copytree(pristine, copy)
    return DataDir(copy)


def own_file(data: DataDir, kind: str) -> str:
    """A file of version 2 that version 1 does not share, of `kind`, relative to the root."""
    first, second = load_manifest(data, 1), load_manifest(data, 2)
    segment = next(s.id for s in second.segments if s.id not in {t.id for t in first.segments})
    files = {
        "vectors": f"segments/{segment}/vectors.npy",
        "chunks": f"segments/{segment}/chunks.msgpack",
        "hnsw": f"segments/{segment}/hnsw.bin",
        "pages": f"pages/{second.sources['docs'].pages_file}",
        "manifest": f"versions/{data.manifest(2).name}",
        "CURRENT": "CURRENT",
    }
    if kind == "tantivy":
        old = {f.name for f in first.text_files}
        new = [f for f in second.text_files if f.name not in old]
        return f"text/{second.text_index}/{max(new, key=lambda f: f.size).name}"
    return files[kind]


def damage(path: Path, how: str) -> None:
    """Truncate to half, or invert the byte in the middle, in place (as a disk would)."""
    size = path.stat().st_size
    if how == "truncate":
        os.truncate(path, size // 2)
        return
    with open(path, "r+b") as f:
        f.seek(size // 2)
        byte = f.read(1)[0]
        f.seek(size // 2)
        f.write(bytes([byte ^ 0xFF]))


def verify_cli(data: DataDir, capsys, *args: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = cli.main(["--data", str(data.root), "verify", "--json", *args])
    return code, json.loads(capsys.readouterr().out)


def problem_files(report: dict) -> set[str]:
    problems = report["problems"] + [p for v in report["versions"] for p in v["problems"]]
    return {p["file"] for p in problems}


def served_docs(data: DataDir, embedder):
    """Docs as `docdex serve` opens them (its holder, /health), on the current version."""
    model: Future = Future()
    model.set_result(embedder)
    return open_docs(data, Boot(), model)


def live_vectors(data: DataDir, manifest: Manifest) -> dict[str, np.ndarray]:
    """chunk id -> its window vectors, over the live chunks of `manifest`."""
    out = {}
    for ref in manifest.segments:
        segment = load_segment(data, ref.id, manifest.embedder.dim)
        dead = set(ref.tombstones)
        for index, chunk in enumerate(segment.chunks):
            if index not in dead:
                out[chunk.chunk_id] = np.array(segment.chunk_vectors(index))  # a copy
    return out


# --- each kind of file, each damage -----------------------------------------------------------


@pytest.mark.parametrize("how", DAMAGES)
@pytest.mark.parametrize("kind", KINDS)
def test_damage_is_found_refused_reported_and_repaired(data, kind, how, embedder, capsys):
    target = own_file(data, kind)
    good = live_vectors(data, load_manifest(data, 2))
    point_current(data, 1)
    docs = served_docs(data, embedder)  # serving version 1, the last good one
    try:
        assert docs.holder.serving == 1
        point_current(data, 2)
        damage(data.root / target, how)

        code, report = verify_cli(data, capsys)
        assert code == 1 and not report["ok"]
        assert target in problem_files(report), report

        docs.holder.refresh()
        assert docs.holder.serving == 1
        status, body = docs.health()
        assert status == 200 and body["status"] == "degraded" and body["index_version"] == 1
        why = body["refused_version"]["error"]
        assert Path(target).name in why or "no manifest" in why, why
        assert docs.search("install prefix", 3).results  # still answering from version 1

        report = index_sources(data, load_config(data), full=True, embedder=embedder)
        assert report.published and report.version == 3
        if kind in ("tantivy", "pages", "CURRENT"):  # every segment intact: nothing embedded
            assert report.windows_embedded == 0
        code, report = verify_cli(data, capsys)
        assert code == 0 and report["ok"] and report["current"] == 3
        recovered = live_vectors(data, load_manifest(data, 3))
        assert recovered.keys() == good.keys()
        for chunk_id, vectors in good.items():  # nothing damaged was copied
            np.testing.assert_array_equal(recovered[chunk_id], vectors)

        docs.holder.refresh()
        assert docs.holder.serving == 3
        assert docs.health()[1]["status"] == "ok"
    finally:
        docs.holder.stop()


# --- starting on a damaged version --------------------------------------------------------------


def test_a_cold_start_on_a_damaged_version_serves_the_newest_intact_one(data, embedder):
    damage(data.root / own_file(data, "chunks"), "flip")
    docs = served_docs(data, embedder)
    try:
        assert docs.holder.serving == 1
        status, body = docs.health()
        assert status == 200 and body["status"] == "degraded"
        assert body["refused_version"]["version"] == 2
        assert "chunks.msgpack" in body["refused_version"]["error"]
    finally:
        docs.holder.stop()


def test_a_cold_start_on_an_unreadable_current_serves_the_newest_intact_version(data, embedder):
    data.current.write_bytes(b"0000\xcf002\n")
    docs = served_docs(data, embedder)
    try:
        assert docs.holder.serving == 2
        body = docs.health()[1]
        assert body["status"] == "degraded" and body["refused_version"]["version"] is None
        assert "CURRENT" in body["refused_version"]["error"]
    finally:
        docs.holder.stop()


def test_big_files_checked_after_a_cold_start_swap_away_when_damaged(data, embedder, monkeypatch):
    monkeypatch.setattr(versions, "START_HASH_BYTES", 0)  # every file hashed after the start
    damage(data.root / own_file(data, "vectors"), "flip")  # same size: only a checksum tells
    docs = served_docs(data, embedder)
    try:
        assert docs.holder.serving == 2  # sizes match: served at once
        docs.holder.check_unhashed()
        assert docs.holder.serving == 1
        assert VECTORS_FILE in docs.health()[1]["refused_version"]["error"]
    finally:
        docs.holder.stop()


def test_a_repair_whose_source_fails_publishes_nothing(data, embedder):
    """From a damaged version a full run keeps no old chunk live: a source it cannot read
    would lose its pages, so the run publishes nothing (and says why)."""
    damage(data.root / own_file(data, "vectors"), "flip")
    config = load_config(data)
    gone = msgspec.structs.replace(config.sources[0], location=str(data.root / "no-such.git"))
    with pytest.raises(IndexingError, match="damaged version"):
        index_sources(data, Config(settings=config.settings, sources=[gone]), full=True)
    assert current_version(data) == 2 and data.manifest(2).exists()


# --- older data directories ------------------------------------------------------------------


def without_checksums(data: DataDir, version: int) -> None:
    """Rewrite a manifest as format 1.1 wrote it: no sums, no checksum of its own."""
    manifest = load_manifest(data, version)
    old = msgspec.structs.replace(
        manifest,
        format_minor=1,
        segments=[msgspec.structs.replace(s, files=[]) for s in manifest.segments],
        sources={
            k: msgspec.structs.replace(s, pages_sum=None) for k, s in manifest.sources.items()
        },
        text_files=[],
    )
    raw = msgspec.to_builtins(old)
    for key in ("text_files", "checksum"):
        raw.pop(key)
    write_atomic(data.manifest(version), json.dumps(raw).encode())


def test_an_older_format_verifies_by_structure_with_a_note(data, capsys, embedder):
    for version in (1, 2):
        without_checksums(data, version)
    code, report = verify_cli(data, capsys)
    assert code == 0 and all(OLD_FORMAT_NOTE in v["notes"] for v in report["versions"])
    docs = served_docs(data, embedder)
    try:
        assert docs.holder.serving == 2  # loads as before
    finally:
        docs.holder.stop()
    damage(data.root / own_file(data, "chunks"), "truncate")
    code, report = verify_cli(data, capsys, "--version", "2")
    assert code == 1 and own_file(data, "chunks") in problem_files(report)
    assert report["versions"][0]["problems"][0]["kind"] == "decode"


def test_verify_refuses_a_version_that_is_not_on_disk(data, capsys):
    assert cli.main(["--data", str(data.root), "verify", "--version", "9"]) == 2
    assert "not on disk" in capsys.readouterr().err


# --- the real commands and a real server --------------------------------------------------------


def docdex(data: DataDir, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "docdex.cli", "--data", str(data.root), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=240)


def test_a_real_server_keeps_serving_and_the_commands_repair(data, tmp_path):
    point_current(data, 1)
    with ServeProcess(data.root, tmp_path / "serve.log", token=TOKEN) as server:
        server.wait_serving(version=1)
        target = own_file(data, "hnsw")
        damage(data.root / target, "flip")
        point_current(data, 2)
        health = wait_for(
            lambda: (h := server.health()) and h["refused_version"] and h, 60, "a refusal"
        )
        assert health["status"] == "degraded" and health["index_version"] == 1
        assert "hnsw.bin" in health["refused_version"]["error"]
        assert http(f"{server.url}/health").json() == {"status": "degraded"}  # no token
        assert server.api_search("install prefix", 3)["index_version"] == 1

        checked = docdex(data, "verify")
        assert checked.returncode == 1 and target in checked.stdout
        assert "version 2: 1 problem" in checked.stdout

        repaired = docdex(data, "index", "--full")
        assert repaired.returncode == 0, repaired.stderr
        assert docdex(data, "verify").returncode == 0
        health = wait_for(
            lambda: (h := server.health()) and h["index_version"] == 3 and h, 60, "version 3"
        )
        assert health["status"] == "ok" and health["refused_version"] is None


def test_a_version_collected_while_verify_checks_it_is_not_damage(data, monkeypatch):
    """gc deletes version 1's manifest, then the files no kept version names, between
    verify listing the versions (or reading the manifest) and checking its files."""
    listed = verify.list_versions(data)
    old = load_manifest(data, 1)
    assert listed == [1, 2]
    monkeypatch.setattr(verify, "list_versions", lambda _data: listed)
    monkeypatch.setattr(
        verify, "load_manifest", lambda d, v: old if v == 1 else load_manifest(d, v)
    )
    data.manifest(1).unlink()  # what gc does first
    kept = {s.id for s in load_manifest(data, 2).segments}
    for ref in old.segments:
        if ref.id not in kept:
            shutil.rmtree(data.segment(ref.id))  # then the files only version 1 named
    report = verify.verify_data(data.root)
    assert report.ok, report
    assert report.versions[0].notes == [COLLECTED_NOTE]
    data.segment(next(iter(kept))).joinpath(VECTORS_FILE).unlink()  # damage to a kept one
    assert not verify.verify_data(data.root).ok


def test_an_entry_being_read_is_noted_and_one_that_contradicts_itself_is_a_problem(data):
    manifest = load_manifest(data, 2)
    state = manifest.sources["docs"]
    reading = Reading(state.commit, state.files + 1, state.files + 2)
    partial = msgspec.structs.replace(state, commit="", reading=reading)
    write_manifest(data, msgspec.structs.replace(manifest, sources={"docs": partial}))
    report = verify.verify_data(data.root, only=2)
    assert report.ok
    assert (
        f"entry docs was published while being read: {reading.done} of"
        in report.versions[0].notes[-1]
    )

    claims_whole = msgspec.structs.replace(partial, commit=state.commit)
    write_manifest(data, msgspec.structs.replace(manifest, sources={"docs": claims_whole}))
    [problem] = verify.verify_data(data.root, only=2).versions[0].problems
    assert problem.kind == "value" and "records commit" in problem.detail
