"""`docdex changes SOURCE --since X`: a source's history from its repository, whichever kind
it is (a bare repository, a checkout, a remote's mirror), for people and as JSON."""

from __future__ import annotations

import msgspec
import pytest

from docdex.cli import main
from docdex.cli.changelog import every_page
from docdex.history import ChangeSet, History, SourceRepository
from docdex.index_format.config import Config, SourceConfig, save_config
from docdex.index_format.layout import DataDir

from gitrepo import git
from historyrepo import Story, history_story


@pytest.fixture(scope="module")
def story(tmp_path_factory) -> Story:
    return history_story(tmp_path_factory.mktemp("cli-changes") / "repo")


def configure(tmp_path, location: str) -> DataDir:
    data = DataDir(tmp_path / "data")
    data.ensure()
    save_config(data, Config(sources=[SourceConfig(name="docs", location=location)]))
    return data


def run(data: DataDir, capsys, *args: str) -> tuple[int, str, str]:
    status = main(["--data", str(data.root), "changes", "docs", *args])
    out, err = capsys.readouterr()
    return status, out, err


def test_people_read_each_page_with_its_lines_sections_and_commits(story, tmp_path, capsys):
    data = configure(tmp_path, str(story.bare))
    status, out, _ = run(data, capsys, "--since", "v1", "--until", "v2")
    assert status == 0
    lines = out.splitlines()
    assert lines[0].startswith("docs: 4 pages changed from v1 (") and "to v2 (" in lines[0]
    assert "M guide.md  +2 -2  in Guide › Install; Guide › Use" in lines
    assert "R old.md -> new.md  +1 -0  in Reference" in lines
    subject = (
        f"    {story.commits['rename'][:12]} 2023-11-15  Rename the reference and add an option"
    )
    assert subject in lines


def test_json_is_the_whole_range_and_errors_are_one_sentence(story, tmp_path, capsys):
    data = configure(tmp_path, str(story.bare))
    status, out, _ = run(data, capsys, "--since", "v1", "--json")
    assert status == 0
    changes = msgspec.json.decode(out, type=ChangeSet)
    assert [p.path for p in changes.pages] == ["api.md", "faq.md", "guide.md", "new.md", "news.md"]
    status, _, err = run(data, capsys, "--since", "v9")
    assert status == 1
    assert err.startswith("docdex: error: 'v9' names no branch, tag or commit") and err[-1] == "\n"
    assert err.count("\n") == 1


def test_a_checkout_and_a_remotes_mirror_are_read(story, tmp_path, capsys):
    checkout = configure(tmp_path / "checkout", str(story.ws.work))
    status, out, _ = run(checkout, capsys, "--since", "v1", "--path-prefix", "guide")
    assert status == 0 and out.splitlines()[0].startswith("docs: 1 page changed")
    remote = configure(tmp_path / "remote", f"file://{story.bare}")
    status, _, err = run(remote, capsys, "--since", "v1")
    assert status == 1 and "mirror has not been fetched yet" in err
    git(tmp_path, "clone", "-q", "--mirror", str(story.bare), str(remote.mirror("docs")))
    status, out, _ = run(remote, capsys, "--since", "v1", "--ref", "feature")
    assert status == 0 and "to feature (" in out.splitlines()[0]


def test_windows_of_a_long_range_are_one_answer(story, tmp_path):
    config = SourceConfig(name="docs", location=str(story.bare))
    source = SourceRepository.of(DataDir(tmp_path / "data"), config)
    whole = History().changes(source, since="v1")
    windowed = every_page(History(), source, "v1", "", "", "", window=2)
    assert windowed.pages == whole.pages and windowed.total == whole.total
    assert windowed.commits == whole.commits


def test_search_changed_since_keeps_the_pages_changed_since(story, tmp_path, capsys, embedder):
    from docdex.index_format.config import load_config
    from docdex.indexer.run.pipeline import index_sources

    data = configure(tmp_path, str(story.bare))
    assert index_sources(data, load_config(data), embedder=embedder).published
    query = ["--data", str(data.root), "search", "installer app option", "--json"]
    assert main(query) == 0
    every = {hit["path"] for hit in msgspec.json.decode(capsys.readouterr().out)["results"]}
    assert main([*query, "--changed-since", "v2"]) == 0
    changed = {hit["path"] for hit in msgspec.json.decode(capsys.readouterr().out)["results"]}
    assert {"new.md", "guide.md"} <= every
    assert changed and changed <= {"guide.md", "news.md"}
