"""Remote sources: a bare mirror inside the data directory, fetched with dulwich.

Every indexing run of a remote source fetches first (so `docdex index NAME` and the
`reindex` tool see the newest commit); a fetch that brings nothing new leaves the mirror's
heads where they were and the run publishes nothing. A failed fetch raises SourceError:
the run reports it per source and the last good pages keep serving.
"""

from __future__ import annotations

import re
import shlex
import socket
from collections.abc import Mapping
from contextlib import contextmanager
from pathlib import Path

from dulwich.client import get_transport_and_path
from dulwich.objects import ObjectID
from dulwich.refs import Ref
from dulwich.repo import Repo

from docdex.index_format.config import SourceConfig, SourceError, source_kind
from docdex.index_format.layout import DataDir
from docdex.index_format.ref_names import selected
from docdex.indexer.git.repo import to_str

# A stalled network read fails after this long instead of hanging the single writer.
FETCH_TIMEOUT_S = 60.0
# ssh must never stop to ask for a password or a host key: there is nobody to answer.
DEFAULT_SSH_COMMAND = "ssh -o BatchMode=yes -o ConnectTimeout=30"
# What dulwich runs for ssh, with ssh's arguments after it: a shell that runs GIT_SSH_COMMAND
# as git does (a shell command, the arguments appended), else the default. The variable is
# read by that child of the fetch, never by docdex itself.
SSH_COMMAND = shlex.join(
    ["sh", "-c", f'eval "exec ${{GIT_SSH_COMMAND:-{DEFAULT_SSH_COMMAND}}}" \'"$@"\'', "ssh"]
)

_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^@/]*@")


def mirror_path(data: DataDir, source: SourceConfig) -> Path:
    return data.state / "mirrors" / f"{source.name}.git"


def local_repository(data: DataDir, source: SourceConfig) -> str:
    """The repository to read: the location itself, or a freshly fetched mirror of it."""
    if source_kind(source.location) != "remote":
        return source.location
    return str(fetch_mirror(source.location, mirror_path(data, source), source.refs))


def redact(url: str) -> str:
    """The URL without its user:password part, fit for logs and error messages."""
    return _USERINFO.sub(r"\1***@", url)


def fetch_mirror(url: str, mirror: Path, refs: list[str] | None = None) -> Path:
    """Fetch every branch of `url`, and the tags the `refs` patterns select, into a bare
    mirror; the mirror's heads and those tags follow the remote's exactly (a deleted remote
    branch disappears, a force-push or a moved tag is taken). Other refs (tags nobody asked
    for, pull requests...) are not fetched."""
    patterns = refs or []
    if not (mirror / "HEAD").exists():
        mirror.mkdir(parents=True, exist_ok=True)
        Repo.init_bare(str(mirror)).close()
    try:
        client, path = get_transport_and_path(url, ssh_command=SSH_COMMAND)
        with Repo(str(mirror)) as repo, _socket_timeout(FETCH_TIMEOUT_S):
            store = repo.object_store

            # the remote's refs (dulwich's DetermineWantsFunc names the parameter `refs`)
            def wants(refs: Mapping[Ref, ObjectID], depth: int | None = None) -> list[ObjectID]:
                return store.determine_wants_all(_kept(refs, patterns), depth)

            result = client.fetch(path, repo, determine_wants=wants, progress=_quiet)
            _mirror_refs(repo, _kept(result.refs, patterns), result.symrefs)
    except Exception as exc:  # dulwich raises many kinds (HangupException, GitProtocolError...)
        detail = str(exc).replace(url, redact(url)) or type(exc).__name__
        if not isinstance(exc, OSError | ValueError):
            detail = f"{type(exc).__name__}: {detail}"
        raise SourceError(f"cannot fetch {redact(url)}: {detail}") from None
    return mirror


@contextmanager
def _socket_timeout(seconds: float):
    """dulwich opens its sockets (git://, http) without a timeout; the indexer is one
    thread doing one fetch at a time, so the process-wide default is ours to set."""
    previous = socket.getdefaulttimeout()
    socket.setdefaulttimeout(seconds)
    try:
        yield
    finally:
        socket.setdefaulttimeout(previous)


def _quiet(_progress: bytes) -> None:
    """Where the remote's progress messages go."""


def _kept(refs: Mapping[Ref, ObjectID | None], patterns: list[str]) -> dict[Ref, ObjectID]:
    """The remote refs the mirror keeps: every branch, and the tags `patterns` select."""
    kept: dict[Ref, ObjectID] = {}
    for name, sha in refs.items():
        tag = name.removeprefix(b"refs/tags/")
        if not sha or name.endswith(b"^{}"):
            continue
        if name.startswith(b"refs/heads/") or (
            tag != name and patterns and selected(patterns, "tag", to_str(tag))
        ):
            kept[name] = sha
    return kept


def _mirror_refs(repo: Repo, remote: dict[Ref, ObjectID], symrefs: Mapping[Ref, Ref]) -> None:
    local = {k: repo.refs[k] for k in repo.refs if k.startswith((b"refs/heads/", b"refs/tags/"))}
    for name in local:
        if name not in remote:
            repo.refs.remove_if_equals(name, None)
    for name, sha in remote.items():
        if local.get(name) != sha:  # an unchanged ref is not rewritten
            repo.refs[name] = sha
    head = Ref(b"HEAD")
    target = symrefs.get(head)
    if target and repo.refs.get_symrefs().get(head) != target:
        repo.refs.set_symbolic_ref(head, target)
