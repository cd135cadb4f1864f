"""The shipped query sets of bench/ranking pass their validator (bench/ranking/check.py)."""

from __future__ import annotations

import json

import pytest

from bench.ranking import check


def shipped() -> list[str]:
    return [name for name in check.SETS if (check.HERE / name).exists()]


def test_shipped_sets_are_well_formed():
    names = shipped()
    assert names, "no set file in bench/ranking/sets"
    problems = check.run(names, with_corpus=False)
    assert problems.lines == []


def test_validator_reports_a_broken_record(tmp_path, monkeypatch):
    rows = [
        {
            "id": "a",
            "query": "q",
            "class": "handwritten",
            "relevant": [{"path": "x.md"}],
            "split": "dev",
        },
        {
            "id": "a",
            "query": "q",
            "class": "unanswerable",
            "relevant": [],
            "kind": "near-miss",
            "split": "dev",
        },
        {
            "id": "c",
            "query": "q",
            "class": "unanswerable",
            "relevant": [],
            "kind": "off-topic",
            "split": "dev",
        },
    ]
    (tmp_path / "apm.unanswerable.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setattr(check, "HERE", tmp_path)
    problems = check.run(["apm.unanswerable.jsonl"], with_corpus=False)
    text = "\n".join(problems.lines)
    assert "names the answering heading" in text  # line 1: no heading
    assert "duplicate id a" in text  # line 2
    assert "grep terms" in text  # line 2: near miss without checked
    assert "every-third rule" in text  # line 3 must be heldout
    assert check.main(["--format", "apm.unanswerable.jsonl"]) == 1


def test_headings_as_a_reader_sees_them():
    page = "\n".join(
        [
            "# Title {#anchor}",
            "```",
            "# not a heading",
            "```",
            "## `#[rustc_on_unimplemented]`",
            "### Bootstrap Sessions *(Pro plan)*",
            "Setext [link](x.md) __strong__",
            "---",
            "<details><summary>Is it **free**?</summary>",
            "## optimizeDeps.include <NonInheritBadge />",
            "## Settings {: #settings .wide }",
            "## Section 1 {class=foo}",
            "## Install {/* keep the old anchor */}",
            "#### on_&lt;event_name&gt;()",
            "### [`data:`](<https://example.org/a(b)c>)",
        ]
    )
    assert check.headings_of(page) == {
        "title",
        "#[rustc_on_unimplemented]",
        "bootstrap sessions (pro plan)",
        "setext link strong",
        "is it free?",
        "optimizedeps.include",
        "settings",
        "section 1",
        "install",
        "on_<event_name>()",
        "data:",
    }


@pytest.mark.skipif(not check.corpora_present(), reason="corpora (../shared/corpora) not present")
def test_judged_paths_and_headings_exist_in_the_corpora():
    problems = check.run(shipped(), with_corpus=True)
    assert problems.lines == []


@pytest.mark.skipif(not check.corpora_present(), reason="corpora (../shared/corpora) not present")
def test_corpus_checks_catch_wrong_judgments(tmp_path, monkeypatch):
    rows = [
        {
            "id": "a",
            "query": "q",
            "class": "handwritten",
            "split": "dev",
            "relevant": [{"path": "reference/settings.md", "heading": "Hardware Whitelist"}],
        },
        {
            "id": "b",
            "query": "q",
            "class": "handwritten",
            "split": "dev",
            "relevant": [{"path": "reference/settings.md", "heading": "No Such Section"}],
        },
        {
            "id": "c",
            "query": "q",
            "class": "unanswerable",
            "relevant": [],
            "kind": "near-miss",
            "checked": ["Intune", "surely-not-in-apm-docs"],
            "split": "heldout",
        },
        {
            "id": "d",
            "query": "q",
            "class": "handwritten",
            "split": "dev",
            "relevant": [{"path": "missing.md", "heading": "X"}],
        },
    ]
    (tmp_path / "apm.handwritten.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setattr(check, "HERE", tmp_path)
    problems = check.run(["apm.handwritten.jsonl"], with_corpus=True).lines
    assert problems == [
        "apm.handwritten.jsonl:2: 'No Such Section' is not a heading of reference/settings.md",
        "apm.handwritten.jsonl:3: checked term 'Intune' occurs in the corpus",
        "apm.handwritten.jsonl:4: missing.md is not in the corpus at its head",
    ]
