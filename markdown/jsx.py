"""JSX in pages: MDX recognised, and what a reader does not see blanked.

MDX (`.mdx`, or a `.md` page that uses MDX's own syntax: `is_mdx`) has ESM lines, JSX tags
and `{expressions}`, blanked by `without_jsx`. In other pages `without_components` blanks
only component tags (`<Pitfall>`, `<svg-image>`) and HTML comments. Both keep a
component's children and the page's line count (tag_scanner.py).
"""

from __future__ import annotations

import re

from .fences import in_fences
from .tag_scanner import blank_runs

_ESM_START = re.compile(r"^(?:import|export)(?=[\s{*])")
# What only MDX writes: an import from a module (Go's `import "fmt"` is none), an export, a
# {/* comment */}, a JSX attribute holding an expression. A `<Capitalised>` tag alone proves
# nothing (mdBook's <Listing>, VitePress's Vue components), and neither does an import
# inside a <script> element.
_MDX_ESM = re.compile(
    r"^(?:import\s+[\w*{}\s,]+\s+from\s+[\"']|export\s+(?:const|let|var|function|default|\{))"
)
_MDX_ONLY = re.compile(r"(?<!\{)\{/\*|<[A-Za-z][\w.]*\s[^<>]*=\{")
_SCRIPT_OPEN = re.compile(r"^\s*<script\b", re.IGNORECASE)
_SCRIPT_CLOSE = re.compile(r"</script\s*>", re.IGNORECASE)
_CODE_SPAN = re.compile(r"(`+)[^`].*?\1|``")
_MAX_ESM_LINES = 200  # an unbalanced statement blanks at most this many lines


def is_mdx(path: str, lines: list[str]) -> bool:
    """Whether a page is MDX: its extension says so, or, outside code and <script>, it uses
    syntax only MDX has."""
    if path.lower().endswith(".mdx"):
        return True
    if not any(map(_mdx_only_syntax, lines)):  # most pages: no need to know where code is
        return False
    script = False
    for line, code in zip(lines, in_fences(lines), strict=True):
        if code or not line:
            continue
        if script:
            script = not _SCRIPT_CLOSE.search(line)
            continue
        if _SCRIPT_OPEN.match(line):
            script = not _SCRIPT_CLOSE.search(line)
            continue
        if _mdx_only_syntax(line):
            return True
    return False


def _mdx_only_syntax(line: str) -> bool:
    return ("{" in line or "import" in line or "export" in line) and bool(
        _MDX_ESM.match(line) or _MDX_ONLY.search(_CODE_SPAN.sub("", line))
    )


def without_jsx(lines: list[str]) -> list[str]:
    """An MDX page's lines with ESM, JSX tags, `{expressions}` and HTML comments blanked,
    outside fenced code and code spans. A component's children are kept."""
    out = list(lines)
    prose: list[int] = []
    code = in_fences(lines)
    index = 0
    while index < len(lines):
        if code[index]:
            index += 1
        elif _ESM_START.match(lines[index]):
            index = _blank_esm(lines, out, index, code)
        else:
            prose.append(index)
            index += 1
    blank_runs(out, prose, mdx=True)
    return out


def without_components(lines: list[str]) -> list[str]:
    """A markdown page's lines with component tags (`<Badge />`, `<svg-image>`, `</Note>`:
    capitalised, dotted or hyphenated names) and HTML comments blanked, outside fenced code
    and code spans; their children and any other HTML are kept."""
    out = list(lines)
    code = in_fences(lines)
    blank_runs(out, [i for i, inside in enumerate(code) if not inside], mdx=False)
    return out


def _blank_esm(lines: list[str], out: list[str], start: int, code: list[bool]) -> int:
    """Blank the statement starting at `start`; the index of the line after it."""
    depth = 0
    index = start
    while index < len(lines) and index - start < _MAX_ESM_LINES and not code[index]:
        line = lines[index]
        depth += sum(line.count(c) for c in "{([") - sum(line.count(c) for c in "})]")
        out[index] = " " * len(line)
        index += 1
        if depth <= 0 and not line.rstrip().endswith((",", "=", "=>", "(", "{", "[")):
            break
    return index
