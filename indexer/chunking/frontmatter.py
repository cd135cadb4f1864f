"""Front matter: a tolerant reader for the YAML (`---`) or TOML (`+++`) block atop a page.

Only the subset pages use for metadata is understood: `key: value` lines, quoted strings,
inline `[a, b]` lists, block `- a` lists and `|` / `>` block scalars. Anything else is
skipped; nothing here raises on malformed input.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

_log = logging.getLogger(__name__)

_YAML_KEY = re.compile(
    r"""^(?P<key>[A-Za-z0-9_$@"'][\w.\-$@"' ]{0,80}?)\s*:(?:\s+|$)(?P<rest>.*)$"""
)
_TOML_KEY = re.compile(r"""^(?P<key>[A-Za-z0-9_"'][\w.\-"']{0,80}?)\s*=\s*(?P<rest>.*)$""")
_BLOCK_SCALAR = re.compile(r"^([|>])[+-]?[0-9]?$")
_DATE_KEY_PARTS = ("date", "lastmod", "created", "updated", "modified", "published", "timestamp")
# Site generators' title keys, in order: Docusaurus falls back to sidebar_label, Hugo (Docsy)
# to linkTitle; keys are matched case-insensitively.
_TITLE_KEYS = ("title", "sidebar_label", "linktitle")
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "/": "/", "0": ""}


def read_front_matter(lines: list[str]) -> tuple[int, FrontMatter]:
    """How many lines the front matter block takes (0 when there is none), and its fields.

    A block needs its closing delimiter and a first line that looks like a field; otherwise
    the page just starts with a thematic break. Fields of a malformed block are best effort.
    """
    if not lines:
        return 0, FrontMatter()
    delimiter = lines[0].rstrip()
    if delimiter not in ("---", "+++"):
        return 0, FrontMatter()
    closers = ("---", "...") if delimiter == "---" else ("+++",)
    key_pattern = _YAML_KEY if delimiter == "---" else _TOML_KEY
    for end in range(1, len(lines)):
        if lines[end].rstrip() in closers:
            inner = lines[1:end]
            if not _looks_like_fields(inner, key_pattern):
                return 0, FrontMatter()
            return end + 1, _front_matter(_fields_or_nothing(inner, key_pattern))
    return 0, FrontMatter()


def parse_fields(lines: list[str], key_pattern: re.Pattern[str] = _YAML_KEY) -> dict[str, object]:
    """Top-level `key: value` fields; values are strings or lists of strings."""
    fields: dict[str, object] = {}
    index = 0
    while index < len(lines):
        match = key_pattern.match(lines[index])
        index += 1
        if not match:
            continue
        block_start = index
        while index < len(lines) and _continues_value(lines[index]):
            index += 1
        key = _unquote(match.group("key").strip())
        fields[key] = _value(match.group("rest").strip(), lines[block_start:index])
    return fields


def _fields_or_nothing(lines: list[str], key_pattern: re.Pattern[str]) -> dict[str, object]:
    try:
        return parse_fields(lines, key_pattern)
    except Exception:  # a page's metadata must never stop its content from being indexed
        _log.warning("unreadable front matter ignored", exc_info=True)
        return {}


def _looks_like_fields(lines: list[str], key_pattern: re.Pattern[str]) -> bool:
    for line in lines:
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            return bool(key_pattern.match(line))
    return True


def _continues_value(line: str) -> bool:
    return not line.strip() or line[0] in " \t" or line.startswith("- ") or line.rstrip() == "-"


def _value(rest: str, block: list[str]) -> str | list[str]:
    scalar = _BLOCK_SCALAR.match(rest)
    if scalar:
        return _block_scalar(block, folded=scalar.group(1) == ">")
    continued = [line.strip() for line in block if line.strip()]
    if not rest:
        items = [line[1:].strip() for line in continued if line.startswith("-")]
        if items and len(items) == len(continued):
            return [item for item in (_scalar(i) for i in items) if item]
        return _scalar(" ".join(continued))
    if rest.startswith("["):
        return _inline_list(" ".join([rest, *continued]))
    return _scalar(" ".join([rest, *continued]))


def _block_scalar(block: list[str], folded: bool) -> str:
    lines = [line.strip() for line in block]
    while lines and not lines[-1]:
        lines.pop()
    if not folded:
        return "\n".join(lines).strip()
    paragraphs = " ".join(line if line else "\n" for line in lines)
    return re.sub(r" ?\n ?", "\n", paragraphs).strip()


def _inline_list(text: str) -> list[str]:
    body = text[1:]
    if body.rstrip().endswith("]"):
        body = body.rstrip()[:-1]
    return [item for item in (_scalar(part) for part in _split_outside_quotes(body)) if item]


def _split_outside_quotes(text: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    quote = ""
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char == ",":
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    return parts


def _scalar(text: str) -> str:
    text = text.strip()
    if text[:1] in ("'", '"'):
        return _unquote(text)
    comment = text.find(" #")
    return (text[:comment] if comment >= 0 else text).strip()


def _unquote(text: str) -> str:
    """A quoted YAML/TOML string's value; an unclosed quote is tolerated."""
    if not text or text[0] not in "\"'":
        return text
    quote = text[0]
    closing = _closing_quote(text, quote)
    inner = text[1:closing] if closing > 0 else text[1:]
    if quote == "'":
        return inner.replace("''", "'")
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), inner)


def _closing_quote(text: str, quote: str) -> int:
    index = 1
    while index < len(text):
        char = text[index]
        if quote == '"' and char == "\\":
            index += 2
            continue
        if char == quote:
            if quote == "'" and text[index + 1 : index + 2] == "'":
                index += 2
                continue
            return index
        index += 1
    return -1


def _front_matter(fields: dict[str, object]) -> FrontMatter:
    by_name = {key.lower(): value for key, value in fields.items()}
    titles = (_text(by_name.get(key)) for key in _TITLE_KEYS)
    tags = _tags(by_name.get("tags")) + _tags(by_name.get("keywords"))
    return FrontMatter(
        title=next((title for title in titles if title), ""),
        description=_text(by_name.get("description")),
        tags=list(dict.fromkeys(tags)),
        draft=_text(by_name.get("draft")).lower() in ("true", "yes", "on"),
        dates={
            key: value
            for key, value in fields.items()
            if isinstance(value, str) and _is_date(key, value)
        },
    )


def _text(value: object) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""


def _tags(value: object) -> list[str]:
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list):
        return []
    return [tag for tag in (" ".join(str(item).split()) for item in value) if tag]


def _is_date(key: str, value: str) -> bool:
    name = key.lower()
    return any(part in name for part in _DATE_KEY_PARTS) and any(c.isdigit() for c in value)


@dataclass(frozen=True)
class FrontMatter:
    title: str = ""
    description: str = ""
    tags: list[str] = field(default_factory=list)  # `tags` then `keywords`, each once
    dates: dict[str, str] = field(default_factory=dict)
    draft: bool = False  # `draft: true` (Hugo, Jekyll, Docusaurus)
