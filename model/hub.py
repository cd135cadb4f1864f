"""`docdex model pull REPO_ID`: an ONNX export fetched once from a model hub that speaks the
Hugging Face layout (`/api/models/REPO/revision/REV`, `/api/models/REPO/tree/SHA`,
`/REPO/resolve/SHA/PATH`), never at run time.

The revision asked for is resolved to its commit first and every file is fetched at that
commit; each is checked against the sha256 the hub lists for it (git's blob sha1 for a
small file kept outside LFS) before the directory is renamed into place, so a directory
under `models/` is complete and what the hub published. An unreachable hub fails at once:
one request, no retries. Hubs answer a file with a redirect to their storage, so redirects
are followed, but `$HF_TOKEN` goes only to the origin it was given for: a redirect to another
host, port or scheme is requested without it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .model_environment import NO_VARIABLES
from .protocol import EmbedderUnavailable

DEFAULT_HUB = "https://huggingface.co"
TIMEOUT_S = 30.0
REPO_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?")
# what an ONNX export directory holds (onnx_dir.py), wherever the repository keeps model.onnx
WANTED = ("tokenizer.json", "config.json", "sentence_bert_config.json", "1_Pooling/config.json")
ONNX_PLACES = ("onnx/model.onnx", "model.onnx")


class HubError(EmbedderUnavailable):
    """The hub cannot be reached, or what it answered is not a usable ONNX export."""


@dataclass(frozen=True)
class HubFile:
    path: str  # in the repository
    size: int
    sha256: str  # "" when the hub lists only a git blob id
    blob: str  # git's sha1 of the blob ("" when not listed)


@dataclass(frozen=True)
class Pulled:
    folder: Path
    repo: str
    commit: str
    files: list[str]


def pull(
    repo: str,
    target_root: Path,
    revision: str = "main",
    hub: str = DEFAULT_HUB,
    environ: Mapping[str, str] = NO_VARIABLES,  # HF_TOKEN, when the hub wants one
) -> Pulled:
    """Fetch `repo` at `revision` into `target_root/<repo>@<commit>` (kept if already there)."""
    if not REPO_ID.fullmatch(repo):
        raise HubError(
            f"{repo!r} is not a repository id such as sentence-transformers/all-MiniLM-L6-v2"
        )
    hub = hub.rstrip("/")
    token = environ.get("HF_TOKEN", "")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    quoted = urllib.parse.quote(revision, safe="")
    info = _get_json(f"{hub}/api/models/{repo}/revision/{quoted}", headers)
    commit = str(info.get("sha") or "")
    if not re.fullmatch(r"[0-9a-f]{40}", commit):
        raise HubError(f"the hub at {hub} named no commit for {repo} at {revision!r}")
    listing = _get_json(f"{hub}/api/models/{repo}/tree/{commit}?recursive=true", headers)
    files = _chosen(repo, _files(listing))
    folder = target_root / f"{repo.replace('/', '--')}@{commit[:12]}"
    if folder.is_dir():
        return Pulled(folder, repo, commit, sorted(files.values()))
    staging = target_root / f".tmp-{folder.name}-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        for hub_file, local in files.items():
            url = f"{hub}/{repo}/resolve/{commit}/{urllib.parse.quote(hub_file.path)}"
            _download(url, staging / local, hub_file, headers)
        staging.rename(folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return Pulled(folder, repo, commit, sorted(files.values()))


def _files(listing: Any) -> dict[str, HubFile]:
    out: dict[str, HubFile] = {}
    for item in listing if isinstance(listing, list) else []:
        if not isinstance(item, dict) or item.get("type") != "file":
            continue
        lfs = item.get("lfs") or {}
        out[str(item["path"])] = HubFile(
            path=str(item["path"]),
            size=int(lfs.get("size") or item.get("size") or 0),
            sha256=str(lfs.get("oid") or lfs.get("sha256") or ""),
            blob=str(item.get("oid") or ""),
        )
    return out


def _chosen(repo: str, files: dict[str, HubFile]) -> dict[HubFile, str]:
    """The files of an export directory, by their place in it."""
    model = next((files[p] for p in ONNX_PLACES if p in files), None)
    if model is None:
        raise HubError(
            f"{repo} holds no model.onnx (nor onnx/model.onnx): pull a repository with an "
            "ONNX export, or export one with Optimum"
        )
    chosen = {model: "model.onnx"}
    data = files.get(model.path + "_data")  # weights kept beside the graph, over 2 GB
    if data is not None:
        chosen[data] = "model.onnx_data"
    for name in WANTED:
        if name in files:
            chosen[files[name]] = name
    if "tokenizer.json" not in chosen.values():
        raise HubError(f"{repo} holds no tokenizer.json, which docdex needs beside model.onnx")
    return chosen


def _download(url: str, target: Path, expected: HubFile, headers: dict[str, str]) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    sha256, size = hashlib.sha256(), 0
    with _open(url, headers) as response, target.open("wb") as out:
        while chunk := response.read(1 << 20):
            sha256.update(chunk)
            size += len(chunk)
            out.write(chunk)
    if expected.sha256 and sha256.hexdigest() != expected.sha256:
        raise HubError(
            f"{expected.path} from {url} does not match the sha256 the hub lists for it "
            "(nothing was kept)"
        )
    if not expected.sha256 and expected.blob and _blob_sha1(target, size) != expected.blob:
        raise HubError(
            f"{expected.path} from {url} does not match the git blob id the hub lists for it "
            "(nothing was kept)"
        )


def _blob_sha1(path: Path, size: int) -> str:
    digest = hashlib.sha1(f"blob {size}\0".encode())
    digest.update(path.read_bytes())
    return digest.hexdigest()


def _get_json(url: str, headers: dict[str, str]) -> Any:
    with _open(url, headers) as response:
        try:
            return json.loads(response.read())
        except ValueError:
            raise HubError(f"the hub answered {url} with what is not JSON") from None


class _TokenStaysWithItsOrigin(urllib.request.HTTPRedirectHandler):
    def redirect_request(
        self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> urllib.request.Request | None:
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and _origin(newurl) != _origin(req.full_url):
            new.remove_header("Authorization")
        return new


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme.lower())
    return parts.scheme.lower(), (parts.hostname or "").lower(), parts.port or default


_OPENER = urllib.request.build_opener(_TokenStaysWithItsOrigin)


def _open(url: str, headers: dict[str, str]) -> Any:
    request = urllib.request.Request(url, headers=headers)
    try:
        return _OPENER.open(request, timeout=TIMEOUT_S)
    except urllib.error.HTTPError as exc:
        raise HubError(f"the hub answered {url} with HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise HubError(
            f"the model hub cannot be reached at {url} ({reason}); docdex never downloads at "
            "run time: pull on a machine that reaches it and copy the directory, or point "
            "--hub (or $HF_ENDPOINT) at a mirror"
        ) from None
