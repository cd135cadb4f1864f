"""`docdex auth clients`, `docdex auth token NAME [--source S]...` and `docdex auth revoke
ID`: the OAuth clients `docdex serve --auth oauth` registered and the named tokens made here,
each with the sources it may read; a new named token; ending a client or a token. They read
and change state/oauth.json under its lock, so a running server refuses a revoked client's
tokens at its next request."""

from __future__ import annotations

import argparse
import re
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from docdex.server.http.oauth.authorization_server.token_store import TokenRecord

from .commands import EXIT_ERROR, EXIT_OK, Commands, Context, add_command, json_flag, print_answer

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class ClientEntry(msgspec.Struct, kw_only=True):
    client_id: str  # a named token's name
    client_name: str
    redirect_uris: list[str]
    registered: str
    last_authorized: str  # "" when never
    tokens: int  # live access and refresh tokens
    scopes: list[str]  # what its live tokens grant
    sources: list[str] | None  # what its live tokens may read (None: every source)
    kind: str = "oauth"  # "oauth": a registered client; "token": a named static token


def add_commands(commands: Commands) -> None:
    auth = commands.add_parser(
        "auth", help="who may call `docdex serve`: OAuth clients and named tokens"
    )
    actions = auth.add_subparsers(metavar="ACTION")
    listing = add_command(
        actions, "clients", cmd_clients, "list the OAuth clients and named tokens, with sources"
    )
    json_flag(listing)
    token = add_command(
        actions,
        "token",
        cmd_token,
        "make a bearer token named NAME, printed once (the server keeps only its hash)",
    )
    token.add_argument("name", metavar="NAME")
    token.add_argument(
        "--source",
        action="append",
        default=[],
        metavar="SOURCE",
        help="a source the token may read (repeat for more; none: every source)",
    )
    token.add_argument(
        "--no-reindex", action="store_true", help="the token may search and read, not reindex"
    )
    revoke = add_command(
        actions, "revoke", cmd_revoke, "forget a client, or a named token, and end its tokens"
    )
    revoke.add_argument("client_id", metavar="CLIENT_ID|NAME")


def cmd_clients(ctx: Context, args: argparse.Namespace) -> int:
    from docdex.server.http.oauth.authorization_server.token_store import OAuthStore

    state = OAuthStore(ctx.data.state).snapshot()
    now = datetime.now(UTC).timestamp()
    entries = []
    for client_id, client in sorted(state.clients.items(), key=lambda c: c[1].registered_at):
        live = [
            t
            for t in (*state.access.values(), *state.refresh.values())
            if t.client_id == client_id and t.expires_at > now
        ]
        entries.append(
            ClientEntry(
                client_id=client_id,
                client_name=str(client.info.get("client_name") or ""),
                redirect_uris=[str(u) for u in client.info.get("redirect_uris") or []],
                registered=_when(client.registered_at),
                last_authorized=_when(client.last_issued_at),
                tokens=len(live),
                scopes=sorted({s for t in live for s in t.scopes}),
                sources=_sources_of(live),
            )
        )
    entries += [
        ClientEntry(
            client_id=t.name,
            client_name="",
            redirect_uris=[],
            registered=_when(t.created_at),
            last_authorized="",
            tokens=1,
            scopes=sorted(t.scopes),
            sources=None if t.sources is None else sorted(t.sources),
            kind="token",
        )
        for t in sorted(state.static.values(), key=lambda t: t.created_at)
    ]
    print_answer(entries, args.json, _print_clients)
    return EXIT_OK


def cmd_token(ctx: Context, args: argparse.Namespace) -> int:
    from docdex.index_format.config import load_config
    from docdex.server.http.oauth.authorization_server.token_store import OAuthStore
    from docdex.server.http.oauth.settings import ALL_SCOPES, READ_SCOPE

    if not NAME.fullmatch(args.name):
        return _error("a token's name is letters, digits, '.', '_' and '-' (64 at most)")
    configured = {s.name for s in load_config(ctx.data).sources}
    unknown = sorted(set(args.source) - configured)
    if unknown:
        known = ", ".join(sorted(configured)) or "none yet"
        return _error(f"no source {', '.join(unknown)} is configured (sources: {known})")
    scopes = [READ_SCOPE] if args.no_reindex else list(ALL_SCOPES)
    sources = sorted(set(args.source)) or None
    ctx.data.state.mkdir(parents=True, exist_ok=True)
    token = OAuthStore(ctx.data.state).add_static(args.name, scopes, sources)
    reads = ", ".join(sources) if sources else "every source"
    print(token)
    print(
        f"token {args.name}: reads {reads}; {' '.join(scopes)}. It is shown once only: the "
        "server keeps its hash. A server started with no token at all requires tokens from "
        f"its next start. End it with `docdex auth revoke {args.name}`.",
        file=sys.stderr,
    )
    return EXIT_OK


def cmd_revoke(ctx: Context, args: argparse.Namespace) -> int:
    from docdex.server.http.oauth.authorization_server.token_store import OAuthStore

    ended = OAuthStore(ctx.data.state).revoke_client(args.client_id)
    if ended < 0:
        return _error(f"no OAuth client or named token {args.client_id!r} exists")
    print(f"revoked {args.client_id}: {ended} token(s) ended; it must be approved again")
    return EXIT_OK


def _error(message: str) -> int:
    print(f"docdex: error: {message}", file=sys.stderr)
    return EXIT_ERROR


def _sources_of(tokens: list[TokenRecord]) -> list[str] | None:
    """What a client's live tokens may read together (None: one of them reads every source)."""
    if any(t.sources is None for t in tokens):
        return None
    return sorted({name for t in tokens for name in t.sources or []})


def _when(seconds: float) -> str:
    if not seconds:
        return ""
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds")


def _print_clients(entries: list[ClientEntry]) -> None:
    if not entries:
        print("no OAuth client is registered")
    for e in entries:
        name = f" ({e.client_name})" if e.client_name else ""
        scopes = " ".join(e.scopes) or "no live token"
        used = (
            f", last authorized {e.last_authorized}" if e.last_authorized else ", never authorized"
        )
        reads = "every source" if e.sources is None else ", ".join(e.sources) or "no source"
        if e.kind == "token":
            print(f"{e.client_id} (named token): made {e.registered}; {scopes}; reads {reads}")
            continue
        reads = f"; reads {reads}" if e.tokens else ""
        tokens = f"{e.tokens} token(s): {scopes}{reads}"
        print(f"{e.client_id}{name}: registered {e.registered}{used}; {tokens}")
        for uri in e.redirect_uris:
            print(f"    redirect {uri}")
