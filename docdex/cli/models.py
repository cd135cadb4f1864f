"""`docdex model list`: the configured embedder and reranker, their identities, and
whether each loads or answers here."""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from pathlib import Path

import msgspec

from docdex.errors import DocdexError
from docdex.index_format.config import Config, load_config
from docdex.index_format.layout import DataDir
from docdex.index_format.model_tables import MINILM, RerankEndpoint
from docdex.index_format.records import EmbedderInfo
from docdex.model.model_environment import ModelEnvironment

from .commands import EXIT_ERROR, EXIT_OK, Commands, Context, add_command, json_flag, print_answer

# Logged once per data directory (a warning, in the log format asked for) by `docdex index`
# once a run has succeeded and by `docdex serve` while it embeds with the float32 graph, which
# new data directories no longer use (adr/0041).
FLOAT32_NOTICE = (
    "this data directory embeds with minilm (float32); new ones use minilm-int8, "
    "1.4x as fast: `docdex settings set embedder minilm-int8` re-embeds everything once"
)
NOTICE_SAID = "embedder-notice"  # under state/: the notice was said


def say_embedder_notice(data: DataDir, config: Config | None = None) -> None:
    """FLOAT32_NOTICE, the first time a command runs on a data directory configured with
    the float32 graph; nothing on a configuration that does not load (the command says why)."""
    try:
        embedder = (config or load_config(data)).settings.embedder
    except DocdexError:
        return
    said = data.state / NOTICE_SAID
    if embedder != MINILM or said.exists():
        return
    logging.getLogger("docdex.cli").warning(FLOAT32_NOTICE)
    with contextlib.suppress(OSError):  # a data directory it may not write: said next time too
        said.parent.mkdir(parents=True, exist_ok=True)
        said.touch()


class ModelStatus(msgspec.Struct, frozen=True):
    role: str  # "embedder" | "reranker"
    name: str  # "minilm", a [models.NAME], or the reranker setting
    kind: str  # minilm | onnx | openai | rerank | cross-encoder | built-in
    where: str  # the directory or the address ("" when built in)
    identity: str  # what a manifest records and content hashes are keyed by ("" if unknown)
    dim: int
    ok: bool
    status: str  # a sentence: loads / answers, or why not
    served: bool = False  # the current version was built with it


def add_commands(commands: Commands) -> None:
    model = commands.add_parser("model", help="the configured embedder and reranker")
    actions = model.add_subparsers(metavar="ACTION")
    listing = add_command(
        actions,
        "list",
        cmd_model_list,
        "show the configured embedder and reranker, their identities, and whether each "
        "loads or answers",
    )
    json_flag(listing)
    pull = add_command(
        actions,
        "pull",
        cmd_model_pull,
        "fetch an ONNX export from a model hub into the data directory's models/ (once, "
        "never at run time) and add it as a [models.NAME] table",
    )
    pull.add_argument("repo", metavar="REPO_ID", help="e.g. intfloat/e5-small-v2")
    pull.add_argument("--revision", default="main", help="a branch, tag or commit (default main)")
    pull.add_argument(
        "--hub", help="the hub's address (default: $HF_ENDPOINT, else huggingface.co)"
    )
    pull.add_argument("--name", help="the [models.NAME] to add (default: the repository's name)")


def cmd_model_list(ctx: Context, args: argparse.Namespace) -> int:
    from docdex.index_format.store import load_current  # numpy: after the parse

    config = load_config(ctx.data)
    try:
        current = load_current(ctx.data)
    except DocdexError:
        current = None
    served = current.embedder if current is not None else None
    models = ctx.model_environment
    rows = [embedder_status(config, served, models), reranker_status(config, models)]
    print_answer(rows, args.json, lambda r: _print(r, served))
    return EXIT_OK if all(r.ok for r in rows) else EXIT_ERROR


def cmd_model_pull(ctx: Context, args: argparse.Namespace) -> int:
    from docdex.index_format.config import save_config
    from docdex.index_format.model_tables import OnnxEmbedder
    from docdex.model.hub import DEFAULT_HUB, pull

    config = load_config(ctx.data)  # a bad docdex.toml stops here, before any download
    variables = ctx.model_environment.variables
    hub = args.hub or variables.get("HF_ENDPOINT") or DEFAULT_HUB
    pulled = pull(args.repo, ctx.data.root / "models", args.revision, hub, variables)
    name = args.name or args.repo.rsplit("/", 1)[-1]
    models = {**config.models, name: OnnxEmbedder(path=str(pulled.folder))}
    save_config(ctx.data, msgspec.structs.replace(config, models=models))
    print(
        f"pulled {pulled.repo} at {pulled.commit} into {pulled.folder} ({len(pulled.files)} files)"
    )
    print(
        f'added [models.{name}]; use it with `embedder = "{name}"` in [settings] (and its '
        "query_prefix/passage_prefix if the model wants them)"
    )
    return EXIT_OK


def embedder_status(
    config: Config, served: EmbedderInfo | None, model_environment: ModelEnvironment
) -> ModelStatus:
    from docdex.model.choice import describe, embedder_identity, load_embedder

    settings, spec = config.settings, config.embedder_spec()
    view = describe(settings.embedder, spec)
    info: EmbedderInfo | None = None
    try:
        info = embedder_identity(
            spec,
            settings.window_tokens,
            settings.window_overlap,
            served,
            model_environment=model_environment,
        )
        model = load_embedder(
            spec,
            threads=settings.cores(),
            window_tokens=settings.window_tokens,
            window_overlap=settings.window_overlap,
            for_queries=True,
            info=info if spec is not None else None,
            model_environment=model_environment,
        )
        dim = len(model.embed_query("docdex"))
        ok, status = True, f"{'answers' if view.kind == 'openai' else 'loads'}: {dim} dimensions"
    except DocdexError as exc:
        ok, status = False, str(exc)
    return ModelStatus(
        role="embedder",
        name=view.name,
        kind=view.kind,
        where=view.where,
        identity=info.id if info else "",
        dim=info.dim if info else 0,
        ok=ok,
        status=status,
        served=served is not None and info is not None and served.id == info.id,
    )


def reranker_status(config: Config, model_environment: ModelEnvironment) -> ModelStatus:
    name = config.settings.reranker
    spec = config.reranker_spec()
    if spec is not None:
        return _rerank_endpoint_status(name, spec, model_environment)
    if name.startswith("cross-encoder:"):
        folder = Path(name.split(":", 1)[1]).expanduser()
        missing = [f for f in ("model.onnx", "tokenizer.json") if not (folder / f).is_file()]
        status = f"{folder} lacks {', '.join(missing)}" if missing else "its files are there"
        return ModelStatus(
            "reranker", name, "cross-encoder", str(folder), "", 0, not missing, status
        )
    from docdex.server.engine import RerankerError, check_reranker_name

    try:
        check_reranker_name(name)
        known, status = True, "built in"
    except RerankerError:
        known, status = False, f"unknown reranker {name!r}"
    return ModelStatus("reranker", name, "built-in", "", "", 0, known, status)


def _rerank_endpoint_status(
    name: str, spec: RerankEndpoint, model_environment: ModelEnvironment
) -> ModelStatus:
    from docdex.model.rerank_endpoint import RemoteReranker

    try:
        RemoteReranker(spec, environ=model_environment.variables).scores("docdex", ["docdex"])
        ok, status = True, "answers"
    except DocdexError as exc:
        ok, status = False, str(exc)
    return ModelStatus("reranker", name, "rerank", spec.url, "", 0, ok, status)


def _print(rows: list[ModelStatus], served: EmbedderInfo | None) -> None:
    for row in rows:
        where = f" {row.where}" if row.where else ""
        identity = f"  identity {row.identity}" if row.identity else ""
        mark = "ok" if row.ok else "FAILS"
        print(f"{row.role}: {row.name} ({row.kind}){where}{identity}")
        print(f"  {mark}: {row.status}")
    embedder = rows[0]
    if served is not None and not embedder.served and embedder.identity:
        print(
            f"the current version was built with {served.id}: the next `docdex index` embeds "
            "every source again with this embedder (the current version serves meanwhile)"
        )
    sys.stdout.flush()
