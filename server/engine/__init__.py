"""The search engine: one index version opened for searching (`Engine`), its read side
(`VersionReader`, `Engine.index`: pages, chunks, entries, refs), the models its searches use
(`SearchModels`, `Engine.models`), its tunables (`EngineSettings`), what it answers
(`SearchResult`, `Hit`, and the limits on what a file controls in them) and what a search
may return (`Scope`); a search's stages one at a time, for the benches (`SearchStages`).
Everything else in this package is its inside: the server, the CLI, `docdex eval` and the
benches use these names only (tests/support/lint_imports.py checks it).
"""

from .engine import (
    MAX_QUERY_CHARS,
    MAX_RESULTS,
    Engine,
    SearchModels,
    SearchStages,
    check_num_results,
)
from .hits import (
    RESOURCE_TEMPLATE,
    TITLE_CHARS,
    Hit,
    HitCopy,
    OutlineEntry,
    SearchResult,
    breadcrumb,
    clip,
    clip_headings,
    resource_uri,
)
from .rerank import RerankerError, check_reranker_name
from .retrieval import Retrieval
from .scope import Scope
from .settings import (
    DEFAULT_SETTINGS,
    DenseTrust,
    EngineSettings,
    Fusion,
    FusionWeights,
    LexicalTrust,
)
from .version_reader import DerivedState, SegmentStatus, VersionReader

__all__ = [
    "DEFAULT_SETTINGS",
    "MAX_QUERY_CHARS",
    "MAX_RESULTS",
    "RESOURCE_TEMPLATE",
    "TITLE_CHARS",
    "DenseTrust",
    "DerivedState",
    "Engine",
    "EngineSettings",
    "Fusion",
    "FusionWeights",
    "Hit",
    "HitCopy",
    "LexicalTrust",
    "OutlineEntry",
    "RerankerError",
    "Retrieval",
    "Scope",
    "SearchModels",
    "SearchResult",
    "SearchStages",
    "SegmentStatus",
    "VersionReader",
    "breadcrumb",
    "check_num_results",
    "check_reranker_name",
    "clip",
    "clip_headings",
    "resource_uri",
]
