"""`docdex ... | head`: a reader that leaves early is not an error worth a traceback."""

from __future__ import annotations

import os
import subprocess
import sys


def test_a_closed_stdout_ends_the_command_quietly(tmp_path):
    read_end, write_end = os.pipe()
    os.close(read_end)  # closed before the command starts: its first write meets a broken pipe
    try:
        done = subprocess.run(
            [sys.executable, "-m", "docdex.cli", "--data", str(tmp_path / "data"), "settings"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)
    assert done.stderr == ""
    assert done.returncode == 141  # 128 + SIGPIPE, as `git log | head` and coreutils end
