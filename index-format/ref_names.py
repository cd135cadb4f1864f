"""Several refs per source: which branches and tags a source's `refs` patterns select, and
how each indexed ref is named in a manifest (FORMAT.md, "Refs").

A source's default ref (its `branch`, else the repository's HEAD branch) is the manifest
entry named like the source, with ids "source:path". Every other indexed ref is an entry of
its own, keyed "source@ref" (the short branch or tag name), whose pages have ids
"source@ref:path" and whose chunks carry that key as their `source`: a filter on the key
is a filter on the ref. Both sides use this module: the indexer to select and name refs,
readers to find a source's refs and to turn a `ref` argument into a key.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from typing import Literal

from docdex.errors import NotFound

from .config import DOC_SOURCE, MAX_REF_CHARS, REF_NAME
from .records import SourceState

RefKind = Literal["branch", "tag"]
SEPARATOR = "@"
_PREFIXES: dict[RefKind, str] = {"branch": "refs/heads/", "tag": "refs/tags/"}


def full_ref(kind: RefKind, name: str) -> str:
    """refs/heads/NAME or refs/tags/NAME."""
    return _PREFIXES[kind] + name


def ref_key(source: str, ref: str) -> str:
    """The manifest key (and the doc ids' and chunks' `source`) of a ref other than the
    source's default: "docs@release/1.0"."""
    return f"{source}{SEPARATOR}{ref}"


def split_key(key: str) -> tuple[str, str]:
    """(source, ref) of a manifest key; ref is "" for a source's default entry."""
    source, _, ref = key.partition(SEPARATOR)
    return source, ref


def is_doc_source(text: str) -> bool:
    """Whether `text` (the part of a document id before ':') can name an entry: a source
    name, or "source@ref"."""
    return bool(DOC_SOURCE.fullmatch(text))


def supported_ref_name(name: str) -> bool:
    """Whether a branch or tag can be indexed under its short name (REF_NAME, at most
    MAX_REF_CHARS characters, none of git's forbidden forms)."""
    return (
        len(name) <= MAX_REF_CHARS
        and bool(REF_NAME.fullmatch(name))
        and ".." not in name
        and not name.endswith((".lock", "."))
        and ".lock/" not in name
    )


def pattern_selects(pattern: str, kind: RefKind, name: str) -> bool:
    """Whether a `refs` pattern selects the branch or tag `name` (short). A short pattern
    selects branches and tags alike; refs/heads/... only branches, refs/tags/... only tags.
    `*` matches any characters, '/' included (fnmatch, as sh's `case` does in the hook)."""
    for prefix_kind, prefix in _PREFIXES.items():
        if pattern.startswith(prefix):
            return kind == prefix_kind and fnmatch.fnmatchcase(name, pattern[len(prefix) :])
    return fnmatch.fnmatchcase(name, pattern)


def selected(patterns: Iterable[str], kind: RefKind, name: str) -> bool:
    return any(pattern_selects(p, kind, name) for p in patterns)


def file_stem(key: str) -> str:
    """A key as a file name (page tables): '/' becomes '~', which no git ref contains."""
    return key.replace("/", "~")


# --- for readers ---------------------------------------------------------------------------


def base_of(key: str, state: SourceState) -> str:
    """The configured source an entry belongs to (manifests before refs: the key)."""
    return state.base or key


def entries_of(sources: Mapping[str, SourceState], source: str) -> dict[str, str]:
    """A source's indexed refs: short ref name -> manifest key, the default ref first (under
    its branch name; "" when the manifest does not record it)."""
    found = {
        state.ref: key
        for key, state in sources.items()
        if base_of(key, state) == source and state.default_ref
    }
    found.update(
        (state.ref, key)
        for key, state in sorted(sources.items())
        if base_of(key, state) == source and not state.default_ref
    )
    return found


def resolve_ref(sources: Mapping[str, SourceState], source: str, ref: str) -> str | None:
    """The manifest key for a `ref` argument, named any way docdex names it: "" (or the
    default ref's name, or the source's own) is the source's own entry; a branch or tag
    name, short or refs/heads/..., refs/tags/..., or the entry's "source@ref", is its entry
    "source@ref". A full name keeps its kind (`refs/tags/v2` is never the branch v2; a
    branch may be named `refs/tags/v1`, whose full name is `refs/heads/refs/tags/v1`). None
    when the source does not index that ref (another source's "other@ref" included)."""
    if ref == "":
        return source if source in sources else None
    named, separator, short = ref.partition(SEPARATOR)
    if separator:  # no ref name holds '@' (config.py): the entry's name
        return resolve_ref(sources, source, short) if named == source and short else None
    kind, name = _kind_and_name(ref)
    if kind is None:
        found = entries_of(sources, source).get(name)
        return found or (resolve_ref(sources, source, "") if name == source else None)
    for key, state in sources.items():
        if base_of(key, state) == source and (state.ref_kind, state.ref) == (kind, name):
            return key
    return None


class UnknownRef(NotFound):
    """A ref no source indexes. Its sentence ends with where the caller sees the refs: the
    MCP tool by default; an entry point that has its own way says so (`pointing_to`)."""

    def __init__(self, fact: str, where: str = "list_sources shows each source's refs") -> None:
        super().__init__(f"{fact}; {where}")
        self.fact = fact

    def pointing_to(self, where: str) -> UnknownRef:
        return UnknownRef(self.fact, where)


def _kind_and_name(ref: str) -> tuple[RefKind | None, str]:
    for kind, prefix in _PREFIXES.items():
        if ref.startswith(prefix):
            return kind, ref[len(prefix) :]
    return None, ref
