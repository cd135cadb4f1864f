"""docs/clients.md, tested: every client configuration it shows is what server/http/clients.py
produces (and `/clients.txt` serves), and every one, filled in and expanded as its client
would expand it, reaches a real docdex with the SDK's client: HTTP entries a `docdex serve`
that has a token, stdio entries a `docdex mcp` spawned from exactly their command and args. The
`claude mcp add` lines must store the same entries as the .mcp.json ones."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from docdex.index_format.layout import DataDir
from docdex.server.http.clients import (
    CLAUDE_CODE,
    CLIENTS,
    CURSOR,
    EXAMPLE_LAUNCH,
    EXAMPLE_MCP_URL,
    SERVER_NAME,
    VSCODE,
    ClientConfig,
    Launch,
    all_configs,
    claude_add_http,
    claude_add_stdio,
    served_launch,
)
from docdex.server.http.routes import MCP_PATH, index_page
from docdex.serverproc import ServeProcess

from fixtures import http, served_workspace
from paths import ROOT

DOC = ROOT / "docs" / "clients.md"
DOC_TEXT = DOC.read_text()
TOKEN = "clients-test-token-0123456789"
TOOLS = {"search_docs", "query_docs", "get_document", "list_sources", "changes", "reindex"}
QUERY = {"query": "error E1234", "num_results": 3}
DOCDEX = Path(sys.executable).with_name("docdex")  # the venv's executable, as a reader's

MARKED_JSON = re.compile(
    r"<!-- config: (?P<client>\S+) (?P<transport>http|stdio) -->\n```json\n(?P<body>.*?)^```",
    re.MULTILINE | re.DOTALL,
)
PAGE_TITLE = re.compile(r"^(?P<title>[^\n,]+), \S+ \((?P<transport>http|stdio)\):\n", re.MULTILINE)
CLAUDE_CODE_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
PREFIXED_VARIABLE = re.compile(r"\$\{(env|input):([^}]+)\}")


# --- what a text shows --------------------------------------------------------------------------


def documented_configs(text: str) -> list[ClientConfig]:
    """The JSON blocks marked `<!-- config: CLIENT TRANSPORT -->`, parsed."""
    clients = {client.key: client for client in CLIENTS}
    return [
        ClientConfig(clients[m["client"]], m["transport"], json.loads(m["body"]))
        for m in MARKED_JSON.finditer(text)
    ]


def page_configs(text: str) -> list[ClientConfig]:
    """The configurations `/` shows, each a JSON object under `TITLE, FILE (TRANSPORT):`."""
    clients = {client.title: client for client in CLIENTS}
    decoder = json.JSONDecoder()
    return [
        ClientConfig(clients[m["title"]], m["transport"], decoder.raw_decode(text, m.end())[0])
        for m in PAGE_TITLE.finditer(text)
    ]


def claude_command_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("claude mcp add ")]


def by_client(configs: list[ClientConfig]) -> dict[tuple[str, str], dict]:
    return {(c.client.key, c.transport): c.config for c in configs}


DOCUMENTED = documented_configs(DOC_TEXT)


def documented(transport: str) -> list[ClientConfig]:
    return [c for c in DOCUMENTED if c.transport == transport]


def config_id(config: ClientConfig) -> str:
    return config.client.key


# --- what a reader fills in and what a client expands -------------------------------------------


@dataclass(frozen=True)
class Machine:
    """Where the client runs: the reader's values for the placeholders, and the token in
    its environment (or typed at its prompt)."""

    replacements: dict[str, str]
    token: str

    def fill_in(self, text: str) -> str:
        for placeholder, value in self.replacements.items():
            text = text.replace(placeholder, value)
        return text


def map_strings(value: Any, change: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return change(value)
    if isinstance(value, list):
        return [map_strings(item, change) for item in value]
    if isinstance(value, dict):
        return {key: map_strings(item, change) for key, item in value.items()}
    return value


def expander(config: ClientConfig, machine: Machine) -> Callable[[str], str]:
    """How `config`'s client expands references: Claude Code `${VAR}` and `${VAR:-default}`
    from its environment, VS Code `${env:VAR}` and `${input:ID}` (an input the file declares,
    answered at a prompt), Cursor `${env:VAR}`, Claude Desktop nothing."""
    environment = {"DOCDEX_TOKEN": machine.token}
    if config.client is CLAUDE_CODE:
        return lambda text: CLAUDE_CODE_VARIABLE.sub(
            lambda m: _variable(environment, m[1], m[2]), text
        )
    sources = {"env": environment}
    if config.client is VSCODE:
        sources["input"] = {item["id"]: machine.token for item in config.config.get("inputs", [])}
    if config.client in (VSCODE, CURSOR):
        return lambda text: PREFIXED_VARIABLE.sub(lambda m: _lookup(sources, m[1], m[2]), text)
    return lambda text: text


def _variable(environment: dict[str, str], name: str, default: str | None) -> str:
    if name in environment:
        return environment[name]
    assert default is not None, f"${{{name}}} is not set where the client runs"
    return default


def _lookup(sources: dict[str, dict[str, str]], kind: str, name: str) -> str:
    assert name in sources.get(kind, {}), f"${{{kind}:{name}}} cannot be expanded"
    return sources[kind][name]


def resolved_entry(config: ClientConfig, machine: Machine) -> dict:
    """The server entry the client uses once the reader filled the placeholders in and the
    client expanded its references."""
    entry = config.config[config.client.servers_key][SERVER_NAME]
    expand = expander(config, machine)
    resolved = map_strings(entry, lambda text: expand(machine.fill_in(text)))
    assert "${" not in json.dumps(resolved), resolved  # nothing left unexpanded
    assert transport_of(config, resolved) == config.transport, resolved
    return resolved


def transport_of(config: ClientConfig, entry: dict) -> str:
    """As the client tells: typed clients by `type`, the others by `url` or `command`."""
    if config.client.typed:
        return entry["type"]
    return "http" if "url" in entry else "stdio"


# --- connecting with an entry -------------------------------------------------------------------


async def tools_and_search(client: Client) -> tuple[set[str], Any]:
    tools = await client.list_tools()
    return {tool.name for tool in tools.tools}, await client.call_tool("search_docs", QUERY)


def over_http(entry: dict, statuses: list[int] | None = None) -> tuple[set[str], Any]:
    """Connect with `entry`'s url and headers; `statuses` collects each response's status."""
    seen = [] if statuses is None else statuses

    async def record(response: httpx2.Response) -> None:
        seen.append(response.status_code)

    async def run():
        client = httpx2.AsyncClient(
            headers=entry.get("headers", {}), timeout=60, event_hooks={"response": [record]}
        )
        async with (
            client as http_client,
            Client(streamable_http_client(entry["url"], http_client=http_client)) as mcp,
        ):
            return await tools_and_search(mcp)

    return asyncio.run(run())


def over_stdio(entry: dict) -> tuple[set[str], Any]:
    params = StdioServerParameters(
        command=entry["command"], args=entry.get("args", []), env=entry.get("env")
    )

    async def run():
        async with Client(params) as client:
            return await tools_and_search(client)

    return asyncio.run(run())


def assert_searches(answer: tuple[set[str], Any]) -> None:
    names, result = answer
    assert names == TOOLS
    assert not result.is_error, result
    hits = result.structured_content["results"]
    assert hits[0]["chunk_id"].startswith("docs:faq.md#") and "E1234" in hits[0]["text"]


def refusals(entry: dict) -> set[int]:
    """The HTTP statuses the server answered a client that could not connect with `entry`."""
    statuses: list[int] = []
    with pytest.raises(Exception):  # noqa: B017 - the SDK raises its own errors for a refusal
        over_http(entry, statuses)
    return set(statuses)


# --- `claude mcp add`, as the shell and Claude Code's CLI read it --------------------------------

VARIADIC_OPTIONS = {"--header": "header", "-H": "header", "--env": "env", "-e": "env"}
SINGLE_OPTIONS = {"--transport": "transport", "-t": "transport", "--scope": "scope", "-s": "scope"}


def shell_words(line: str, environment: dict[str, str]) -> list[str]:
    """The words a POSIX shell passes for `line` (quotes and `$VAR` as the shell does)."""
    script = 'claude() { printf "%s\\0" claude "$@"; }\n' + line
    done = subprocess.run(
        ["bash", "-c", script], env=environment, capture_output=True, text=True, check=True
    )
    return done.stdout.split("\0")[:-1]


def claude_mcp_add(words: list[str]) -> tuple[str, dict]:
    """(name, entry) that `claude mcp add` stores for these words: options before the
    positionals, `--header`/`--env` taking every value up to the next option, and everything
    after `--` the stdio command."""
    assert words[:3] == ["claude", "mcp", "add"], words
    options: dict[str, list[str]] = {}
    positionals: list[str] = []
    rest = words[3:]
    while rest and rest[0] != "--":
        word, rest = rest[0], rest[1:]
        if word in VARIADIC_OPTIONS:
            count = next((i for i, w in enumerate(rest) if w.startswith("-")), len(rest))
            options.setdefault(VARIADIC_OPTIONS[word], []).extend(rest[:count])
            rest = rest[count:]
        elif word in SINGLE_OPTIONS:
            options[SINGLE_OPTIONS[word]], rest = rest[:1], rest[1:]
        else:
            assert not word.startswith("-"), f"unknown option {word}"
            positionals.append(word)
    command = rest[1:]
    transport = options.get("transport", ["stdio"])[0]
    if transport == "http":
        name, url = positionals  # exactly the name and the URL
        entry: dict[str, Any] = {"type": "http", "url": url}
        headers = [h.split(":", 1) for h in options.get("header", [])]
        if headers:
            entry["headers"] = {key.strip(): value.strip() for key, value in headers}
        return name, entry
    (name,) = positionals
    assert command, "a stdio server needs a command after --"
    entry = {"type": "stdio", "command": command[0], "args": command[1:]}
    if "env" in options:
        entry["env"] = dict(pair.split("=", 1) for pair in options["env"])
    return name, entry


def assert_commands_store_the_entries(
    lines: list[str], configs: list[ClientConfig], machine: Machine
) -> None:
    """Each line stores what the Claude Code JSON of its transport resolves to."""
    entries = {c.transport: resolved_entry(c, machine) for c in configs if c.client is CLAUDE_CODE}
    environment = {"DOCDEX_TOKEN": machine.token}
    stored = [claude_mcp_add(shell_words(machine.fill_in(line), environment)) for line in lines]
    assert [name for name, _entry in stored] == [SERVER_NAME] * len(stored)
    assert {entry["type"]: entry for _name, entry in stored} == entries


# --- fixtures -----------------------------------------------------------------------------------


@dataclass
class Served:
    data: DataDir
    server: ServeProcess

    def machine(self, token: str = TOKEN) -> Machine:
        """The reader's machine: this server's address, the venv's docdex, the test index."""
        replacements = {
            EXAMPLE_MCP_URL.removesuffix(MCP_PATH): self.server.url,
            EXAMPLE_LAUNCH.executable: str(DOCDEX),
            EXAMPLE_LAUNCH.data_dir: str(self.data.root),
        }
        return Machine(replacements, token)


@pytest.fixture(scope="module")
def served(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("clients")
    with served_workspace(root, embedder, TOKEN) as server:
        yield Served(DataDir(root / "data"), server)


# --- the document -------------------------------------------------------------------------------


def test_the_document_shows_what_server_clients_produces():
    assert DOC_TEXT.count("```json") == len(DOCUMENTED)  # every JSON block is a tested config
    expected = all_configs(EXAMPLE_MCP_URL, True, EXAMPLE_LAUNCH)
    assert by_client(DOCUMENTED) == by_client(expected)
    assert len(DOCUMENTED) == len(expected)  # and each only once
    assert claude_command_lines(DOC_TEXT) == [
        claude_add_http(EXAMPLE_MCP_URL, True),
        claude_add_stdio(EXAMPLE_LAUNCH),
    ]


def test_the_claude_mcp_add_lines_store_the_mcp_json_entries(served):
    assert DOCDEX.is_file(), f"{DOCDEX}: docdex is not installed in this venv"
    assert_commands_store_the_entries(claude_command_lines(DOC_TEXT), DOCUMENTED, served.machine())


@pytest.mark.parametrize("config", documented("http"), ids=config_id)
def test_each_http_entry_searches_the_server(served, config):
    assert_searches(over_http(resolved_entry(config, served.machine())))


@pytest.mark.parametrize("config", documented("http"), ids=config_id)
def test_each_http_entry_with_a_wrong_or_no_token_is_refused(served, config):
    wrong = resolved_entry(config, served.machine(token="wrong-token"))
    assert refusals(wrong) == {401}
    without = {key: value for key, value in wrong.items() if key != "headers"}
    assert refusals(without) == {401}


@pytest.mark.parametrize("config", documented("stdio"), ids=config_id)
def test_each_stdio_entry_launches_docdex_mcp(served, config):
    entry = resolved_entry(config, served.machine())
    assert entry["command"] == str(DOCDEX)  # the venv's executable itself, no interpreter
    assert_searches(over_stdio(entry))


# --- `/` ----------------------------------------------------------------------------------------


def test_the_index_page_serves_the_entries_for_this_server(served):
    reply = http(f"{served.server.url}/clients.txt")  # open without the token
    assert reply.status == 200
    assert http(f"{served.server.url}/").body == reply.body  # `/`, unless a browser asks
    text = reply.body.decode()
    shown = page_configs(text)
    assert shown == all_configs(served.server.mcp_url, True, EXAMPLE_LAUNCH)
    machine = served.machine()
    for config in shown:
        if config.transport == "http":
            assert_searches(over_http(resolved_entry(config, machine)))
    assert_commands_store_the_entries(claude_command_lines(text), shown, machine)


def test_with_the_token_the_index_page_names_this_servers_own_paths(served):
    auth = {"Authorization": f"Bearer {TOKEN}"}
    text = http(f"{served.server.url}/clients.txt", auth).body.decode()
    own = Launch(str(DOCDEX), str(served.data.root.absolute()))
    assert "/path/to" not in text and "these are this server's paths" in text
    shown = page_configs(text)
    assert shown == all_configs(served.server.mcp_url, True, own)
    for config in shown:
        if config.transport == "stdio":  # launched as shown: nothing to fill in
            entry = config.config[config.client.servers_key][SERVER_NAME]
            assert_searches(over_stdio(entry))
            break
    assert claude_command_lines(text)[1] == claude_add_stdio(own)


def test_the_connect_panel_gets_this_servers_paths_and_says_so(served):
    auth = {"Authorization": f"Bearer {TOKEN}"}
    body = http(f"{served.server.url}/api/clients", auth).json()
    own = str(DOCDEX), str(served.data.root.absolute())
    assert body["launch"] == {"executable": own[0], "data_dir": own[1], "example": False}
    stdio = [json.loads(c["text"]) for c in body["configs"] if c["transport"] == "stdio"]
    entries = [config[next(iter(config))][SERVER_NAME] for config in stdio]
    assert entries and all(e["command"] == own[0] and e["args"][1] == own[1] for e in entries)


def test_served_launch_is_the_venvs_docdex_and_an_absolute_data_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    launch = served_launch(Path("data"))
    assert launch == Launch(str(DOCDEX), str(tmp_path / "data"))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "bin" / "python"))  # no docdex beside
    monkeypatch.setenv("PATH", str(tmp_path))  # nor on the PATH
    assert served_launch(tmp_path).has_placeholders
    assert not launch.has_placeholders and EXAMPLE_LAUNCH.has_placeholders


def test_without_a_token_the_index_page_has_no_header_or_prompt():
    text = index_page("http://docs.example:8085", token_required=False)
    shown = page_configs(text)
    assert shown == all_configs("http://docs.example:8085/mcp", False, EXAMPLE_LAUNCH)
    assert {c.client.key for c in shown} == {client.key for client in CLIENTS}
    assert "Authorization" not in text and "inputs" not in text
    assert claude_command_lines(text)[0] == (
        "claude mcp add --transport http docdex http://docs.example:8085/mcp"
    )
