"""The engine's tunables, one frozen value: what docs/retrieval.md measured and chose.

Every figure of docs/retrieval.md was measured with `EngineSettings()`; a test, a bench or
`docdex eval --fusion rrf` asks for other values by passing other settings, never by
changing a module's globals.
"""

from __future__ import annotations

import enum

import msgspec

from docdex.index_format.model_tables import RerankEndpoint
from docdex.model.model_environment import UNCONFIGURED, ModelEnvironment


class Fusion(enum.StrEnum):
    """How the BM25 and dense lists become one ranking (docs/retrieval.md, "Fusion")."""

    ADAPTIVE = "adaptive"  # the default (adr/0026)
    WEIGHTED = "weighted"  # score-normalised, the default before adr/0026
    RRF = "rrf"  # reciprocal rank fusion: the baseline every change is measured against
    BM25 = "bm25"  # one retriever alone
    DENSE = "dense"


class DenseTrust(msgspec.Struct, frozen=True):
    """How much the adaptive fusion weighs the dense list: 1, plus `slope` times how far
    its best cosine stands above `start`."""

    start: float
    slope: float

    def weight(self, best_cosine: float) -> float:
        return 1.0 + self.slope * max(0.0, best_cosine - self.start)


class LexicalTrust(msgspec.Struct, frozen=True):
    """How much the adaptive fusion weighs the BM25 list, from BM25's own evidence on the
    query (the counterpart of `DenseTrust`): by the IDF-weighted share of the query's terms
    its first hit holds (`each_chunk`: each chunk's BM25 rank by the share that chunk
    holds), full once that share reaches `coverage`, and by how far its first score stands
    above its tenth, full once the tenth is `spread` below the first (each 0: not weighed
    by it; neither: the BM25 list weighs 1)."""

    coverage: float = 0.0
    spread: float = 0.0
    each_chunk: bool = False

    @property
    def weighs(self) -> bool:
        return self.coverage > 0 or self.spread > 0


class FusionWeights(msgspec.Struct, frozen=True):
    """Weighted score fusion: lexical * bm25/max(bm25) + dense * cosine."""

    lexical: float
    dense: float


class FieldBoosts(msgspec.Struct, frozen=True):
    """BM25 boosts per field (adr/0004): the page title, the breadcrumb below it, the clean
    text, the identifier field (the largest single gain on identifiers), the character pairs
    of Chinese, Japanese and Korean runs, and identifier terms that contain a literal of the
    query (adr/0022)."""

    title: float = 1.5
    headings: float = 2.0
    body: float = 1.0
    ident: float = 4.0
    cjk: float = 1.0
    containing: float = 4.0

    def text_fields(self) -> dict[str, float]:
        return {"title": self.title, "headings": self.headings, "body": self.body}


class ConfidenceSettings(msgspec.Struct, frozen=True):
    """When `low_confidence` is said (docs/retrieval.md, "Saying no answer"; adr/0027)."""

    # a share of the query (IDF-weighted) at least this large in terms the index never holds
    absent_share: float = 0.2
    absence_min_chunks: int = 100  # in a smaller index, a word's absence says little
    weak_dense: float = 0.35  # best cosine below this, and ...
    weak_lexical: float = 0.5  # ... the first hit's lexical coverage below this
    # an absent everyday word counts only when dropping it brings the question this much
    # closer to the corpus (best cosine): then it was the question's subject
    subject_gain: float = 0.06


class EngineSettings(msgspec.Struct, frozen=True, kw_only=True):
    """Every tunable of a search. The defaults are the measured choice."""

    fusion: Fusion = Fusion.ADAPTIVE
    # default (MaxSim when the index has token vectors, else none) | none | maxsim |
    # cross-encoder:/path/to/onnx-dir | the name of a [models.NAME] rerank endpoint, whose
    # table is `rerank_endpoint` (then the name is only shown)
    reranker: str = "default"
    rerank_endpoint: RerankEndpoint | None = None
    # what the models the engine builds take from the environment: the rerank endpoint's
    # key; the server's loader, each version's query model (its cache directory too)
    model_environment: ModelEnvironment = UNCONFIGURED
    retrieve_k: int = 100  # chunks from each retriever (dense asks for 2x as many windows)
    rrf_k: int = 60
    # The adaptive fusion: reciprocal ranks with a small rank constant, the dense list
    # weighing more when its best cosine is high (a model on its own ground: msmarco's best
    # cosines are .78 on average, the technical corpora's .54-.63); dense weight 3 at .80.
    adaptive_k: int = 10
    dense_trust: DenseTrust = DenseTrust(start=0.70, slope=20.0)
    adaptive_heading_weight: float = 0.5
    # the BM25 ranks' weight in the adaptive fusion and the prose RRF (default: 1 always)
    lexical_trust: LexicalTrust = LexicalTrust()
    # A query of at least this many words (0: none) is a request in prose: the adaptive
    # fusion gives it reciprocal ranks alone (`prose_fusion`: RRF with k = prose_rrf_k over
    # the two lists' ranks, or the adaptive ranks; or the weighted fusion's normalised
    # scores), without the heading overlap unless `prose_heading_weight`, and without the
    # literal bonus unless `prose_literals`.
    # Chosen leaving one corpus out (docs/retrieval.md, "Query form"; adr/0035).
    prose_words: int = 8
    prose_questions: bool = False  # a question in words alone is prose too, whatever its length
    prose_literals: bool = False
    prose_fusion: Fusion = Fusion.RRF
    prose_rrf_k: int = 10
    # with `prose_fusion` weighted: both lists' scores rescaled to [0, 1] over the
    # candidates (min-max) before they are weighed, not BM25 over its best and raw cosines
    prose_min_max: bool = False
    prose_heading_weight: float = 0.0  # the heading overlap's weight on a request in prose
    # The weighted fusion's weights for prose and for lexical (identifier-like or short)
    # queries, and its weight of the query/section-heading overlap.
    prose_weights: FusionWeights = FusionWeights(lexical=0.5, dense=1.0)
    lexical_weights: FusionWeights = FusionWeights(lexical=1.0, dense=0.5)
    heading_weight: float = 0.3
    literal_bonus: float = 1.0  # the chunk's raw text contains the query's literals
    # ... and this much more where a literal is defined: the chunk's own heading names it,
    # or a line opens with it as a term (a definition list, a table's first cell, a key);
    # chosen leaving one corpus out (adr/0045)
    definition_bonus: float = 0.5
    prose_definition_bonus: float = 0.0  # the same on a request in prose
    boosts: FieldBoosts = FieldBoosts()
    max_containing: int = 200  # identifier terms containing a literal, per literal
    rerank_depth: int = 30
    maxsim_weight: float = 2.0  # docs/retrieval.md, "MaxSim weight" (adr/0004)
    # at or below this many windows a segment is searched exactly (numpy), above with HNSW
    exact_dense_max_rows: int = 4096
    # HNSW breadth, set once when a graph loads: searches ask for k = 200 windows, and
    # ef = k + 100 was chosen against exact search (docs/retrieval.md, "HNSW breadth")
    hnsw_ef: int = 300
    # a graph shared with an older version answers for rows that died since, so a search
    # asks it for as many more; past this many, the newer version loads its own (adr/0028)
    max_stale_rows: int = 100
    section_terms_kept: int = 65_536  # chunks (and heading texts) whose terms are kept
    # threads beside the caller for a query's BM25 and graph searches (adr/0029);
    # None: one fewer than the machine's cores
    helpers: int | None = None
    confidence: ConfidenceSettings = ConfidenceSettings()


DEFAULT_SETTINGS = EngineSettings()
