"""The reference for the full-index overhead: embed exactly the windows an index run
embedded (same files, same chunker, same unique embed inputs), alone, in one tight loop.

    python -m bench.performance.reference BARE_REPO COMMIT [SHARE]   -> one JSON line on stdout

With SHARE < 1, a uniform random sample of that share of the windows is embedded (same
length distribution, same batching) and the time is scaled up by the inverse share: on the
largest corpus the reference would otherwise cost as long as the run it is compared with.
"""

from __future__ import annotations

import json
import random
import sys
import time

from docdex.index_format.config import DEFAULT_INCLUDE, Settings
from docdex.index_format.records import FileProblem
from docdex.indexer.chunking.page_parser import parse_page
from docdex.indexer.git.blobs import read_markdown
from docdex.indexer.git.diffs import list_files
from docdex.indexer.git.repo import open_repo
from docdex.model.embedder import Embedder
from docdex.model.windows import embed_input


def unique_embed_inputs(bare: str, commit: str, settings: Settings) -> list[str]:
    inputs: dict[str, None] = {}
    with open_repo(bare) as repo:
        files = list_files(repo, commit, list(DEFAULT_INCLUDE), [])
        for entry in files.values():
            text = read_markdown(repo, commit, entry, settings.max_file_bytes)
            if isinstance(text, FileProblem):
                continue
            for chunk in parse_page(text, entry.path, settings.chunker()).chunks:
                inputs[embed_input(chunk.headings, chunk.embed_text)] = None
    return list(inputs)


def main(bare: str, commit: str, share: float = 1.0) -> None:
    settings = Settings()
    texts = unique_embed_inputs(bare, commit, settings)
    embedder = Embedder.load()
    windows, _owners = embedder.token_windows(texts)
    sample = windows
    if share < 1.0:
        picked = random.Random(42).sample(range(len(windows)), max(1, int(len(windows) * share)))
        sample = [windows[i] for i in sorted(picked)]
    started, cpu_started = time.perf_counter(), time.process_time()
    embedder.embed_windows(sample)
    scale = len(windows) / len(sample)
    seconds = (time.perf_counter() - started) * scale
    cpu_seconds = (time.process_time() - cpu_started) * scale
    result = {
        "texts": len(texts),
        "windows": len(windows),
        "tokens": sum(len(w) for w in windows),
        "embed_s": seconds,
        "embed_cpu_s": cpu_seconds,
        "sampled_windows": len(sample),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]) if len(sys.argv) > 3 else 1.0)
