"""How MCP clients reach docdex: the configuration entries that docs/clients.md documents,
`/clients.txt` serves and the search page's "Connect an agent" panel shows, made in one place
so that they cannot drift (tests/server/http/test_clients.py checks the document against these and
connects with every entry it holds).

Over streamable HTTP a client names the server's /mcp URL and, when the server has a token,
sends `Authorization: Bearer <token>`, each client writing the token as a reference it
expands itself. Over stdio it launches `docdex --data DIR mcp` on its own machine: the
documentation shows example paths (EXAMPLE_LAUNCH), a running server its own (served_launch).
A server with `--auth oauth` or `jwt` also has an entry for clients that add a server by its
URL alone and sign in through the browser: the URL to paste, its public URL + /mcp.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

SERVER_NAME = "docdex"
TOKEN_VARIABLE = "DOCDEX_TOKEN"
VSCODE_TOKEN_INPUT = "docdex-token"

Config = dict[str, Any]
Transport = Literal["http", "stdio"]


@dataclass(frozen=True)
class Launch:
    """How a client starts `docdex mcp`: the venv's executable and the data directory."""

    executable: str
    data_dir: str

    @property
    def args(self) -> list[str]:
        return ["--data", self.data_dir, "mcp"]

    @property
    def has_placeholders(self) -> bool:
        """Some of its paths are the documentation's, for the reader to replace."""
        return (
            EXAMPLE_LAUNCH.executable == self.executable or EXAMPLE_LAUNCH.data_dir == self.data_dir
        )


EXAMPLE_LAUNCH = Launch("/path/to/venv/bin/docdex", "/path/to/docdex-data")
"""The paths the documentation and `/` show, for the reader to replace with their own."""
EXAMPLE_MCP_URL = "http://127.0.0.1:8085/mcp"
"""The URL the documentation shows: `docdex serve` with its default address."""


def served_launch(data_dir: Path) -> Launch:
    """The stdio entry of a client on the server's own machine: the `docdex` command beside
    the interpreter the server runs (its venv's bin/docdex) and the data directory it serves.
    The path is not resolved: the venv's python is a symlink to the system's."""
    beside = Path(sys.executable).absolute().with_name("docdex")
    executable = str(beside) if beside.is_file() else shutil.which("docdex")
    return Launch(executable or EXAMPLE_LAUNCH.executable, str(data_dir.absolute()))


@dataclass(frozen=True)
class Client:
    """One MCP client's configuration format."""

    title: str
    config_file: str
    servers_key: str = "mcpServers"  # the top-level key that maps server names to entries
    typed: bool = False  # entries carry "type": "http" | "stdio"
    token_reference: str | None = None  # the token in a header value; None: stdio only

    @property
    def key(self) -> str:
        """The client's name in docs/clients.md's markers."""
        return self.title.lower().replace(" ", "-")

    @property
    def transports(self) -> tuple[Transport, ...]:
        return ("http", "stdio") if self.token_reference else ("stdio",)

    @property
    def asks_for_token(self) -> bool:
        """The token is an input the file declares and the client prompts for (VS Code)."""
        return bool(self.token_reference and self.token_reference.startswith("${input:"))


CLAUDE_CODE = Client(
    "Claude Code", ".mcp.json", typed=True, token_reference="${" + TOKEN_VARIABLE + "}"
)
VSCODE = Client(
    "VS Code",
    ".vscode/mcp.json",
    "servers",
    typed=True,
    token_reference="${input:" + VSCODE_TOKEN_INPUT + "}",
)
CURSOR = Client("Cursor", ".cursor/mcp.json", token_reference="${env:" + TOKEN_VARIABLE + "}")
CLAUDE_DESKTOP = Client("Claude Desktop", "claude_desktop_config.json")
CLIENTS = (CLAUDE_CODE, VSCODE, CURSOR, CLAUDE_DESKTOP)


@dataclass(frozen=True)
class ClientConfig:
    """One configuration file's content for one client and transport."""

    client: Client
    transport: Transport
    config: Config


def http_config(client: Client, mcp_url: str, token_required: bool) -> Config:
    """`client`'s file with an entry for the server at `mcp_url`."""
    entry: Config = {**_type(client, "http"), "url": mcp_url}
    if token_required:
        entry["headers"] = {"Authorization": f"Bearer {client.token_reference}"}
    config: Config = {client.servers_key: {SERVER_NAME: entry}}
    if token_required and client.asks_for_token:
        return {"inputs": [vscode_token_input()], **config}
    return config


def stdio_config(client: Client, launch: Launch) -> Config:
    """`client`'s file with an entry that launches `docdex --data DIR mcp`."""
    entry = {**_type(client, "stdio"), "command": launch.executable, "args": launch.args}
    return {client.servers_key: {SERVER_NAME: entry}}


def vscode_token_input() -> Config:
    """VS Code asks for the token once and keeps it in its secret storage."""
    return {
        "type": "promptString",
        "id": VSCODE_TOKEN_INPUT,
        "description": f"docdex bearer token ({TOKEN_VARIABLE} on the server)",
        "password": True,
    }


def _type(client: Client, transport: Transport) -> Config:
    return {"type": transport} if client.typed else {}


def all_configs(mcp_url: str, token_required: bool, launch: Launch) -> list[ClientConfig]:
    """Every client's file for each transport it speaks, in CLIENTS order."""
    return [
        ClientConfig(client, transport, _config(client, transport, mcp_url, token_required, launch))
        for client in CLIENTS
        for transport in client.transports
    ]


def _config(
    client: Client, transport: Transport, mcp_url: str, token_required: bool, launch: Launch
) -> Config:
    if transport == "http":
        return http_config(client, mcp_url, token_required)
    return stdio_config(client, launch)


def claude_add_http(mcp_url: str, token_required: bool) -> str:
    """`claude mcp add` for the HTTP entry. `--header` takes several values, so it comes after
    the name and URL; the shell puts the token in."""
    words = f"claude mcp add --transport http {SERVER_NAME} {shlex.quote(mcp_url)}"
    if token_required:
        return f'{words} --header "Authorization: Bearer ${TOKEN_VARIABLE}"'
    return words


def claude_add_stdio(launch: Launch) -> str:
    """`claude mcp add` for the stdio entry: everything after `--` is the command."""
    return shlex.join(["claude", "mcp", "add", SERVER_NAME, "--", launch.executable, *launch.args])


def claude_commands(mcp_url: str, token_required: bool, launch: Launch) -> list[str]:
    return [claude_add_http(mcp_url, token_required), claude_add_stdio(launch)]


URL_ONLY_TITLE = "Clients that take only a URL (OAuth)"
URL_ONLY_WORDS = (
    "Connectors that add a server by its URL alone sign in through the browser: paste this "
    "address; the server's owner approves each one on docdex's consent page (and may limit "
    "it to some sources)."
)


def url_only_text(url_only: str) -> str:
    """The URL-only entry as plain text."""
    return f"{URL_ONLY_TITLE}:\n{URL_ONLY_WORDS}\n{url_only}"


def configs_text(
    mcp_url: str, token_required: bool, launch: Launch = EXAMPLE_LAUNCH, url_only: str = ""
) -> str:
    """The configurations as plain text: the URL-only entry when there is one (`url_only`:
    the URL such a client is given), each file under a title, then Claude Code's
    commands."""
    files = [_titled(config) for config in all_configs(mcp_url, token_required, launch)]
    commands = "\n".join(claude_commands(mcp_url, token_required, launch))
    url_entry = [url_only_text(url_only)] if url_only else []
    return "\n\n".join([*url_entry, *files, f"Claude Code, from a shell:\n{commands}"]) + "\n"


def configs_json(
    mcp_url: str, token_required: bool, launch: Launch = EXAMPLE_LAUNCH, url_only: str = ""
) -> Config:
    """The same configurations for the search page's "Connect an agent" panel."""
    return {
        "mcp_url": mcp_url,
        "token_required": token_required,
        "url_only": (
            {"title": URL_ONLY_TITLE, "words": URL_ONLY_WORDS, "url": url_only}
            if url_only
            else None
        ),
        "configs": [
            {
                "client": config.client.title,
                "file": config.client.config_file,
                "transport": config.transport,
                "text": json.dumps(config.config, indent=2),
            }
            for config in all_configs(mcp_url, token_required, launch)
        ],
        "commands": claude_commands(mcp_url, token_required, launch),
        "launch": {
            "executable": launch.executable,
            "data_dir": launch.data_dir,
            "example": launch.has_placeholders,  # paths for the reader to replace
        },
    }


def _titled(config: ClientConfig) -> str:
    title = f"{config.client.title}, {config.client.config_file} ({config.transport}):"
    return f"{title}\n{json.dumps(config.config, indent=2)}"
