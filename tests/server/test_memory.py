"""server/memory.py: the malloc arena cap `docdex serve` sets before its threads start."""

from __future__ import annotations

import ctypes.util
import subprocess
import sys

import pytest

from docdex.server.memory import limit_malloc_arenas

GLIBC = ctypes.util.find_library("c") is not None and sys.platform.startswith("linux")


@pytest.mark.skipif(not GLIBC, reason="mallopt is glibc's")
def test_the_cap_is_set_in_a_fresh_process():
    code = "from docdex.server.memory import limit_malloc_arenas as f; print(f())"
    env = {"PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.stdout.strip() == "True", done.stderr


def test_an_environment_setting_wins():
    assert limit_malloc_arenas(preset="4") is False  # MALLOC_ARENA_MAX=4: glibc's already
