"""The queue's request files are one contract with two writers: `file_request` and the
post-receive hook's sh (index-format/FORMAT.md, "Run state"). Both must decode strictly as
an IndexRequest, with ids that sort by age and the stored timestamp format."""

from __future__ import annotations

import re
import time

import msgspec

from docdex.hooks.installer import install_hook
from docdex.index_format.layout import DataDir
from docdex.index_format.queue import IndexRequest, file_request, pending_requests, queue_dir
from docdex.runtime.times import ISO_UTC

from fixtures import pushed_workspace
from gitrepo import git
from pushes import push

REQUEST_ID = re.compile(r"^\d{20}-[0-9a-f]+$")


def request_files(data: DataDir) -> list[IndexRequest]:
    """Every request file, decoded strictly (pending_requests skips what does not decode)."""
    return [
        msgspec.json.decode(path.read_bytes(), type=IndexRequest, strict=True)
        for path in sorted(queue_dir(data).glob("*.json"))
    ]


def assert_well_formed(request: IndexRequest) -> None:
    assert REQUEST_ID.match(request.id), request.id
    time.strptime(request.requested_at, ISO_UTC)  # raises when the format differs


def test_both_writers_write_the_same_contract(tmp_path) -> None:
    ws = pushed_workspace(tmp_path, {"a.md": "# A\n\nThe pangolin registry.\n"})
    data = DataDir(tmp_path / "data")
    install_hook(data, ws.bare, "docs", python="/nonexistent/python")  # no worker runs
    ws.write("b.md", "# B\n\nThe okapi registry.\n")
    ws.commit()
    assert push(ws.work).returncode == 0
    filed = file_request(data, "docs", origin="reindex")

    from_hook, from_python = request_files(data)
    assert (from_hook.source, from_hook.origin) == ("docs", "hook")
    assert from_hook.ref == "refs/heads/main"
    assert from_hook.commit == git(ws.bare, "rev-parse", "refs/heads/main")
    assert from_python == filed
    for request in (from_hook, from_python):
        assert_well_formed(request)
    assert from_hook.id < from_python.id  # names sort by age, whoever wrote them
    assert pending_requests(data) == [from_hook, from_python]
