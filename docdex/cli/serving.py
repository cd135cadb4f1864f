"""`docdex serve` (MCP over HTTP, the page, the worker beside it) and `docdex mcp` (MCP over
stdin/stdout)."""

from __future__ import annotations

import argparse
from concurrent.futures import Future
from typing import TYPE_CHECKING

from .commands import Commands, Context, add_command
from .models import say_embedder_notice

if TYPE_CHECKING:
    from docdex.model.protocol import TextEmbedder as Embedder
    from docdex.server.http.oauth.settings import AuthSettings


def add_commands(commands: Commands) -> None:
    serve = add_command(commands, "serve", cmd_serve, "run the MCP server", daemon=True)
    serve.add_argument("--host", help="address to bind (default: $DOCDEX_HOST, else 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default: $DOCDEX_PORT, else 8085)")
    serve.add_argument(
        "--insecure", action="store_true", help="allow a non-loopback address without DOCDEX_TOKEN"
    )
    serve.add_argument(
        "--no-worker", action="store_true", help="do not run the indexing worker beside it"
    )
    serve.add_argument(
        "--auth",
        choices=("token", "oauth", "jwt"),
        help="token: $DOCDEX_TOKEN only; oauth: docdex's own OAuth authorization server "
        "(clients that know only the URL connect; the owner approves each with "
        "$DOCDEX_ADMIN_SECRET); jwt: tokens of an identity provider ($DOCDEX_JWKS_URL, "
        "$DOCDEX_JWT_ISSUER). $DOCDEX_TOKEN keeps working beside either (default: "
        "$DOCDEX_AUTH, else token)",
    )
    serve.add_argument(
        "--public-url",
        help="the https address clients reach (e.g. https://docs.example.com): the OAuth "
        "resource and issuer (default: $DOCDEX_PUBLIC_URL, else http://HOST:PORT on loopback)",
    )
    mcp = add_command(
        commands,
        "mcp",
        cmd_mcp,
        "the MCP server over stdin/stdout, for clients that launch it (reads the index only)",
        daemon=True,
    )
    mcp.add_argument(
        "--watch",
        action="store_true",
        help="also index the checkout sources' working trees as they change, as `docdex "
        "watch` does, unless another process already watches them",
    )


def cmd_serve(ctx: Context, args: argparse.Namespace) -> int:
    from docdex.server.http.access import check_bind

    environment = ctx.environment
    host = args.host or environment.host
    port = environment.port if args.port is None else args.port
    auth = _auth_settings(ctx, args, host, port)  # refused before any work, as the bind is
    check_bind(host, environment.token, args.insecure, auth.oauth, _has_named_token(ctx))
    say_embedder_notice(ctx.data)
    model = _start_model(ctx)
    from docdex.indexer.triggers.background import Background
    from docdex.server.http.app import HttpSettings, serve

    settings = HttpSettings(
        host=host,
        port=port,
        token=environment.token,
        allowed_hosts=environment.allowed_hosts,
        limits=environment.connections,
        insecure=args.insecure,
        auth=auth,
    )
    background = Background(ctx.data, ctx.logs, worker=not args.no_worker)  # once listening
    try:
        return serve(ctx.data, settings, model, background.start, ctx.model_environment)
    finally:
        background.stop()


def cmd_mcp(ctx: Context, args: argparse.Namespace) -> int:
    model = _start_model(ctx)
    from docdex.server.mcp.stdio import serve_stdio

    if not args.watch:
        return serve_stdio(ctx.data, model, ctx.model_environment)
    from docdex.indexer.triggers.watch import watching_in_background

    ctx.data.ensure()
    with watching_in_background(ctx.data, ctx.model_environment):
        return serve_stdio(ctx.data, model, ctx.model_environment)


def _auth_settings(ctx: Context, args: argparse.Namespace, host: str, port: int) -> AuthSettings:
    from docdex.server.http.oauth.settings import AuthMode, JwtSettings, auth_settings

    environment = ctx.environment
    jwt = JwtSettings(
        jwks_url=environment.jwks_url,
        issuer=environment.jwt_issuer,
        audience=environment.jwt_audience,
    )
    return auth_settings(
        AuthMode(args.auth or environment.auth or "token"),
        args.public_url or environment.public_url,
        host,
        port,
        admin_secret=environment.admin_secret,
        jwt=jwt,
    )


def _has_named_token(ctx: Context) -> bool:
    """Whether `docdex auth token` made a token, which the server then requires."""
    from docdex.server.http.named_tokens import NamedTokens

    return NamedTokens(ctx.data.state).any()


def _start_model(ctx: Context) -> Future[Embedder]:
    """The query model, loading in a thread while the caller imports the server (adr/0008);
    glibc's malloc arenas are capped first, before any thread starts."""
    from docdex.server.memory import limit_malloc_arenas
    from docdex.server.query_model import start_loading

    limit_malloc_arenas(preset=ctx.environment.malloc_arena_max)
    return start_loading(ctx.data, ctx.model_environment)
