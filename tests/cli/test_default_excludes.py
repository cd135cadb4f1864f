"""What a new source skips unless asked: tooling folders, dependencies, test data and agents'
instruction files, said when the source is added and overridable."""

from __future__ import annotations

from docdex.cli import main
from docdex.index_format.config import DEFAULT_EXCLUDE, load_config
from docdex.index_format.layout import DataDir
from docdex.index_format.store import load_current, load_pages

from fixtures import FAQ, INSTALL, pushed_workspace

TOOLING = {
    ".github/PULL_REQUEST_TEMPLATE.md": "# Pull request\n\nDescribe the change.\n",
    ".claude/commands/review.md": "# Review\n\nReview the diff.\n",
    "CLAUDE.md": "# Notes for Claude\n\nRun the tests.\n",
    "docs/AGENTS.md": "# Agents\n\nUse the justfile.\n",
    "site/node_modules/pkg/README.md": "# pkg\n\nA dependency.\n",
    "tests/fixtures/broken.md": "# Broken\n\nA fixture.\n",
}


def _indexed_paths(data: DataDir) -> set[str]:
    manifest = load_current(data)
    assert manifest is not None
    return {
        page.path
        for state in manifest.sources.values()
        for page in load_pages(data, state.pages_file)
    }


def test_a_new_source_skips_tooling_and_says_so(tmp_path, capsys):
    ws = pushed_workspace(
        tmp_path / "repo", {"guide/install.md": INSTALL, "faq.md": FAQ, **TOOLING}
    )
    data = DataDir(tmp_path / "data")
    assert main(["--data", str(data.root), "source", "add", "docs", str(ws.bare)]) == 0
    said = capsys.readouterr().out
    assert "skipping **/.*/**, **/node_modules/**" in said
    assert load_config(data).source("docs").exclude == DEFAULT_EXCLUDE
    assert main(["--data", str(data.root), "index"]) == 0
    assert _indexed_paths(data) == {"guide/install.md", "faq.md"}


def test_the_defaults_can_be_dropped_at_add(tmp_path, capsys):
    ws = pushed_workspace(tmp_path / "repo", {"faq.md": FAQ, **TOOLING})
    data = DataDir(tmp_path / "data")
    root = str(data.root)
    args = ["source", "add", "docs", str(ws.bare), "--no-default-excludes", "--exclude", "tests/**"]
    assert main(["--data", root, *args]) == 0
    assert "skipping tests/**" in capsys.readouterr().out
    assert main(["--data", root, "index"]) == 0
    assert _indexed_paths(data) == {"faq.md", *TOOLING} - {"tests/fixtures/broken.md"}


def test_source_set_adds_and_removes_excludes_keeping_the_defaults(tmp_path, capsys):
    ws = pushed_workspace(tmp_path / "repo", {"faq.md": FAQ, "drafts/plan.md": FAQ, **TOOLING})
    data = DataDir(tmp_path / "data")
    root = ["--data", str(data.root)]
    assert main([*root, "source", "add", "docs", str(ws.bare)]) == 0
    assert main([*root, "source", "set", "docs", "--exclude", "drafts/**"]) == 0
    said = capsys.readouterr().out
    assert load_config(data).source("docs").exclude == [*DEFAULT_EXCLUDE, "drafts/**"]
    assert f"exclude: {', '.join([*DEFAULT_EXCLUDE, 'drafts/**'])}" in said
    assert main([*root, "index"]) == 0
    assert _indexed_paths(data) == {"faq.md"}  # the defaults still hold

    assert main([*root, "source", "set", "docs", "--no-exclude", "**/CLAUDE.md"]) == 0
    assert "**/CLAUDE.md" not in capsys.readouterr().out.split("exclude: ")[1]
    assert main([*root, "index"]) == 0
    assert _indexed_paths(data) == {"faq.md", "CLAUDE.md"}

    assert main([*root, "source", "set", "docs", "--no-exclude", "**/README.md"]) == 1
    err = capsys.readouterr().err
    assert "'**/README.md' is not among the excludes of source docs" in err
    assert "drafts/**" in err  # ... which it names
