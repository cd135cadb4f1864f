"""The evaluation scorer: its arithmetic on synthetic ranked lists, then a hand-made query
file against a small real index, then the `docdex eval` entry point."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
import pytest

from docdex.evaluation.runs import evaluate, run_eval_command, write_dump
from docdex.evaluation.scoring import (
    Query,
    aggregate,
    first_rank,
    load_queries,
    ndcg_at_10,
    norm_heading,
    score_query,
)
from docdex.evaluation.tables import format_table
from docdex.index_format.config import Config, Settings, SourceConfig, load_config, save_config
from docdex.index_format.layout import DataDir
from docdex.index_format.model_tables import OnnxEmbedder
from docdex.indexer.run.pipeline import index_sources
from docdex.server.engine import DEFAULT_SETTINGS, Engine, EngineSettings, Fusion

from bench.ranking import sweep
from exports import export_dir
from gitrepo import Workspace


@dataclass
class H:
    path: str
    headings: list[str] = field(default_factory=list)
    text: str = ""


def q(**kw) -> Query:
    return msgspec.convert({"id": "q", "query": "x", **kw}, Query)


# --- one ranked list -------------------------------------------------------------------------


def test_literal_counts_text_containing_the_literal_case_insensitively():
    query = q(**{"class": "literal", "literal": "WOW6432Node"}, relevant=[{"path": "a.md"}])
    hits = [H("a.md", text="nothing"), H("b.md", text="x"), H("c.md", text="HKLM\\wow6432node")]
    assert first_rank(query, hits, "literal") == 3  # the path does not matter, the text does


def test_known_item_needs_path_and_heading():
    query = q(**{"class": "known-item"}, relevant=[{"path": "a.md", "heading": "Set  Up"}])
    hits = [
        H("a.md", ["A", "Other"]),
        H("b.md", ["B", "Set Up"]),  # right heading, wrong page
        H("a.md", ["A", "set up"]),  # case-folded, whitespace collapsed
    ]
    assert first_rank(query, hits, "section") == 3
    assert norm_heading("  Set \n Up ") == "set up"


def test_page_level_uses_relevant_and_alt_paths_and_reports_sections():
    query = q(
        **{"class": "handwritten"},
        relevant=[{"path": "x.md", "heading": "Deep"}],
        alt=[{"path": "y.md"}],
    )
    hits = [H("z.md"), H("y.md", ["Y"]), H("x.md", ["X", "Deep"])]
    outcome = score_query(query, hits, low_confidence=False)
    assert outcome.rank == 2
    assert outcome.section_rank == 3
    assert outcome.ndcg is None  # not graded


def test_only_the_first_ten_hits_count():
    query = q(**{"class": "handwritten"}, relevant=[{"path": "x.md"}])
    hits = [H(f"{i}.md") for i in range(10)] + [H("x.md")]
    assert first_rank(query, hits, "page") is None


def test_ndcg_over_distinct_paths_with_linear_gain():
    query = q(
        **{"class": "labeled"},
        relevant=[
            {"path": "p1", "grade": 3},
            {"path": "p2", "grade": 1},
            {"path": "p3", "grade": 0},
        ],
    )
    hits = [H("p2"), H("p2"), H("p1"), H("p9")]  # distinct paths: p2, p1, p9
    dcg = 1 / math.log2(2) + 3 / math.log2(3)
    idcg = 3 / math.log2(2) + 1 / math.log2(3)
    assert ndcg_at_10(query, hits) == pytest.approx(dcg / idcg)
    assert ndcg_at_10(query, [H("p1"), H("p2")]) == pytest.approx(1.0)
    assert ndcg_at_10(query, []) == 0.0


def test_aggregate_recall_mrr_and_confidence_rates():
    literal = {"class": "literal", "literal": "abc", "relevant": [{"path": "a"}]}
    queries = [
        q(**literal),
        q(**literal),
        q(**{"class": "handwritten"}, relevant=[{"path": "a"}]),
        q(**{"class": "unanswerable"}, relevant=[]),
        q(**{"class": "unanswerable"}, relevant=[]),
    ]
    results = [
        ([H("b"), H("c"), H("a", text="ABC")], False),  # literal at rank 3
        ([H("a", text="no")] * 10 + [H("a", text="abc")], True),  # rank 11: a miss; flagged
        ([H("b"), H("a")], False),  # rank 2
        ([H("b")], True),
        ([H("b")], False),
    ]
    outcomes = [
        score_query(qq, hits, low) for qq, (hits, low) in zip(queries, results, strict=True)
    ]
    report = aggregate(queries, outcomes, k=3, source="s", version=7)
    by = {c.cls: c for c in report.classes}
    assert by["literal"].recall_at_k == 0.5
    assert by["literal"].recall_at_10 == 0.5
    assert by["literal"].mrr_at_10 == pytest.approx((1 / 3) / 2)
    assert by["literal"].flagged == 0.5
    assert by["handwritten"].mrr_at_10 == 0.5 and by["handwritten"].recall_at_k == 1.0
    assert report.unanswerable_flagged == 0.5
    assert report.false_alarm_rate == pytest.approx(1 / 3)
    k1 = aggregate(queries, outcomes, k=1, source="s", version=7)
    assert {c.cls: c for c in k1.classes}["handwritten"].recall_at_k == 0.0
    table = format_table(report)
    assert "unanswerable flagged low_confidence: 50.0%" in table
    row = next(line for line in table.splitlines() if line.startswith("unanswerable "))
    assert "0.0%" not in row.split()[3:-1] and row.split()[3:11] == ["-"] * 8  # nothing to rank


def test_section_recall_at_1_and_section_mrr_beside_page_level():
    """The right page with a neighbouring section first: page recall@1 counts it, section
    recall@1 does not (docs/retrieval.md, "Metrics")."""
    judged = {"class": "handwritten", "relevant": [{"path": "a.md", "heading": "Answer"}]}
    queries = [q(**judged), q(**judged), q(**{"class": "handwritten"}, relevant=[{"path": "a.md"}])]
    results = [
        [H("a.md", ["A", "Recap"]), H("a.md", ["A", "Answer"])],  # the page's recap first
        [H("a.md", ["A", "Answer"])],
        [H("b.md"), H("a.md")],  # no heading judged: page level only
    ]
    outcomes = [score_query(qq, hits, False) for qq, hits in zip(queries, results, strict=True)]
    [metrics] = aggregate(queries, outcomes, k=3, source="s", version=1).classes
    assert metrics.recall_at_1 == pytest.approx(2 / 3)
    assert metrics.section_recall_at_1 == 0.5  # over the two queries whose sections are judged
    assert metrics.section_mrr_at_10 == 0.75 and metrics.section_recall_at_k == 1.0
    table = format_table(aggregate(queries, outcomes, k=3, source="s", version=1))
    header, row = table.splitlines()[1], table.splitlines()[3]
    figures = dict(
        zip(
            header.replace("sec R", "sec_R").replace("sec MRR", "sec_MRR").split(),
            row.split(),
            strict=True,
        )
    )
    assert figures["sec_R@1"] == "50.0%" and figures["sec_MRR"] == "0.750"
    assert figures["R@1"] == "66.7%"


def test_load_queries_reads_the_shared_format(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text(
        '{"id": "a", "query": "x", "class": "literal", "relevant": [{"path": "p"}], '
        '"literal": "X"}\n\n{"id": "b", "query": "y", "class": "unanswerable", "relevant": []}\n'
    )
    loaded = load_queries(path)
    assert [x.cls for x in loaded] == ["literal", "unanswerable"]
    path.write_text("{not json\n")
    with pytest.raises(ValueError, match="q.jsonl:1"):
        load_queries(path)


# --- a real index and a hand-made query file -------------------------------------------------

PAGES = {
    "setup.md": "# Setup\n\n## Installing the agent\n\nRun `agent-setup.exe /quiet` as an "
    "administrator. The agent registers itself under HKLM\\SOFTWARE\\Contoso.\n",
    "errors.md": "# Errors\n\n## Timeout during enrollment\n\nError 0x80180014 means the "
    "enrollment service did not answer in time; retry after checking the network.\n",
    "billing.md": "# Billing\n\n## Invoices\n\nInvoices are sent monthly by e-mail to the "
    "billing contact of the tenant.\n",
}

QUERIES = [
    {
        "id": "k1",
        "query": "Installing the agent",
        "class": "known-item",
        "relevant": [{"path": "setup.md", "heading": "Installing the agent"}],
    },
    {
        "id": "k2",
        "query": "Timeout during enrollment",
        "class": "known-item",
        "relevant": [{"path": "errors.md", "heading": "Timeout during enrollment"}],
    },
    {
        "id": "l1",
        "query": "0x80180014",
        "class": "literal",
        "literal": "0x80180014",
        "relevant": [{"path": "errors.md"}],
    },
    {
        "id": "l2",
        "query": "agent-setup.exe",
        "class": "literal",
        "literal": "agent-setup.exe",
        "relevant": [{"path": "setup.md"}],
    },
    {
        "id": "h1",
        "query": "how often do we get invoices?",
        "class": "handwritten",
        "relevant": [{"path": "billing.md"}],
    },
    {
        "id": "u1",
        "query": "recipe for sourdough bread starter",
        "class": "unanswerable",
        "relevant": [],
    },
]


@pytest.fixture(scope="module")
def small(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("eval")
    ws = Workspace(root / "repo")
    for path, text in PAGES.items():
        ws.write(path, text)
    ws.commit_and_push()
    data = DataDir(root / "data")
    config = Config(sources=[SourceConfig(name="kb", location=str(ws.bare))])
    index_sources(data, config, embedder=embedder)
    save_config(data, config)
    queries = root / "queries.jsonl"
    queries.write_text("\n".join(json.dumps(x) for x in QUERIES) + "\n")
    return data, queries


def test_evaluate_on_a_real_index(small, embedder, tmp_path):
    data, queries = small
    engine = Engine.open(data, embedder)
    try:
        report = evaluate(engine, queries, "kb", k=3)
    finally:
        engine.close()
    by = {c.cls: c for c in report.classes}
    assert set(by) == {"known-item", "literal", "handwritten", "unanswerable"}
    for cls in ("known-item", "literal", "handwritten"):
        assert by[cls].recall_at_k == 1.0 and by[cls].mrr_at_10 == 1.0, cls
    assert by["known-item"].level == "section" and by["handwritten"].level == "page"
    assert report.unanswerable_flagged == 1.0
    assert report.false_alarm_rate == 0.0
    dump = tmp_path / "dump.jsonl"
    write_dump(report, dump)
    lines = [json.loads(x) for x in dump.read_text().splitlines()]
    assert [x["id"] for x in lines] == [x["id"] for x in QUERIES]
    assert lines[2]["hits"][0]["counts"] is True and lines[2]["rank"] == 1


def test_run_eval_command(small, capsys, tmp_path):
    data, queries = small
    dump = tmp_path / "d.jsonl"
    assert run_eval_command(str(data.root), str(queries), "kb", 3, False, str(dump)) == 0
    out = capsys.readouterr().out
    assert "known-item" in out and "R@3" in out and "false alarms" in out
    assert len(dump.read_text().splitlines()) == len(QUERIES)
    assert run_eval_command(str(data.root), str(queries), "kb", 3, True, None) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["k"] == 3 and summary["outcomes"] == []
    assert run_eval_command(str(data.root), str(queries), "nope", 3, False, None) == 2
    assert "unknown source 'nope'; valid sources: kb" in capsys.readouterr().err
    assert run_eval_command(str(data.root), str(queries), "kb", 3, True, None, fusion="rrf") == 0
    assert json.loads(capsys.readouterr().out)["queries"] == len(QUERIES)
    assert run_eval_command(str(data.root), str(queries), "kb", 3, False, None, fusion="x") == 2
    assert (
        "unknown fusion 'x'; choose one of: adaptive, weighted, rrf, bm25, dense"
        in capsys.readouterr().err
    )
    missing = str(Path(tmp_path) / "missing.jsonl")
    assert run_eval_command(str(data.root), missing, "kb", 3, False, None) == 2


def test_baselines_score_every_configuration_side_by_side(small, capsys):
    data, queries = small
    assert run_eval_command(str(data.root), str(queries), "kb", 3, True, None, baselines=True) == 0
    reports = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in reports] == ["bm25", "dense", "rrf", "weighted", "default", "maxsim"]
    maxsim = reports[-1]
    assert maxsim["report"] is None and "token vectors" in maxsim["skipped"]
    by_name = {r["name"]: {c["class"]: c for c in r["report"]["classes"]} for r in reports[:-1]}
    # The literal query is found by BM25 alone; dense alone does not rank it first.
    assert by_name["bm25"]["literal"]["mrr_at_10"] == 1.0
    assert by_name["default"]["literal"]["mrr_at_10"] == 1.0
    assert run_eval_command(str(data.root), str(queries), "kb", 3, False, None, baselines=True) == 0
    table = capsys.readouterr().out
    header = next(line for line in table.splitlines() if line.startswith("class"))
    assert header.split()[2:] == ["bm25", "dense", "rrf", "weighted", "default"]
    assert "(maxsim: the index has no token vectors)" in table
    rows = [line for line in table.splitlines() if line.startswith("literal")]
    assert rows and all(len(line.split()) == 7 for line in rows)


def test_baselines_refuse_a_dump(small, capsys, tmp_path):
    data, queries = small
    dump = str(tmp_path / "d.jsonl")
    assert run_eval_command(str(data.root), str(queries), "kb", 3, False, dump, baselines=True) == 2
    assert "--dump" in capsys.readouterr().err


def test_two_models_scored_side_by_side(small, capsys, tmp_path):
    """`--against`: the same queries on another data directory's index, built with another
    embedder (the shipped model laid out as an ONNX export: another identity)."""
    data, queries = small
    other = DataDir(tmp_path / "other")
    model = OnnxEmbedder(path=str(export_dir(tmp_path / "export")))
    config = load_config(data)
    index_sources(
        other, msgspec.structs.replace(config, settings=Settings(embedder="x"), models={"x": model})
    )
    args = (str(data.root), str(queries), "kb", 3)
    assert run_eval_command(*args, True, None, against=str(other.root)) == 0
    first, second = json.loads(capsys.readouterr().out)
    assert first["name"].startswith("all-MiniLM-L6-v2") and first["name"].endswith("(data)")
    assert second["name"].startswith("onnx:") and second["name"].endswith("(other)")
    assert first["report"]["queries"] == second["report"]["queries"] == len(QUERIES)
    assert run_eval_command(*args, False, None, against=str(other.root)) == 0
    header = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("class"))
    assert "(data)" in header and "(other)" in header
    assert run_eval_command(*args, False, None, baselines=True, against=str(other.root)) == 2
    assert run_eval_command(*args, False, None, against=str(tmp_path / "nowhere")) == 2


def test_the_fusion_sweep_scores_as_eval_does(small, embedder):
    """bench/ranking/sweep.py retrieves each query once and fuses it again per
    configuration; every fusion's figures must be those `docdex eval` gives."""
    data, queries = small
    engine = Engine.open(data, embedder)
    try:
        groups = sweep.retrieve_all(engine, queries, "kb")
        assert set(groups) == {"known-item all", "literal all", "handwritten all"}
        for fusion in (Fusion.BM25, Fusion.DENSE, Fusion.RRF, Fusion.ADAPTIVE):
            settings = EngineSettings(fusion=fusion, reranker="none")
            report = evaluate(engine.with_settings(settings), queries, "kb")
            ranker = engine.with_settings(sweep.settings_of(fusion))
            for c in report.classes:
                if c.cls == "unanswerable":
                    continue
                swept = sweep.score(ranker, groups[f"{c.cls} all"])
                assert swept == pytest.approx(c.mrr_at_10), (fusion, c.cls)
        literal = sweep.Group("kb", engine, groups["literal all"])
        rows = sweep.sweep([literal], [DEFAULT_SETTINGS.dense_trust])
        assert rows == [["kb", "1.000", "1.000"], ["sets missed", "", "0"]]
    finally:
        engine.close()
