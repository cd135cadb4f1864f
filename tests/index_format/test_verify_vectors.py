"""A version whose stored vectors hold a NaN or an infinity (an endpoint answered one, or a
writer that did not check) has checksums that match what was written, so only reading the
values finds it: `docdex verify` reports the segment's vectors (kind `value`)."""

from __future__ import annotations

import msgspec
import numpy as np
import pytest

from docdex import cli
from docdex.index_format.layout import DataDir
from docdex.index_format.records import FileSum
from docdex.index_format.store import VECTORS_FILE, file_sha256, load_manifest, write_manifest
from docdex.index_format.verify import verify_version

from fixtures import build_workspace, index_workspace


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_a_stored_vector_that_is_not_finite_is_reported(tmp_path, embedder, capsys, value):
    data = DataDir(tmp_path / "data")
    version = index_workspace(data, build_workspace(tmp_path / "ws"), embedder)
    manifest = load_manifest(data, version)
    ref = manifest.segments[0]
    path = data.segment(ref.id) / VECTORS_FILE
    vectors = np.load(path)
    vectors[1, 5] = value
    with open(path, "wb") as out:
        np.save(out, vectors)
    resummed = FileSum(VECTORS_FILE, path.stat().st_size, file_sha256(path))
    files = [resummed if s.name == VECTORS_FILE else s for s in ref.files]
    segments = [msgspec.structs.replace(ref, files=files), *manifest.segments[1:]]
    write_manifest(data, msgspec.structs.replace(manifest, segments=segments))

    problems = verify_version(data.root, version)
    assert [(p.file, p.kind) for p in problems] == [(f"segments/{ref.id}/{VECTORS_FILE}", "value")]
    assert "window 1's vector is not finite" in problems[0].detail
    assert cli.main(["--data", str(data.root), "verify"]) == 1
    assert "window 1's vector is not finite" in capsys.readouterr().out
