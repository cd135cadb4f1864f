"""Several refs per source (adr/0017): branches and tags besides the default branch, each an
entry of its own ("docs@release/1.0"), on real repositories, real pushes, the real hook,
worker and model."""

from __future__ import annotations

import msgspec
import pytest

from docdex.cli import main
from docdex.hooks.installer import install_hook
from docdex.index_format.config import Config, SourceConfig, load_config, save_config
from docdex.index_format.layout import DataDir
from docdex.index_format.queue import pending_requests
from docdex.index_format.records import SourceState
from docdex.index_format.ref_names import entries_of, is_doc_source, resolve_ref
from docdex.index_format.store import list_versions, load_current, load_pages
from docdex.indexer.git.history import page_dates
from docdex.indexer.git.repo import open_repo
from docdex.indexer.run.pipeline import index_sources
from docdex.indexer.triggers.worker import Worker

from fixtures import FAQ, search_index
from gitrepo import Workspace, git
from pushes import push, remote_lines
from refrepo import (
    NOTES,
    PORTS,
    QUESTION,
    commit_on,
    install_page,
    note,
    push_ref,
    tag,
    workspace_with_refs,
)
from runs import live_state


@pytest.fixture()
def ws(tmp_path) -> Workspace:
    return workspace_with_refs(tmp_path / "repo")


def config_for(ws: Workspace, refs: list[str]) -> Config:
    return Config(sources=[SourceConfig(name="docs", location=str(ws.bare), refs=refs)])


def index(data: DataDir, config: Config, embedder):
    data.ensure()
    save_config(data, config)
    report = index_sources(data, config, embedder=embedder)
    return report, {s.name: s for s in report.sources}


def answers(data: DataDir, embedder, source: str) -> list[str]:
    """The texts search_docs' ranking returns for QUESTION, filtered to `source`."""
    result = search_index(data, embedder, QUESTION, 3, source)
    assert {h.source for h in result.results} == {source}
    return [h.text for h in result.results]


def assert_dates_as_a_full_walk(ws: Workspace, data: DataDir) -> None:
    """Pages of a ref dated from another ref's dates carry what walking all history gives."""
    manifest = load_current(data)
    with open_repo(str(ws.bare)) as repo:
        for state in manifest.sources.values():
            pages = load_pages(data, state.pages_file)
            walked = page_dates(repo, state.commit, None, {p.path for p in pages}, {}, {})
            for page in pages:
                dates = walked[page.path]
                assert (page.created, page.modified, page.commit) == (
                    dates.created,
                    dates.modified,
                    dates.commit,
                ), (state.name, page.path)


def test_each_ref_is_an_entry_of_its_own(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    report, by_key = index(data, config_for(ws, ["release/*", "v2.*"]), embedder)
    assert report.published
    manifest = load_current(data)
    assert set(manifest.sources) == set(PORTS)
    assert by_key["docs"].ignored_refs == [
        "tag release/2.0: a branch of the same name is indexed",
        "tag v2.a@b: its name is not indexed (letters, digits, '.', '_', '+', '-' and '/' "
        "only, at most 128 characters)",
        "tag v2.tree: it leads to no commit",
    ]
    # every text is embedded once, whatever the number of refs carrying it
    assert sum(s.chunks_embedded for s in report.sources) == len({h for h in _content_hashes(data)})

    v21 = manifest.sources["docs@v2.1"]
    peeled = git(ws.bare, "rev-parse", "v2.1^{commit}")
    assert (v21.ref, v21.ref_kind, v21.base, v21.default_ref) == ("v2.1", "tag", "docs", False)
    assert (v21.commit, v21.branch, v21.pages_file) == (peeled, "", "docs@v2.1-00000001.msgpack")
    release = manifest.sources["docs@release/1.0"]
    assert (release.ref, release.ref_kind, release.branch) == (
        "release/1.0",
        "branch",
        "release/1.0",
    )
    assert release.pages_file == "docs@release~1.0-00000001.msgpack"
    default = manifest.sources["docs"]
    assert (default.ref, default.base, default.default_ref) == ("main", "docs", True)

    _manifest, pages, dense, text = live_state(data)
    assert (
        dense
        == text
        == {f"{p.doc_id}#chunk{n}" for p in pages.values() for n in range(len(p.chunks))}
    )
    for key, port in PORTS.items():
        page = pages[f"{key}:guide/install.md"]
        assert page.source == key
        [best, *_] = answers(data, embedder, key)
        assert f"port {port} by default" in best, key
    assert_dates_as_a_full_walk(ws, data)

    assert entries_of(manifest.sources, "docs") == {
        "main": "docs",
        "release/1.0": "docs@release/1.0",
        "release/2.0": "docs@release/2.0",
        "v2.1": "docs@v2.1",
    }
    assert resolve_ref(manifest.sources, "docs", "") == "docs"
    assert resolve_ref(manifest.sources, "docs", "main") == "docs"
    assert resolve_ref(manifest.sources, "docs", "refs/tags/v2.1") == "docs@v2.1"
    assert resolve_ref(manifest.sources, "docs", "release/9") is None
    assert is_doc_source("docs@release/1.0") and not is_doc_source("docs@rel:x")


def _entry(key: str, ref: str, kind: str) -> SourceState:
    base, _, _ = key.partition("@")
    return SourceState(
        name=key, location="/srv/docs.git", kind="bare", branch="main", config_hash="",
        commit="0" * 40, indexed_at="", pages_file="", files=0, chunks=0, ref=ref,
        ref_kind=kind, base=base, default_ref=key == base,
    )  # fmt: skip


def test_a_full_ref_name_keeps_its_kind():
    sources = {
        "docs": _entry("docs", "main", "branch"),
        "docs@v2": _entry("docs@v2", "v2", "branch"),  # the tag v2 is not indexed beside it
        "docs@refs/tags/v1": _entry("docs@refs/tags/v1", "refs/tags/v1", "branch"),
        "docs@v1": _entry("docs@v1", "v1", "tag"),
    }
    assert resolve_ref(sources, "docs", "refs/heads/v2") == "docs@v2"
    assert resolve_ref(sources, "docs", "refs/tags/v2") is None
    assert resolve_ref(sources, "docs", "refs/heads/refs/tags/v1") == "docs@refs/tags/v1"
    assert resolve_ref(sources, "docs", "refs/tags/v1") == "docs@v1"
    assert resolve_ref(sources, "docs", "refs/heads/v1") is None
    assert resolve_ref(sources, "docs", "refs/heads/main") == "docs"


def _content_hashes(data: DataDir) -> set[str]:
    manifest = load_current(data)
    return {
        ref.content_hash
        for state in manifest.sources.values()
        for page in load_pages(data, state.pages_file)
        for ref in page.chunks
    }


def test_refs_follow_the_repository(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    config = config_for(ws, ["release/*", "v2.*"])
    index(data, config, embedder)
    main_sha = git(ws.bare, "rev-parse", "main")

    # a new branch is picked up; it embeds only the text it does not share
    sha = commit_on(ws, main_sha, {"guide/install.md": install_page("3.0", 7030)})
    push_ref(ws, sha, "refs/heads/release/3.0")
    git(ws.bare, "update-ref", "-d", "refs/heads/release/1.0")  # and a deleted one leaves
    report, by_key = index(data, config, embedder)
    new = by_key["docs@release/3.0"]
    assert (new.status, new.added, new.chunks_embedded) == ("indexed", 6, 1)
    assert new.chunks_reused > 0
    assert (by_key["docs@release/1.0"].status, by_key["docs"].status) == ("removed", "unchanged")
    _manifest, pages, dense, text = live_state(data)
    assert not [d for d in pages if d.startswith("docs@release/1.0:")]
    assert not [c for c in dense | text if c.startswith("docs@release/1.0:")]
    assert "port 7030 by default" in answers(data, embedder, "docs@release/3.0")[0]

    # a moved tag is read again like a push: one file
    v21 = git(ws.bare, "rev-parse", "v2.1^{commit}")
    moved = commit_on(ws, v21, {"guide/install.md": install_page("2.1", 7121)})
    tag(ws, "v2.1", moved)
    report, by_key = index(data, config, embedder)
    assert (by_key["docs@v2.1"].modified, by_key["docs@v2.1"].added) == (1, 0)
    assert load_current(data).sources["docs@v2.1"].commit == moved
    assert "port 7121 by default" in answers(data, embedder, "docs@v2.1")[0]

    # a tag that changes 3 files embeds only their chunks
    release2 = git(ws.bare, "rev-parse", "release/2.0")
    changed = commit_on(ws, release2, {path: note(path[6], "2.2") for path in NOTES})
    tag(ws, "v2.2", changed)
    report, by_key = index(data, config, embedder)
    v22 = by_key["docs@v2.2"]
    state = load_current(data).sources["docs@v2.2"]
    assert (v22.status, v22.chunks_embedded, v22.chunks_reused) == ("indexed", 3, state.chunks - 3)
    assert [s.status for s in report.sources if s.name != "docs@v2.2"] == ["unchanged"] * 4
    assert_dates_as_a_full_walk(ws, data)

    # patterns that select fewer refs: theirs leave, the default ref is not read again
    report, by_key = index(data, config_for(ws, ["release/*"]), embedder)
    assert (by_key["docs@v2.1"].status, by_key["docs@v2.2"].status) == ("removed", "removed")
    assert by_key["docs"].status == "unchanged"
    assert set(load_current(data).sources) == {"docs", "docs@release/2.0", "docs@release/3.0"}


def test_refs_unset_behaves_as_before(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    report, _ = index(data, config_for(ws, []), embedder)
    manifest = load_current(data)
    assert [s.name for s in report.sources] == ["docs"] and set(manifest.sources) == {"docs"}
    state = manifest.sources["docs"]
    assert (state.ref, state.base, state.default_ref, state.pages_file) == (
        "main",
        "docs",
        True,
        "docs-00000001.msgpack",
    )
    assert {p.doc_id for p in load_pages(data, state.pages_file)} == {
        "docs:guide/install.md",
        "docs:faq.md",
        "docs:reference/api.md",
        *(f"docs:{path}" for path in NOTES),
    }
    # a manifest written before refs existed decodes, and nothing is read again
    old = msgspec.to_builtins(manifest)
    for entry in old["sources"].values():
        for name in ("ref", "ref_kind", "base", "default_ref"):
            del entry[name]
    data.manifest(1).write_bytes(msgspec.json.encode(old))
    assert load_current(data).sources["docs"].base == ""
    report, _ = index(data, config_for(ws, []), embedder)
    assert not report.published and list_versions(data) == [1]
    # a bad pattern in docdex.toml fails the source, which keeps serving what it had
    report, by_key = index(data, config_for(ws, ["a b"]), embedder)
    assert by_key["docs"].status == "failed" and "invalid ref pattern" in by_key["docs"].error
    assert load_current(data).sources["docs"].commit == state.commit


def test_a_remote_source_fetches_the_selected_refs(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    config = Config(
        sources=[SourceConfig(name="up", location=ws.bare.as_uri(), refs=["refs/tags/v*"])]
    )
    report, by_key = index(data, config, embedder)
    assert set(by_key) == {"up", "up@v2.1"} and by_key["up@v2.1"].status == "indexed"
    mirror = data.state / "mirrors" / "up.git"
    tags = ["refs/tags/v2.1", "refs/tags/v2.a@b", "refs/tags/v2.tree"]
    assert mirrored_tags(mirror) == tags  # the tag release/2.0 is not selected: not fetched
    git(ws.bare, "tag", "-d", "v2.1")
    report, by_key = index(data, config, embedder)
    assert by_key["up@v2.1"].status == "removed"
    assert mirrored_tags(mirror) == tags[1:]


def mirrored_tags(mirror) -> list[str]:
    return git(mirror, "for-each-ref", "--format=%(refname)", "refs/tags").split()


def test_the_hook_files_requests_for_selected_branches_and_tags(tmp_path, ws, embedder):
    data = DataDir(tmp_path / "data")
    data.ensure()
    save_config(data, config_for(ws, ["release/*", "refs/tags/v2.*"]))
    install_hook(data, ws.bare, "docs", python="/nonexistent/python")  # no worker: see the queue
    sha = commit_on(ws, git(ws.bare, "rev-parse", "release/2.0"), {"faq.md": FAQ + "\nMore.\n"})
    git(ws.work, "tag", "-a", "-m", "v2.5", "v2.5", sha)
    result = push(ws.work, f"{sha}:refs/heads/release/2.5", "refs/tags/v2.5")
    assert result.returncode == 0, result.stderr
    tag_object = git(ws.work, "rev-parse", "v2.5")
    [line] = remote_lines(result)
    filed = f"docs@{sha[:12]} (branch release/2.5) docs@{tag_object[:12]} (tag v2.5)"
    assert line.startswith(f"remote: docdex: queued {filed}, but cannot start the indexer")
    assert [(r.source, r.ref, r.commit) for r in pending_requests(data)] == [
        ("docs", "refs/heads/release/2.5", sha),
        ("docs", "refs/tags/v2.5", tag_object),
    ]
    # not selected: a branch outside the patterns, a branch only refs/tags/... would select, a
    # tag outside them
    others = [f"{sha}:refs/heads/{b}" for b in ("feature", "v2.9")] + [f"{sha}:refs/tags/v3.0"]
    [line] = remote_lines(push(ws.work, *others))
    assert line.startswith("remote: docdex: branch feature, branch v2.9, tag v3.0 are not indexed")
    deleted = push(ws.work, ":refs/heads/release/1.0")
    [line] = remote_lines(deleted)
    assert line.startswith("remote: docdex: queued docs(branch release/1.0 deleted), but")
    assert len(pending_requests(data)) == 3

    assert Worker(data, once=True).run() == 0  # the real worker, one cycle subprocess
    assert pending_requests(data) == []
    manifest = load_current(data)
    assert {"docs@release/2.5", "docs@v2.5"} <= set(manifest.sources)
    assert "docs@release/1.0" not in manifest.sources
    assert manifest.sources["docs@v2.5"].commit == sha


def test_source_add_takes_refs(tmp_path, capsys):
    ws = Workspace(tmp_path / "repo")
    data = str(tmp_path / "data")
    args = ["--data", data, "source", "add", "docs", str(ws.bare)]
    assert main([*args, "--ref", "release/*", "--ref", "refs/tags/v2.*"]) == 0
    assert load_config(DataDir(data)).sources[0].refs == ["release/*", "refs/tags/v2.*"]
    capsys.readouterr()
    assert main(["--data", data, "source", "list"]) == 0
    assert "HEAD branch + refs release/* refs/tags/v2.*" in capsys.readouterr().out
    assert main(["--data", data, "source", "add", "other", str(ws.bare), "--ref", "a b"]) == 1
    assert "invalid ref pattern 'a b'" in capsys.readouterr().err
