"""Chunk hubness (bench/ranking/hubs.py) on a real index, and the dense side scaled by it."""

from __future__ import annotations

import numpy as np
import pytest

from docdex.index_format.layout import DataDir
from docdex.server.engine import Engine, Scope

from bench.ranking import hubs
from fixtures import FAQ_E1234, INSTALL, index_workspace, pushed_workspace

# the install guide twice: each of its chunks has an exact copy in the other folder
FILES = {"guide/install.md": INSTALL, "old/install.md": INSTALL, "faq.md": FAQ_E1234}


@pytest.fixture(scope="module")
def data(tmp_path_factory, embedder) -> DataDir:
    root = tmp_path_factory.mktemp("hubs")
    found = DataDir(root / "data")
    index_workspace(found, pushed_workspace(root / "ws", FILES), embedder)
    return found


def all_vectors(data: DataDir) -> np.ndarray:
    return np.concatenate([part.vectors for part in hubs.segment_chunks(data)])


def test_each_chunk_scores_the_mean_cosine_of_its_nearest_others(data, monkeypatch):
    monkeypatch.setattr(hubs, "BLOCK_ROWS", 2)  # several product blocks
    vectors = all_vectors(data)
    k = 3
    assert len(vectors) > k + 2
    sims = vectors @ vectors.T
    np.fill_diagonal(sims, -np.inf)
    expected = np.sort(sims, axis=1)[:, -k:].mean(axis=1)
    found = hubs.hubness(data, k)
    values = np.concatenate([found[part.id] for part in hubs.segment_chunks(data)])
    assert np.allclose(values[~np.isnan(values)], expected, atol=1e-5)


def test_copies_are_not_counted_as_neighbours(data):
    vectors = all_vectors(data)
    plain = hubs.neighbour_means(vectors, 1)
    skipping = hubs.neighbour_means(vectors, 1, copies=0.999)
    copied = plain > 0.999  # the install guide's chunks: the nearest other is their copy
    assert copied.sum() >= 2
    assert np.all(skipping[copied] < 0.999)
    assert np.allclose(skipping[~copied], plain[~copied])


def test_scaling_reorders_the_dense_list_by_the_scaled_cosine(data, embedder):
    engine = Engine.open(data, embedder)
    try:
        retrieval = engine.retrieve("install the package with pip", Scope())
        found = hubs.hubness(data)
        alpha = 5.0  # large enough to re-order the list
        out = hubs.scaled(retrieval, found, hubs.HubScaling(alpha))
    finally:
        engine.close()
    before = {c.key: c for c in retrieval.candidates}
    listed = sorted((c for c in out.candidates if c.dense_rank), key=lambda c: c.dense_rank)
    expected = [before[c.key].dense - alpha * float(found[c.segment.id][c.index]) for c in listed]
    assert expected == sorted(expected, reverse=True)
    by_cosine = sorted(listed, key=lambda c: -before[c.key].dense)
    assert [c.key for c in listed] != [c.key for c in by_cosine]
    # the trust still reads the raw best cosine; the retrieval itself is left as it was
    assert max(c.dense for c in out.candidates) == pytest.approx(
        max(c.dense for c in retrieval.candidates)
    )
    assert all(before[c.key] is not c for c in out.candidates)
