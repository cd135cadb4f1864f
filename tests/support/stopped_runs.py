"""A first index killed while it reads: a `docdex index`-like run in a subprocess of its own,
whose clock moves one second a read (so that a version is published every few pages,
whatever the machine's speed) and stops moving once that run has published a version it
holds while still reading; the test sees CURRENT appear, then kills the process with
SIGKILL. What is left is what a crash or a kill mid-read leaves."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from docdex.index_format.config import Config, Settings, SourceConfig, save_config
from docdex.index_format.layout import DataDir
from docdex.index_format.store import current_version

from fixtures import wait_for
from gitrepo import Workspace

_RUN = """
import itertools, sys, threading
from docdex.index_format.config import load_config
from docdex.index_format.layout import DataDir
from docdex.indexer.run.pipeline import index_sources

data = DataDir(sys.argv[1])
ticks = itertools.count()

def clock():
    if data.current.is_file():  # a version is published: the run stops here until killed
        threading.Event().wait()
    return float(next(ticks))

index_sources(data, load_config(data), clock=clock, embed_while=None)
"""


def page(n: int) -> str:
    return f"# Page {n}\n\nThe page about widget{n} and its gizmo{n} settings.\n"


def pages(count: int) -> dict[str, str]:
    return {f"pages/page-{n:02d}.md": page(n) for n in range(count)}


def configure(data: DataDir, ws: Workspace, **settings) -> Config:
    """`ws` as the source "docs" of `data`, its configuration saved."""
    config = Config(
        settings=Settings(**settings), sources=[SourceConfig(name="docs", location=str(ws.bare))]
    )
    data.ensure()
    save_config(data, config)
    return config


def killed_while_reading(data: DataDir, log: Path) -> int:
    """Index `data`'s configured sources in a subprocess, kill it (SIGKILL) once it has
    published a version while reading, and return that version."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", _RUN, str(data.root)], stdout=out, stderr=subprocess.STDOUT
        )
        try:
            wait_for(lambda: current_version(data) is not None or proc.poll() is not None, 120)
            assert proc.poll() is None, log.read_text()  # it stopped on its own: nothing to kill
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            proc.kill()
            proc.wait()
    version = current_version(data)
    assert version is not None, log.read_text()
    return version
