"""`docdex model pull` against a real HTTP server on 127.0.0.1 laid out as the Hugging Face
hub serves a repository: the revision resolved to its commit and every file fetched at it,
each checked against its listed sha256 (or git blob id); an unreachable hub fails at once
with one line."""

from __future__ import annotations

import hashlib
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from docdex.cli import main
from docdex.index_format.config import load_config
from docdex.index_format.layout import DataDir
from docdex.index_format.model_tables import OnnxEmbedder
from docdex.model.files import weights_path
from docdex.model.hub import HubError, pull
from docdex.model.onnx_dir import onnx_info

from exports import export_files

REPO = "acme/mini-embed"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


class Hub:
    """The hub's layout for one repository: /api/models/REPO/revision/REV,
    /api/models/REPO/tree/SHA, /REPO/resolve/SHA/PATH."""

    def __init__(self, files: dict[str, bytes], lfs: set[str]) -> None:
        self.files, self.lfs = files, lfs
        self.tampered: dict[str, bytes] = {}
        self.paths: list[str] = []
        self.authorizations: list[str] = []  # the Authorization header of each request
        self.storage: str = ""  # when set, file downloads are redirected to this address
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                hub.paths.append(self.path)
                hub.authorizations.append(self.headers.get("Authorization", ""))
                if hub.storage and "/resolve/" in self.path:
                    self.send_response(302)
                    self.send_header("Location", hub.storage + self.path)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = hub.answer(self.path)
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def answer(self, path: str) -> bytes | None:
        if path in (f"/api/models/{REPO}/revision/main", f"/api/models/{REPO}/revision/v1"):
            return json.dumps({"id": REPO, "sha": COMMIT}).encode()
        if path == f"/api/models/{REPO}/tree/{COMMIT}?recursive=true":
            return json.dumps([self.entry(p, data) for p, data in self.files.items()]).encode()
        prefix = f"/{REPO}/resolve/{COMMIT}/"
        if path.startswith(prefix):
            name = path.removeprefix(prefix)
            return self.tampered.get(name, self.files.get(name))
        return None

    def entry(self, path: str, data: bytes) -> dict:
        blob = hashlib.sha1(f"blob {len(data)}\0".encode() + data).hexdigest()
        item = {"type": "file", "path": path, "size": len(data), "oid": blob}
        if path in self.lfs:
            item["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data)}
        return item

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def hub():
    export = export_files()
    files = {
        "onnx/model.onnx": weights_path().read_bytes(),
        "tokenizer.json": export["tokenizer.json"],
        "config.json": export["config.json"],
        "1_Pooling/config.json": export["1_Pooling/config.json"],
        "README.md": b"# not fetched\n",
    }
    served = Hub(files, lfs={"onnx/model.onnx", "tokenizer.json"})
    yield served
    served.close()


def test_a_pull_fetches_the_export_at_its_commit(hub: Hub, tmp_path: Path, capsys) -> None:
    data = DataDir(tmp_path / "data")
    argv = ["--data", str(data.root), "model", "pull", REPO, "--revision", "v1", "--hub", hub.url]
    assert main(argv) == 0
    folder = data.root / "models" / f"acme--mini-embed@{COMMIT[:12]}"
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()) == [
        "1_Pooling/config.json",
        "config.json",
        "model.onnx",
        "tokenizer.json",
    ]
    assert (folder / "model.onnx").read_bytes() == hub.files["onnx/model.onnx"]
    downloads = [p for p in hub.paths if "/resolve/" in p]
    assert downloads and all(f"/resolve/{COMMIT}/" in p for p in downloads)  # pinned
    assert load_config(data).models["mini-embed"] == OnnxEmbedder(path=str(folder))
    assert onnx_info(OnnxEmbedder(path=str(folder)), 250, 40).dim == 384
    assert f"pulled {REPO} at {COMMIT}" in capsys.readouterr().out


def test_a_file_that_does_not_match_its_sum_is_not_kept(hub: Hub, tmp_path: Path) -> None:
    for name in ("tokenizer.json", "config.json"):  # an LFS sha256, then a git blob id
        hub.tampered = {name: hub.files[name] + b" "}
        with pytest.raises(HubError, match=f"{name} from .* does not match"):
            pull(REPO, tmp_path, hub=hub.url)
        assert list(tmp_path.iterdir()) == []
    hub.tampered = {}


def test_the_token_is_never_sent_to_the_storage_a_hub_redirects_to(
    hub: Hub, tmp_path: Path
) -> None:
    storage = Hub(hub.files, hub.lfs)  # another origin: the same files on another port
    hub.storage = storage.url
    try:
        pulled = pull(REPO, tmp_path / "models", hub=hub.url, environ={"HF_TOKEN": "hf_secret1"})
    finally:
        hub.storage = ""
        storage.close()
    assert (pulled.folder / "model.onnx").read_bytes() == hub.files["onnx/model.onnx"]
    assert "Bearer hf_secret1" in hub.authorizations  # the hub itself is asked with it
    assert storage.paths and storage.authorizations == [""] * len(storage.paths)


def test_an_unreachable_hub_fails_at_once_in_one_line(tmp_path: Path, capsys) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    data = tmp_path / "data"
    argv = ["--data", str(data), "model", "pull", REPO, "--hub", f"http://127.0.0.1:{port}"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the model hub cannot be reached" in err
    assert not data.exists()  # nothing was written
