"""Pages in Chinese, Japanese, Korean, French and German, and identifier fragments, through
the real pipeline, Tantivy index and search (adr/0022); and an index of the analysis before
them (text analysis 1), served as it was built and rebuilt by the next run."""

from __future__ import annotations

import shutil
from pathlib import Path

import msgspec
import pytest

from docdex.index_format import text as text_module
from docdex.index_format.config import Config, Settings, SourceConfig
from docdex.index_format.layout import DataDir, IndexFormatError
from docdex.index_format.store import load_current, write_manifest
from docdex.indexer.run.pipeline import index_sources
from docdex.server.engine import Engine, Scope

from fixtures import index_workspace, pushed_workspace

PAGES = {
    "zh/install.md": """# 安装指南

本文介绍如何在服务器上部署文档搜索服务。首先下载安装包，然后运行配置向导，最后启动索引进程。

## 常见问题

如果索引进程无法启动，请检查数据目录的权限。
""",
    "zh/backup.md": """# 数据保护

定期备份数据目录可以防止意外丢失。恢复时，先停止服务，再复制备份文件。
""",
    "ja/search.md": """# 検索の使い方

キーワードを入力すると、関連するページが表示されます。絞り込みには、ソースやパスを指定してください。
""",
    "ja/update.md": """# 更新手順

新しいバージョンをインストールする前に、設定ファイルを保存してください。
""",
    "ko/start.md": """# 시작하기

문서 검색 서버를 설치하려면 다음 명령을 실행하세요. 설치가 끝나면 브라우저에서 주소를 엽니다.
""",
    "ko/token.md": """# 토큰 관리

접근 토큰은 관리자만 발급할 수 있습니다. 토큰이 유출되면 즉시 폐기하세요.
""",
    "fr/cuisine.md": """# Recettes du dimanche

La crème brûlée se prépare la veille ; le café est torréfié à la main.
""",
    "de/verkehr.md": """# Stadtplanung

Die Größe der Fußgängerzone wurde im Frühjahr verdoppelt.
""",
    "en/resume.md": """# Resume an interrupted download

The resume command restarts a download where it stopped; a naive retry starts over.
""",
    "en/install.md": """# Installing Widget

Widget runs on Windows 10 and later. Run the installer and follow the wizard; it writes
its settings to the configuration directory.

## Upgrading

Install the new version over the old one: your settings are kept.
""",
    "en/generics.md": """# Generic parameters

Generic functions are generic over types. A generic parameter list introduces the
generic names; generic bounds restrict what each generic name may be. Generics are
monomorphised: every use of a generic item with new generic arguments makes a copy.
""",
    "en/visitor.md": """# Walking the tree

The visitor calls `walk_expr` for each expression and `visit_generic_args` for the
arguments of a path segment.
""",
}

# A 2-4 character phrase of each page, and the page.
PHRASES = [
    ("配置向导", "zh/install.md"),
    ("备份", "zh/backup.md"),
    ("絞り込み", "ja/search.md"),
    ("設定", "ja/update.md"),
    ("브라우저", "ko/start.md"),
    ("관리자", "ko/token.md"),
]
ENGLISH = ["How do I install Widget?", "upgrade keeps settings", "generic parameter bounds"]


def _built(root: Path, embedder, analysis: int | None = None) -> DataDir:
    """PAGES pushed and indexed under root/data, with text analysis `analysis` (None: this
    code's)."""
    ws = pushed_workspace(root / "ws", PAGES)
    data = DataDir(root / "data")
    with pytest.MonkeyPatch.context() as patch:
        if analysis is not None:
            patch.setattr(text_module, "TEXT_ANALYSIS", analysis)
        index_workspace(data, ws, embedder)
    return data


@pytest.fixture(scope="module")
def data(tmp_path_factory, embedder) -> DataDir:
    return _built(tmp_path_factory.mktemp("languages"), embedder)


@pytest.fixture(scope="module")
def engine(data, embedder):
    opened = Engine.open(data, embedder)
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def old_data(tmp_path_factory, embedder) -> DataDir:
    """The same pages indexed by the analysis before this one."""
    return _built(tmp_path_factory.mktemp("languages-old"), embedder, analysis=1)


def _top(engine: Engine, query: str, n: int = 10):
    return engine.search(query, n, Scope(frozenset(["docs"]))).results


@pytest.mark.parametrize(("phrase", "path"), PHRASES)
def test_a_cjk_phrase_finds_its_page_first(engine, phrase, path):
    first = _top(engine, phrase)[0]
    assert first.path == path
    assert first.match in ("bm25", "both")  # found by its words, not by chance closeness


@pytest.mark.parametrize(
    ("query", "path"),
    [
        ("creme brulee", "fr/cuisine.md"),  # the page has the accents, the query has none
        ("Fussgangerzone", "de/verkehr.md"),
        ("résumé naïve", "en/resume.md"),  # the query has the accents, the page has none
    ],
)
def test_accents_fold_both_ways(engine, query, path):
    first = _top(engine, query)[0]
    assert first.path == path
    assert first.match in ("bm25", "both")


def test_an_identifier_fragment_finds_the_identifier(engine):
    hits = _top(engine, "_generic", 3)
    assert "_generic" in hits[0].text
    assert hits[0].path == "en/visitor.md"


def test_english_ranking_is_the_one_of_the_analysis_before(engine, old_data, embedder):
    old = Engine.open(old_data, embedder)
    try:
        assert old.index.manifest.text_analysis == 1 and engine.index.manifest.text_analysis == 2
        for query in ENGLISH:
            before = [h.chunk_id for h in _top(old, query, 5)]
            assert [h.chunk_id for h in _top(engine, query, 5)] == before, query
    finally:
        old.close()


def test_an_index_of_the_analysis_before_is_served_as_built(old_data, embedder):
    assert load_current(old_data).text_analysis == 1
    old = Engine.open(old_data, embedder)
    try:
        # analysed as that index was built: no cjk terms for a schema without the field
        # (Tantivy panics on a field its index does not have); the phrase is still found,
        # inside the identifier term of its whole run
        first = _top(old, "絞り込み")[0]
        assert first.path == "ja/search.md" and first.match in ("bm25", "both")
        first = _top(old, "crème brûlée")[0]
        assert first.path == "fr/cuisine.md" and first.match in ("bm25", "both")
    finally:
        old.close()


def test_an_index_of_an_unknown_analysis_is_refused(old_data, embedder, tmp_path):
    data = DataDir(tmp_path / "data")
    shutil.copytree(old_data.root, data.root)
    manifest = load_current(data)
    write_manifest(data, msgspec.structs.replace(manifest, text_analysis=99))
    with pytest.raises(IndexFormatError, match="text analysis 99"):
        Engine.open(data, embedder)


def test_the_next_run_rebuilds_the_text_index_of_the_analysis_before(old_data, embedder, tmp_path):
    data = DataDir(tmp_path / "data")
    shutil.copytree(old_data.root, data.root)
    before = load_current(data)
    config = Config(
        settings=Settings(),
        sources=[SourceConfig(name="docs", location=before.sources["docs"].location)],
    )
    report = index_sources(data, config, embedder=embedder)
    after = load_current(data)
    assert report.published and report.windows_embedded == 0  # every vector reused
    assert after.text_analysis == text_module.TEXT_ANALYSIS
    assert after.text_index != before.text_index and after.chunks == before.chunks
    engine = Engine.open(data, embedder)
    try:
        first = _top(engine, "絞り込み")[0]
        assert first.path == "ja/search.md" and first.match in ("bm25", "both")
    finally:
        engine.close()
