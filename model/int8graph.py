"""The query-side graph: the same model with its int8 weights kept int8 in memory.

The package's model stores each weight as int8 plus a float32 scale (`Cast` then `Mul`).
onnxruntime's optimiser folds those back into float32 tensors, four times their size in a
server's memory. This rewrite keeps them int8 (adr/0009):

- an embedding table feeding a `Gather` gathers int8 rows and their scales, and only the
  rows of the query's tokens become float32 (the same products as before: bit-identical);
- a weight feeding a `MatMul` becomes a `MatMulNBits` (com.microsoft) of 8 bits with the
  weight's per-column scale in every block; `accuracy_level` 4 lets onnxruntime quantise the
  activations per block of BLOCK_SIZE values and multiply in int8.

Only the queries' side runs this graph; passages are embedded by the float32 graph (adr/0009
has the measurements). `onnx` is imported only here, once per machine, in a child process:
the result is cached (sessions.py), and `python -m docdex.model.int8graph MODEL CACHE_FILE`
writes it.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from onnx import NodeProto

REWRITE_VERSION = 1  # part of the cache key: bump when the rewrite's output changes
BLOCK_SIZE = 32  # activations are quantised per block of this many (adr/0009)
ACCURACY_LEVEL = 4  # int8 products; levels 0-1 dequantise every weight on every call (adr/0009)
ZERO_POINT = 128  # MatMulNBits' default zero point for 8 bits


class _Graph:
    """The model's nodes and initialisers, indexed for the rewrite."""

    def __init__(self, model) -> None:
        from onnx import numpy_helper

        self.model = model
        self.arrays = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
        self.users: dict[str, list[NodeProto]] = defaultdict(list)
        for node in model.graph.node:
            for name in node.input:
                self.users[name].append(node)
        self.replaced: dict[int, list[NodeProto]] = {}  # id(node) -> nodes in its place
        self.dropped: set[int] = set()
        self.added: dict[str, np.ndarray] = {}

    def only_user(self, name: str) -> NodeProto | None:
        users = self.users.get(name, [])
        return users[0] if len(users) == 1 else None


def int8_query_graph(model_path: Path) -> bytes:
    """The serialized rewrite of `model_path` (an ONNX model with Cast/Mul-stored weights)."""
    import onnx

    graph = _Graph(onnx.load(str(model_path)))
    rewritten = sum(_rewrite_weight(graph, node) for node in graph.model.graph.node)
    if rewritten == 0:
        raise ValueError(f"{model_path}: no int8 weights stored as Cast/Mul were found")
    return _assembled(graph)


def _rewrite_weight(graph: _Graph, cast: NodeProto) -> bool:
    """Replace `cast` → Mul(scale) → Gather/MatMul if `cast` dequantises an int8 weight."""
    weight = graph.arrays.get(cast.input[0]) if cast.op_type == "Cast" else None
    if weight is None or weight.dtype != np.int8 or weight.ndim != 2:
        return False
    mul = graph.only_user(cast.output[0])
    if mul is None or mul.op_type != "Mul":
        return False
    scale_name = next(name for name in mul.input if name != cast.output[0])
    user = graph.only_user(mul.output[0])
    scale = graph.arrays.get(scale_name)
    if user is None or scale is None:
        return False
    if user.op_type == "Gather" and user.input[0] == mul.output[0] and scale.shape[1:] == (1,):
        nodes = _gathered_rows(cast.input[0], scale_name, user)
    elif user.op_type == "MatMul" and user.input[1] == mul.output[0] and scale.shape[:1] == (1,):
        nodes = _int8_matmul(graph, cast.input[0], weight, scale.reshape(-1), user)
    else:
        return False
    graph.dropped |= {id(cast), id(mul)}
    graph.replaced[id(user)] = nodes
    return True


def _gathered_rows(table: str, scales: str, gather: NodeProto) -> list[NodeProto]:
    from onnx import TensorProto, helper

    ids, out = gather.input[1], gather.output[0]
    return [
        helper.make_node("Gather", [table, ids], [f"{out}_q"], axis=0),
        helper.make_node("Gather", [scales, ids], [f"{out}_scale"], axis=0),
        helper.make_node("Cast", [f"{out}_q"], [f"{out}_f"], to=TensorProto.FLOAT),
        helper.make_node("Mul", [f"{out}_f", f"{out}_scale"], [out]),
    ]


def _int8_matmul(
    graph: _Graph, name: str, weight: np.ndarray, column_scales: np.ndarray, matmul: NodeProto
) -> list[NodeProto]:
    from onnx import helper

    k, n = weight.shape
    if k % BLOCK_SIZE:
        raise ValueError(f"weight {name!r}: {k} rows is not a multiple of {BLOCK_SIZE}")
    blocks = k // BLOCK_SIZE
    # MatMulNBits wants B as [N, blocks, block bytes] of unsigned values around ZERO_POINT.
    packed = (weight.astype(np.int16) + ZERO_POINT).astype(np.uint8).T.reshape(n, blocks, -1)
    graph.added[f"{name}_nbits"] = np.ascontiguousarray(packed)
    graph.added[f"{name}_nbits_scales"] = np.repeat(column_scales, blocks).astype(np.float32)
    return [
        helper.make_node(
            "MatMulNBits",
            [matmul.input[0], f"{name}_nbits", f"{name}_nbits_scales"],
            list(matmul.output),
            domain="com.microsoft",
            K=k,
            N=n,
            bits=8,
            block_size=BLOCK_SIZE,
            accuracy_level=ACCURACY_LEVEL,
        )
    ]


def _assembled(graph: _Graph) -> bytes:
    from onnx import helper, numpy_helper

    model = graph.model
    nodes = []
    for node in model.graph.node:
        if id(node) in graph.replaced:
            nodes.extend(graph.replaced[id(node)])
        elif id(node) not in graph.dropped:
            nodes.append(node)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    used = {name for node in nodes for name in node.input}
    kept = [init for init in model.graph.initializer if init.name in used]
    kept += [numpy_helper.from_array(array, name) for name, array in graph.added.items()]
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return model.SerializeToString()


if __name__ == "__main__":
    import sys

    from .sessions import write_cached

    sys.exit(write_cached(sys.argv[1:], int8_query_graph))
