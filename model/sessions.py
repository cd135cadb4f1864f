"""ONNX Runtime sessions over the model, optimised once per machine and cached (adr/0008)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import onnxruntime as ort

from .model_environment import ModelEnvironment


def cached_session(
    threads: int, cached: Path | None, graph: Callable[[], str | bytes]
) -> ort.InferenceSession:
    """A session over `graph` (a path or a serialized model), optimised once per machine:
    the optimised graph is kept at `cached` and later sessions load it as it is."""
    if cached is not None and cached.exists():
        opts = session_options(threads, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
        try:
            return ort.InferenceSession(str(cached), opts, providers=["CPUExecutionProvider"])
        except Exception:  # a damaged cache file: optimise the graph again
            cached.unlink(missing_ok=True)
    opts = session_options(threads, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    tmp = cached.with_name(f".tmp-{os.getpid()}-{cached.name}") if cached is not None else None
    if tmp is not None:
        opts.optimized_model_filepath = str(tmp)
    session = ort.InferenceSession(graph(), opts, providers=["CPUExecutionProvider"])
    if cached is not None and tmp is not None and tmp.exists():
        os.replace(tmp, cached)
    return session


def write_cached(argv: list[str], rewrite: Callable[[Path], str | bytes]) -> int:
    """The child's side of a rewritten graph (`python -m docdex.model.MODULE MODEL FILE`):
    optimise `rewrite(MODEL)` and write it to the cache file FILE."""
    model, cached = Path(argv[0]), Path(argv[1])
    cached_session(1, cached, lambda: rewrite(model))
    return 0


def session_options(threads: int, level: ort.GraphOptimizationLevel) -> ort.SessionOptions:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = level
    opts.log_severity_level = 3
    # Spinning intra-op threads starve numpy/BLAS work beside them (adr/0008, "Threads").
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    # A memory pattern is planned and kept per input shape, and every length-sorted batch has
    # another one: without it a run's peak is lower at the same speed (adr/0007).
    opts.enable_mem_pattern = False
    return opts


def cached_graph(
    kind: str, sha256: str, variant: str, model_environment: ModelEnvironment
) -> Path | None:
    """Where this machine's optimised graph `kind` of the model lives in the cache directory
    (None: no usable cache).

    The key holds the model's hash, onnxruntime's version, the CPU's feature flags (an
    optimised graph may use instructions of the CPU it was made on) and `variant` (the int8
    rewrite's version)."""
    parts = f"{sha256}|{ort.__version__}|{_cpu_flags()}" + (f"|{variant}" if variant else "")
    key = hashlib.sha256(parts.encode()).hexdigest()
    folder = model_environment.cache_folder("onnx")
    return folder / f"{kind}-{key[:24]}.onnx" if folder else None


def _cpu_flags() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            return next((line for line in cpuinfo if line.startswith("flags")), "")
    except OSError:
        return ""
