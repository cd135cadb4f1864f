"""What a page costs the chunker is bounded by structure, not by machine speed: markdown-it
is never given more than a piece (indexer/chunking/pieces.py), a page's chunks stay exact
whatever the pieces, and the worst shapes stay within a memory bound per input byte."""

from __future__ import annotations

import tracemalloc

from docdex.index_format.reassembly import reassemble, served_text
from docdex.index_format.records import ChunkerSettings
from docdex.indexer.chunking import page_model, page_parser, pieces
from docdex.indexer.chunking.page_parser import parse_page
from docdex.indexer.chunking.pieces import PIECE_CHARS, piece_bounds


def headings(size: int) -> str:
    lines, used, n = [], 0, 0
    while used < size:
        line = f"## H{n}"
        lines.append(line)
        used += len(line) + 1
        n += 1
    return "\n".join(lines) + "\n"


def deep_quotes(size: int) -> str:
    lines, used, n = [], 0, 0
    while used < size:
        line = ">" * (n % 40 + 1) + f" quote {n}"
        lines.append(line)
        used += len(line) + 1
        n += 1
    return "\n".join(lines) + "\n"


def exact(text: str) -> None:
    page = parse_page(text, "p.md")
    assert reassemble(page.chunks, page.front_matter) == served_text(text)
    assert all(len(c.text) <= ChunkerSettings().max_chars for c in page.chunks)


def test_markdown_it_is_never_given_more_than_a_piece(monkeypatch):
    given: list[int] = []
    parse = page_model._BLOCK_PARSER.parse

    def measured(src, env=None):
        given.append(len(src))
        return parse(src, env)

    monkeypatch.setattr(page_model._BLOCK_PARSER, "parse", measured)
    for text in (headings(600_000), deep_quotes(300_000), "word " * 100_000 + "\n"):
        given.clear()
        exact(text)
        # a piece ends at a line boundary: only one line longer than a piece makes it longer
        longest_line = max(len(line) + 1 for line in text.split("\n"))
        assert given and max(given) <= max(PIECE_CHARS, longest_line)


def test_pieces_cover_the_lines_and_cut_at_blocks_outside_fences():
    lines = ["# Title", "", "```", *(["code", ""] * 40_000), "```", "", "Text."] * 2
    bounds = piece_bounds(lines, 1_000)
    assert bounds[0][0] == 0 and bounds[-1][1] == len(lines)
    assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:], strict=False))
    marks = [i for i, line in enumerate(lines) if line == "```"]
    pairs = zip(marks[::2], marks[1::2], strict=True)
    inside = {i for opened, closed in pairs for i in range(opened + 1, closed + 1)}
    assert not {first for first, _ in bounds} & inside
    assert piece_bounds(["short"] * 10) == [(0, 10)]


def test_a_heading_stays_with_the_long_line_after_it():
    text = "# Export log\n\n" + " ".join(f"entry-{i}=ok" for i in range(6_000)) + "\n"
    assert len(text) > PIECE_CHARS
    assert 2 not in {first for first, _ in piece_bounds(text.split("\n"))}  # not after "#"
    page = parse_page(text, "export.md", ChunkerSettings(budget_chars=25_000))
    assert [(c.start_line, c.end_line) for c in page.chunks] == [(1, 3)]


def test_a_small_page_is_one_piece_and_chunks_as_before(monkeypatch):
    text = "# Guide\n\n" + "".join(f"## Part {n}\n\n{'Words here. ' * 30}\n\n" for n in range(60))
    assert len(text) < PIECE_CHARS
    whole = parse_page(text, "g.md")
    monkeypatch.setattr(pieces, "PIECE_CHARS", 2_000)
    monkeypatch.setattr(page_parser, "piece_bounds", lambda lines: piece_bounds(lines, 2_000))
    cut = parse_page(text, "g.md")
    # cut at section boundaries, the same chunks and breadcrumbs
    assert [(c.start_line, c.end_line, c.headings) for c in cut.chunks] == [
        (c.start_line, c.end_line, c.headings) for c in whole.chunks
    ]


def test_blocks_past_the_nesting_limit_take_their_lazy_lines():
    # each deeper `>` used to open blockquotes that scanned the rest of the page again
    tokens = page_model._BLOCK_PARSER.parse(deep_quotes(40_000), {})
    opened = sum(1 for t in tokens if t.type == "blockquote_open")
    assert opened <= 40


def test_a_heading_on_every_line_stays_within_a_memory_bound_per_input_byte():
    text = headings(300_000)  # five pieces
    tracemalloc.start()
    try:
        exact(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # a piece's tokens are a fixed cost (about 22 MB), the chunks about 55 bytes per input
    # byte (measured at 300 KB and 1 MB); before the pieces, 300 bytes and more per byte
    assert peak < 60 * len(text) + 25_000_000
