"""Configuration: a data directory's docdex.toml (settings and sources). Where the data
directory is comes from the environment (runtime/environment.py) or the command line."""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import AoT, Table
from tomlkit.toml_document import TOMLDocument

from docdex.errors import ConfigError, DocdexError

from .layout import DataDir, write_atomic
from .model_tables import (
    BUILT_IN_EMBEDDERS,
    EMBEDDER_KINDS,
    MINILM,
    MINILM_INT8,
    EmbedderSpec,
    ModelSpec,
    RerankEndpoint,
    model_problem,
)
from .records import CHUNKER_RULES, WINDOW_OVERLAP, WINDOW_TOKENS, ChunkerSettings

DEFAULT_INCLUDE = ["**/*.md", "**/*.markdown", "**/*.mdx"]
# What a new source skips unless asked: hidden folders (.github, .claude, .vitepress...: tooling,
# which the site generators skip too), dependencies, test data and agents' instruction files.
DEFAULT_EXCLUDE = [
    "**/.*/**",
    "**/node_modules/**",
    "**/vendor/**",
    "**/fixtures/**",
    "**/__fixtures__/**",
    "**/testdata/**",
    "**/CLAUDE.md",
    "**/AGENTS.md",
]
SOURCE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
# The short name of a branch or tag a source's `refs` may index (a subset of what git allows:
# no '@', ':' or '#', so that "source@ref:path#chunkN" splits one way only).
_REF_PART = r"[A-Za-z0-9_+-][A-Za-z0-9._+-]*"
REF_NAME = re.compile(rf"{_REF_PART}(?:/{_REF_PART})*")
MAX_REF_CHARS = 128
# The part of a document id before ':' (index-format/ref_names.py): a source, or "source@ref".
DOC_SOURCE = re.compile(rf"{SOURCE_NAME.pattern}(?:@{REF_NAME.pattern})?")


SourceKind = Literal["bare", "checkout", "remote"]
_CHUNKER = ChunkerSettings()  # the chunker's defaults are the format's
MERGED_SEGMENTS = 8  # streamed segments' worth of chunks in one merged segment, by default


class SourceError(DocdexError):
    """A source cannot be read: its location is no repository, a branch name is not valid, a
    commit is missing, a fetch failed..."""


class Settings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    keep_versions: int = 3
    budget_chars: int = _CHUNKER.budget_chars
    section_levels: int = _CHUNKER.section_levels
    min_alnum: int = _CHUNKER.min_alnum
    window_tokens: int = WINDOW_TOKENS
    window_overlap: int = WINDOW_OVERLAP
    max_file_bytes: int = 2_000_000
    max_segments: int = 4  # more small segments than this in one size tier are merged
    # a run writes its new chunks as a segment whenever this many are pending (bounds its
    # memory); a segment of this many chunks or more is full and never merged for its count
    segment_chunks: Annotated[int, msgspec.Meta(ge=1)] = 8192
    # compaction merges segments into ones of up to this many chunks (0 = MERGED_SEGMENTS
    # times segment_chunks), so a large corpus is a few large graphs; a segment this big is
    # full and is rewritten only to drop dead chunks (adr/0024)
    merged_chunks: Annotated[int, msgspec.Meta(ge=0)] = 0
    threads: int = 0  # embedder threads; 0 = all cores
    nice: int = 10  # niceness of background indexing (worker)
    # the worker kills an indexing cycle that runs longer
    cycle_timeout_s: Annotated[int, msgspec.Meta(ge=1)] = 3600
    # one source's share of a worker's cycle: past it the source fails on its own, keeping its
    # last indexed pages, and the others publish (0 = half of cycle_timeout_s)
    source_timeout_s: Annotated[int, msgspec.Meta(ge=0)] = 0
    # default | none | maxsim | cross-encoder:/path/to/onnx-dir | NAME of a rerank [models.NAME]
    reranker: str = "default"
    # "minilm" (the shipped model), "minilm-int8" (its int8 passage graph, what a new data
    # directory names: NEW_DATA_DIRECTORY) or the name of a [models.NAME] table (model_tables.py):
    # changing it re-embeds every source into a new version while the old one keeps serving
    embedder: str = MINILM
    late_interaction: bool = False  # write token vectors for MaxSim (ADR 0006; ~70 B/token)
    # a batch of new pages with more texts to embed than this is published for keywords first
    # and embedded after, a version published every this many texts (adr/0042; 0 = embed
    # before publishing)
    keywords_first: Annotated[int, msgspec.Meta(ge=0)] = 256
    # while a run reads an entry the index does not hold yet (a new source or ref, a first
    # index), it publishes the pages read so far every this many seconds, the entry marked
    # as being read (adr/0042; 0 = only once it is read whole)
    partial_every_s: Annotated[float, msgspec.Meta(ge=0)] = 20.0
    # /health says "stale" once a ref's tip has been ahead of its index this long (the hook,
    # the worker or the poller is not doing its job)
    stale_after_s: int = 900

    def cores(self) -> int:
        """Threads for embedding and graph building: `threads`, else every core."""
        return self.threads or os.cpu_count() or 1

    def full_segment_chunks(self) -> int:
        """The size at which a segment is full. With token vectors, merges stay at
        `segment_chunks`: a merge holds its output's token rows in memory (about 7 KB a
        window), which at the merged size would outgrow the memory of a whole index run."""
        if self.late_interaction:
            return self.segment_chunks
        return max(self.merged_chunks or MERGED_SEGMENTS * self.segment_chunks, self.segment_chunks)

    def chunker(self) -> ChunkerSettings:
        return ChunkerSettings(
            budget_chars=self.budget_chars,
            section_levels=self.section_levels,
            min_alnum=self.min_alnum,
            rules=CHUNKER_RULES,
        )


class SourceConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    name: str
    location: str
    branch: str = ""  # empty: the repository's HEAD branch
    # more branches and tags to index, each as its own entry "name@ref" (index-format/ref_names.py):
    # short names or refs/heads/..., refs/tags/..., where `*` matches any characters
    refs: list[str] = []
    include: list[str] = msgspec.field(default_factory=lambda: list(DEFAULT_INCLUDE))
    exclude: list[str] = msgspec.field(default_factory=lambda: list(DEFAULT_EXCLUDE))
    poll_interval: int = 1800  # seconds, remote sources only
    description: str = ""  # one line on what the source holds, for agents (list_sources)
    # Where people read a file: a template with {commit} {path} {start_line} {end_line} {ref}
    # {source}; "" = a preset when the location (or a checkout's origin) is a known forge
    url_template: str = ""
    site_url: str = ""  # a published site of these docs: a page's address under it
    site_dir: str = ""  # the folder that is the site's root ("" = docs/ or content/ if used)
    drafts: bool = False  # index pages whose front matter says `draft: true` (adr/0018)


class Config(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    settings: Settings = Settings()
    sources: list[SourceConfig] = []
    models: dict[str, ModelSpec] = {}  # [models.NAME] tables: embedders and rerankers

    def embedder_spec(self) -> EmbedderSpec | None:
        """The configured embedder (None: the shipped one)."""
        name = self.settings.embedder
        if name in BUILT_IN_EMBEDDERS and name not in self.models:
            return BUILT_IN_EMBEDDERS[name]
        spec = self.models.get(name)
        if spec is None or isinstance(spec, RerankEndpoint):
            raise ConfigError(models_problem(self))  # load_config refuses such a file
        return spec

    def reranker_spec(self, name: str | None = None) -> RerankEndpoint | None:
        """The rerank endpoint the reranker `name` (None: the `reranker` setting) names, if
        it names one."""
        spec = self.models.get(self.settings.reranker if name is None else name)
        return spec if isinstance(spec, RerankEndpoint) else None

    def source(self, name: str) -> SourceConfig:
        for source in self.sources:
            if source.name == name:
                return source
        raise ConfigError(f"unknown source {name!r}; {self.describe_sources()}")

    def describe_sources(self) -> str:
        if not self.sources:
            return "no sources are configured (add one with `docdex source add NAME LOCATION`)"
        return "configured sources: " + ", ".join(s.name for s in self.sources)


# What a data directory without docdex.toml starts from: passages through the int8 graph
# (adr/0041). A file that names no embedder means "minilm", the float32 graph every data
# directory made before embeds with, so those keep their vectors until the user switches.
NEW_DATA_DIRECTORY = Config(settings=Settings(embedder=MINILM_INT8))


def load_config(data: DataDir) -> Config:
    try:
        text = data.config.read_text(encoding="utf-8")
    except FileNotFoundError:
        return NEW_DATA_DIRECTORY
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{data.config} is not valid TOML: {exc}") from None
    return parse_config(text, data.config)


def parse_config(text: str, where: Path) -> Config:
    """The configuration `text` (the file `where`) holds, checked: every command that
    reads or writes docdex.toml checks it this one way."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where} is not valid TOML: {exc}") from None
    try:
        config = msgspec.convert(raw, Config)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    problem = models_problem(config)
    if problem:
        raise ConfigError(f"{where}: {problem}")
    return config


def models_problem(config: Config) -> str:
    """Why the models the settings name cannot be used ("" = they can)."""
    for table, model in config.models.items():
        problem = model_problem(table, model)
        if problem:
            return problem
    settings = config.settings
    name = settings.embedder
    if name not in BUILT_IN_EMBEDDERS or name in config.models:
        spec = config.models.get(name)
        if spec is None:
            embedders = (n for n, s in config.models.items() if not isinstance(s, RerankEndpoint))
            known = ", ".join(embedders)
            return (
                f'embedder {name!r} is neither "minilm", "minilm-int8" nor a [models.{name}] table'
                + (f" (embedders configured: {known})" if known else "")
                + f"; a [models.NAME] table has kind = one of {EMBEDDER_KINDS}"
            )
        if isinstance(spec, RerankEndpoint):
            return f"embedder {name!r} names a rerank endpoint, not an embedder"
        if settings.late_interaction:
            return (
                "late_interaction stores the shipped model's token vectors: it needs "
                f'embedder = "minilm", not {name!r}'
            )
    named = config.models.get(settings.reranker)
    if named is not None and not isinstance(named, RerankEndpoint):
        return f"reranker {settings.reranker!r} names an embedder, not a rerank endpoint"
    return ""


def save_config(data: DataDir, config: Config) -> None:
    """Write `config` into docdex.toml, changing only the keys and tables whose values
    differ: the user's comments, order and layout stay (edit_config)."""
    edit_config(data, lambda document: _reconcile(document, config))


def edit_config(data: DataDir, change: Callable[[TOMLDocument], None]) -> Config:
    """docdex.toml as written (a new one holds every setting of NEW_DATA_DIRECTORY), changed
    by `change` and checked as load_config checks it, then written; the new configuration. A
    change the check refuses writes nothing."""
    document = config_document(data)
    change(document)
    text = tomlkit.dumps(document)
    config = parse_config(text, data.config)
    data.root.mkdir(parents=True, exist_ok=True)
    write_atomic(data.config, text.encode("utf-8"))
    return config


def settings_table(document: TOMLDocument) -> Table:
    """The document's [settings] table (added when missing)."""
    return _table(document, "settings")


def config_document(data: DataDir) -> TOMLDocument:
    """docdex.toml as written, comments included (a new one: NEW_DATA_DIRECTORY's settings)."""
    try:
        text = data.config.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = to_toml(NEW_DATA_DIRECTORY)
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{data.config} is not valid TOML: {exc}") from None
    try:
        return tomlkit.parse(text)
    except TOMLKitError as exc:
        raise ConfigError(f"{data.config} is not valid TOML: {exc}") from None


def _reconcile(document: TOMLDocument, config: Config) -> None:
    """Make `document` say what `config` says, touching only what differs."""
    _update(settings_table(document), config.settings)
    _update_sources(document, config.sources)
    models = _table(document, "models", super_table=True) if config.models else None
    if models is None and "models" in document:
        del document["models"]
    if models is not None:
        for name in [key for key in models if key not in config.models]:
            del models[name]
        for name, spec in config.models.items():
            _update(_table(models, name), spec)


def _update_sources(document: TOMLDocument, sources: list[SourceConfig]) -> None:
    tables = document.get("sources")
    if not isinstance(tables, AoT):  # missing, or written as an inline array
        tables = tomlkit.aot()
        document["sources"] = tables
    wanted = {source.name: source for source in sources}
    for index in reversed(range(len(tables))):
        if tables[index].get("name") not in wanted:
            del tables[index]
    written = {table.get("name"): table for table in tables}
    for source in sources:
        table = written.get(source.name)
        if table is None:
            table = tomlkit.table()
            tables.append(table)
        _update(table, source)
    if not sources:
        del document["sources"]


def _table(parent: Any, key: str, super_table: bool = False) -> Table:
    table = parent.get(key)
    if not isinstance(table, Table):
        table = tomlkit.table(is_super_table=super_table)
        parent[key] = table
    return table


def _update(table: Table, struct: msgspec.Struct) -> None:
    """Set the keys of `table` whose values differ from `struct`'s; a key not written
    stays unwritten while its value is the default; a key the struct lacks goes."""
    values: dict[str, object] = msgspec.to_builtins(struct)
    defaults = _defaults(type(struct))
    for key in [key for key in table if key not in values]:
        del table[key]
    for key, value in values.items():
        if key in table:
            if _plain(table[key]) != value:
                table[key] = value
        elif key not in defaults or defaults[key] != value:
            table[key] = value


def _plain(item: object) -> object:
    unwrap = getattr(item, "unwrap", None)
    return unwrap() if unwrap is not None else item


def _defaults(struct_type: type[msgspec.Struct]) -> Mapping[str, object]:
    """Each field's default, as TOML writes it."""
    out: dict[str, object] = {}
    for field in msgspec.structs.fields(struct_type):
        if field.default is not msgspec.NODEFAULT:
            out[field.name] = msgspec.to_builtins(field.default)
        elif field.default_factory is not msgspec.NODEFAULT:
            out[field.name] = msgspec.to_builtins(field.default_factory())
    return out


def validate_source_name(name: str) -> str:
    if not SOURCE_NAME.fullmatch(name):
        raise ConfigError(
            f"invalid source name {name!r}: use 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return name


def validate_ref_pattern(pattern: str) -> str:
    """A `refs` pattern: a branch or tag name (short, or refs/heads/..., refs/tags/...) in
    which `*`, `?` and `[...]` are wildcards, as fnmatch and sh's `case` read them."""
    name = pattern.removeprefix("refs/heads/").removeprefix("refs/tags/")
    if not name or len(pattern) > 2 * MAX_REF_CHARS or _BAD_PATTERN.search(pattern):
        raise ConfigError(
            f"invalid ref pattern {pattern!r}: give a branch or tag name such as main, "
            "release/* or v2.* (optionally refs/heads/... or refs/tags/...), without spaces, "
            "quotes, backslashes, ':', '^' or '~'"
        )
    if name.startswith("refs/"):
        raise ConfigError(f"invalid ref pattern {pattern!r}: only refs/heads/ and refs/tags/")
    return pattern


_BAD_PATTERN = re.compile(r"[\s\x00-\x1f\x7f\\\"':^~]")


# --- source locations ----------------------------------------------------------------------

_URL_SCHEMES = ("https", "http", "ssh", "git", "file")
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
# git's rule for scp-like addresses: a colon with no slash before it, e.g. git@host:org/x.git
_SCP_LIKE = re.compile(r"^(?:[^@/:\s]+@)?[^@/:\s]+:")


def source_kind(location: str) -> SourceKind:
    if not location.strip():
        raise SourceError("the source's location is empty; give a path or a URL")
    url = _URL.match(location)
    if url:
        if url.group(1).lower() not in _URL_SCHEMES:
            raise SourceError(
                f"{location!r} uses an unsupported URL scheme {url.group(1)!r}; "
                f"use one of {', '.join(_URL_SCHEMES)} or user@host:path"
            )
        return "remote"
    path = Path(location).expanduser()
    if _SCP_LIKE.match(location) and not path.exists():
        return "remote"
    if not path.is_dir():
        raise SourceError(f"{location!r} is not a git repository (no such directory)")
    if (path / ".git").exists():  # a directory, or a file in worktrees and submodules
        return "checkout"
    if (path / "HEAD").is_file() and (path / "objects").is_dir() and (path / "refs").is_dir():
        return "bare"
    raise SourceError(
        f"{location!r} is not a git repository (neither a work tree with .git nor a bare "
        "repository with HEAD, objects/ and refs/)"
    )


def to_toml(config: Config) -> str:
    """TOML for our own flat structure (tables of scalars and string lists)."""
    lines = ["[settings]"]
    lines += _toml_pairs(msgspec.to_builtins(config.settings))
    for source in config.sources:
        lines += ["", "[[sources]]"]
        lines += _toml_pairs(msgspec.to_builtins(source))
    for name, spec in config.models.items():
        lines += ["", f"[models.{json.dumps(name, ensure_ascii=False)}]"]
        lines += _toml_pairs(msgspec.to_builtins(spec))
    return "\n".join(lines) + "\n"


def _toml_pairs(table: dict[str, object]) -> list[str]:
    return [f"{key} = {_toml_value(value)}" for key, value in table.items()]


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)  # a JSON string is a TOML basic string
