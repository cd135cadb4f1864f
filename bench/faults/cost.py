"""Cost per input byte: the worst markdown a file can hold, chunked and viewed.

Each generator writes a page as large as `max_file_bytes` (2,000,000) lets it be (quick: 400
KB) of one costly shape: headings on every line, a one-row table, lists and blockquotes
nested past markdown-it's limit with no blank line, one enormous line, thousands of links
and code spans, one huge fenced block, HTML tags. The page is written to a file; a fresh
child process (`python -m bench.faults.cost child NAME FILE`) reads it (so that its RSS
holds no trace of the generator), imports the chunker and the page view, notes its peak RSS
(ru_maxrss), chunks the page as the indexer does (`parse_page`), then renders its page view
as the server does (`page_view`, over the chunks the index would hold), and reports peak RSS
and CPU seconds. The same child first chunks docdex's own docs, the reference: its CPU
seconds per MB make the generators' a ratio, as the machine is shared.

The bounds a row is judged by (a row over any of them counts as lost):
- peak RSS at most RSS_BYTES_PER_BYTE (100) bytes per input byte above the child's RSS
  before chunking, and at most RSS_MB (300) MB in all;
- chunking at most CPU_RATIO (20) times the reference's CPU seconds per MB;
- the page view at most VIEW_CPU_S (1) CPU second (its 400 KB window);
- the chunks give the page back exactly (index_format.reassembly), none over its bound.
"""

from __future__ import annotations

import contextlib
import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

from .rows import Row
from bench.common import ROOT

MAX_FILE_BYTES = 2_000_000  # Settings.max_file_bytes
QUICK_BYTES = 400_000
RSS_BYTES_PER_BYTE = 100
RSS_MB = 300
CPU_RATIO = 20
VIEW_CPU_S = 1.0


def _filled(unit: Callable[[int], str], size: int, head: str = "", tail: str = "") -> str:
    parts, used, n = [head], len(head) + len(tail), 0
    while used + len(part := unit(n)) <= size:
        parts.append(part)
        used += len(part)
        n += 1
    return "".join([*parts, tail])


def _table(size: int) -> str:
    columns = size // 6 - 2  # three rows of "a|" cells
    return "|" + "a|" * columns + "\n|" + "-|" * columns + "\n|" + "b|" * columns + "\n"


def _nested_list(n: int) -> str:
    return "".join("  " * depth + f"- item {n} at depth {depth}\n" for depth in range(24))


GENERATORS: dict[str, tuple[str, Callable[[int], str]]] = {
    "headings": ("a heading on every line", lambda s: _filled(lambda n: f"## H{n}\n", s)),
    "sections": (
        "a heading and a sentence, over and over",
        lambda s: _filled(lambda n: f"## Heading {n}\n\nWords of section {n}.\n\n", s),
    ),
    "table": ("a one-row table", _table),
    "nested-lists": ("lists nested 24 deep, no blank line", lambda s: _filled(_nested_list, s)),
    "blockquotes": (
        "blockquotes nested 1 to 40 deep, no blank line",
        lambda s: _filled(lambda n: ">" * (n % 40 + 1) + f" quote {n}\n", s),
    ),
    "long-line": ("one enormous line", lambda s: _filled(lambda n: f"word{n} ", s - 1) + "\n"),
    "links": (
        "links and code spans",
        lambda s: _filled(lambda n: f"[link {n}](https://example.com/{n}) `code {n}`\n", s),
    ),
    "fence": (
        "one huge fenced code block",
        lambda s: _filled(lambda n: f"    x{n} = {n * 7}\n", s, "```python\n", "```\n"),
    ),
    "html": (
        "HTML tags in blocks and inline",
        lambda s: _filled(
            lambda n: f'<div class="x"><b>t{n}</b> <i>i</i></div>\nA <b>b</b>.\n\n', s
        ),
    ),
}


class Measured(msgspec.Struct):
    generator: str
    input_bytes: int
    baseline_mb: float  # the child's peak RSS before chunking
    peak_mb: float
    chunk_cpu_s: float
    view_cpu_s: float
    reference_cpu_s_per_mb: float
    exact: bool  # the chunks give the page back, none over the bound
    chunks: int


def run(quick: bool, work: Path) -> list[Row]:
    size = QUICK_BYTES if quick else MAX_FILE_BYTES - 1_000
    return [_row(_measure(name, size, work)) for name in GENERATORS]


def _measure(name: str, size: int, work: Path) -> Measured:
    page = work / f"{name}.md"
    page.write_text(GENERATORS[name][1](size))
    command = [sys.executable, "-m", "bench.faults.cost", "child", name, str(page)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
    return msgspec.json.decode(done.stdout.strip().splitlines()[-1], type=Measured)


def _row(m: Measured) -> Row:
    mb = m.input_bytes / 1e6
    per_byte = (m.peak_mb - m.baseline_mb) * 2**20 / m.input_bytes
    cpu_ratio = m.chunk_cpu_s / mb / m.reference_cpu_s_per_mb
    over = [
        per_byte > RSS_BYTES_PER_BYTE,
        m.peak_mb > RSS_MB,
        cpu_ratio > CPU_RATIO,
        m.view_cpu_s > VIEW_CPU_S,
        not m.exact,
    ]
    return Row(
        scenario="cost",
        injected=f"{m.generator}: {GENERATORS[m.generator][0]}",
        count=1,
        lost=int(any(over)),
        figures={
            "input MB": round(mb, 2),
            "peak RSS MB": round(m.peak_mb, 1),
            "RSS bytes per input byte": round(per_byte, 1),
            "chunk CPU s": round(m.chunk_cpu_s, 2),
            "chunk CPU x reference": round(cpu_ratio, 1),
            "page view CPU s": round(m.view_cpu_s, 2),
        },
        notes=f"{m.chunks} chunks; reference {m.reference_cpu_s_per_mb:.2f} CPU s/MB",
    )


# --- the child ------------------------------------------------------------------------------


def _peak_mb() -> float:
    """This process's peak RSS since `_reset_peak` (VmHWM). Not ru_maxrss: Linux carries it
    over from the parent through fork and exec, so a child of a large harness would start
    at the harness's size."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024  # kB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _reset_peak() -> None:
    """Start VmHWM again from the current RSS (`/proc/PID/clear_refs`, Linux 4.0 and later)."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def child(name: str, page_file: Path) -> Measured:
    from docdex.index_format.reassembly import reassemble, served_text
    from docdex.index_format.records import ChunkerSettings
    from docdex.indexer.chunking.page_parser import parse_page
    from docdex.server.answers import page_views  # noqa: F401 (its imports, before the baseline)
    from docdex.server.rendering import renderer  # noqa: F401

    from bench.faults.harness import docs_corpus

    _reset_peak()
    settings = ChunkerSettings()
    reference = "\n\n".join(c.decode() for c in docs_corpus(400_000, 400_000).values())
    started = time.process_time()
    parse_page(reference, "reference.md", settings)
    reference_cpu = (time.process_time() - started) / (len(reference.encode()) / 1e6)

    text = page_file.read_text()
    baseline = _peak_mb()
    started = time.process_time()
    page = parse_page(text, f"{name}.md", settings)
    chunk_cpu = time.process_time() - started
    peak = _peak_mb()
    exact = reassemble(page.chunks, page.front_matter) == served_text(text) and all(
        len(c.text) <= settings.max_chars for c in page.chunks
    )
    started = time.process_time()
    _view(name, text, page)
    view_cpu = time.process_time() - started
    return Measured(
        name,
        len(text.encode()),
        baseline,
        peak,
        chunk_cpu,
        view_cpu,
        reference_cpu,
        exact,
        len(page.chunks),
    )


def _view(name: str, text: str, parsed) -> None:
    """The page view of the parsed page, through `page_view` over a version that holds it."""
    from docdex.server.answers.page_views import page_view

    spans = [(c.headings, c.text, c.start_line, c.end_line) for c in parsed.chunks]
    index = PageAlone("cost", f"{name}.md", parsed.title, text, spans, parsed.front_matter)
    page_view(index, index.page)  # type: ignore[arg-type]  # the few members page_view reads


class PageAlone:
    """The members of a version's reader that page_view reads, over one page: its chunks
    given as (headings, text, start line, end line)."""

    version = 1

    def __init__(
        self,
        source: str,
        path: str,
        title: str,
        text: str,
        chunks: list[tuple[list[str], str, int, int]],
        front_matter: str = "",
    ) -> None:
        from docdex.index_format.records import ChunkRecord, ServedPage

        doc_id = f"{source}:{path}"
        self.records = [
            ChunkRecord(
                f"{doc_id}#chunk{i}", doc_id, source, path, title, headings, body, start, end,
                "", 0, 0,
            )
            for i, (headings, body, start, end) in enumerate(chunks)
        ]  # fmt: skip
        self.page = ServedPage(
            doc_id=doc_id,
            source=source,
            path=path,
            blob="",
            title=title,
            description="",
            tags=(),
            created="",
            modified="",
            commit="",
            size=len(text),
            front_matter=front_matter,
            chunks=(),
        )
        self.pages = {doc_id: self.page}

    def page_chunks(self, _page: object) -> list:
        return self.records

    def ref_of(self, _source: str) -> str:
        return ""


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "child":
        print(json.dumps(msgspec.to_builtins(child(argv[1], Path(argv[2])))))
        return 0
    print("usage: python -m bench.faults.cost child NAME FILE", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
