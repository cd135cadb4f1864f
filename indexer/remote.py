"""Remote sources: a bare mirror inside the data directory, fetched with dulwich."""

from __future__ import annotations

import io
from pathlib import Path

from dulwich.client import get_transport_and_path
from dulwich.repo import Repo

from docdex.config import SourceConfig
from docdex.index_format.layout import DataDir

from .gitsource import GitSourceError, source_kind


def mirror_path(data: DataDir, source: SourceConfig) -> Path:
    return data.state / "mirrors" / f"{source.name}.git"


def local_repository(data: DataDir, source: SourceConfig) -> str:
    """The repository to read: the location itself, or a freshly fetched mirror of it."""
    if source_kind(source.location) != "remote":
        return source.location
    return str(fetch_mirror(source.location, mirror_path(data, source)))


def fetch_mirror(url: str, mirror: Path) -> Path:
    """Fetch every branch of `url` into a bare mirror; the mirror's heads follow the
    remote's exactly (a deleted remote branch disappears, a force-push is taken)."""
    if not (mirror / "HEAD").exists():
        mirror.mkdir(parents=True, exist_ok=True)
        Repo.init_bare(str(mirror)).close()
    try:
        client, path = get_transport_and_path(url)
        with Repo(str(mirror)) as repo:
            result = client.fetch(path, repo, progress=io.BytesIO().write)
            _mirror_refs(repo, result.refs, result.symrefs)
    except (OSError, ValueError) as exc:
        raise GitSourceError(f"cannot fetch {url}: {exc}") from None
    except Exception as exc:  # dulwich raises many kinds (HangupException, GitProtocolError...)
        raise GitSourceError(f"cannot fetch {url}: {type(exc).__name__}: {exc}") from None
    return mirror


def _mirror_refs(repo: Repo, remote: dict[bytes, bytes | None], symrefs: dict) -> None:
    heads = {k: v for k, v in remote.items() if k.startswith(b"refs/heads/") and v}
    for name in [k for k in repo.refs if k.startswith(b"refs/heads/")]:
        if name not in heads:
            repo.refs.remove_if_equals(name, None)
    for name, sha in heads.items():
        repo.refs[name] = sha
    target = symrefs.get(b"HEAD")
    if target:
        repo.refs.set_symbolic_ref(b"HEAD", target)
