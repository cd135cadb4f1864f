"""The passage-side graph: the package's model with its attention and GELU fused (adr/0020).

Rewrites of the package's graph, done once per machine:

- the package's int8 weights are dequantised once (`Cast` then `Mul` by their scale) into
  float32 initialisers, as onnxruntime's constant folding does at every session start;
- each layer's self-attention (three projections, reshapes, scaled product, mask, softmax,
  the exporter's NaN guard) becomes one com.microsoft `Attention` with the three
  projections packed in one weight, and each `Add`-`Div`-`Erf`-`Add`-`Mul`-`Mul` GELU one
  `BiasGelu`. onnxruntime's own optimiser fuses neither in this export; it still fuses
  the residual adds into `SkipLayerNormalization` when the session starts.

The default embedder runs the float32 kind: its vectors are the package graph's to within
float rounding. The int8 kinds multiply with the package's own int8 values and scales; they
are faster and agree less (adr/0041). "int8", which the "minilm-int8" embedder runs,
quantises the MatMuls' inputs per row (`MatMulIntegerToFloat`) and attention's per call
(`QAttention`); "int8-per-call" quantises every input per call (`DynamicQuantizeMatMul`),
and "uint8" does that with the weights shifted by 128; bench/performance/embed_graphs.py
measures them side by side.

`onnx` is imported only here, in a child process (`python -m docdex.model.passagegraph
MODEL CACHE_FILE`); the result is cached by sessions.py like the query graph.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from onnx import ModelProto, NodeProto

REWRITE_VERSION = 3  # part of the cache key: bump when the rewrite's output changes
# the int8 kind's vectors, part of the "minilm-int8" identity (choice.py): bump when they change
INT8_VECTORS = 2
NUM_HEADS = 12
MASK = "attention_mask_int32"
KINDS = ("float32", "int8", "int8-per-call", "uint8")


def passage_graph(model_path: Path, kind: str = "float32") -> bytes:
    """The serialized passage graph of `model_path`. `kind`: "float32" (fused only, the
    default's), "int8" (the package's int8 weights, the MatMuls' inputs quantised per row:
    the "minilm-int8" embedder's), or for the benchmark "int8-per-call" (every input
    quantised per call) and "uint8" (that with the weights shifted by 128, onnxruntime's
    AVX2 kernel that does not saturate int16 sums)."""
    import onnx

    if kind not in KINDS:
        raise ValueError(f"unknown passage graph kind {kind!r}: not one of {', '.join(KINDS)}")
    model = onnx.load(str(model_path))
    int8 = _fold_weights(model)
    layers = _fuse_attention(model, int8)
    gelus = _fuse_bias_gelu(model)
    if layers == 0 or gelus != layers:
        raise ValueError(f"{model_path}: found {layers} attention and {gelus} GELU blocks")
    if kind != "float32":
        _quantized(model, int8, kind)
    _drop_dead_nodes(model)
    return model.SerializeToString()


class Int8Weight:
    """A weight as the package stores it: int8 values and one float32 scale per column."""

    def __init__(self, values: np.ndarray, scale: np.ndarray) -> None:
        self.values, self.scale = values, scale.reshape(-1).astype(np.float32)

    def stored(self, unsigned: bool) -> tuple[np.ndarray, np.ndarray]:
        """(values, per-column zero points) as int8 around 0 or uint8 around 128."""
        if unsigned:
            shifted = (self.values.astype(np.int16) + 128).astype(np.uint8)
            return shifted, np.full(self.scale.shape, 128, np.uint8)
        return self.values, np.zeros(self.scale.shape, np.int8)

    @classmethod
    def joined(cls, parts: list[Int8Weight]) -> Int8Weight:
        return cls(
            np.concatenate([p.values for p in parts], axis=1),
            np.concatenate([p.scale for p in parts]),
        )


class _Graph:
    """Producers, users and initialisers of a model's graph, for pattern matching."""

    def __init__(self, model: ModelProto) -> None:
        from onnx import numpy_helper

        self.model = model
        self.arrays = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
        self.producer = {out: node for node in model.graph.node for out in node.output}
        self.users: dict[str, list[NodeProto]] = {}
        for node in model.graph.node:
            for name in node.input:
                self.users.setdefault(name, []).append(node)

    def made_by(self, name: str, op_type: str) -> NodeProto | None:
        node = self.producer.get(name)
        return node if node is not None and node.op_type == op_type else None

    def only_user(self, name: str, op_type: str) -> NodeProto | None:
        users = self.users.get(name, [])
        return users[0] if len(users) == 1 and users[0].op_type == op_type else None

    def constant(self, node: NodeProto) -> str | None:
        """The name of `node`'s one initialiser input (None if not exactly one)."""
        names = [name for name in node.input if name in self.arrays]
        return names[0] if len(names) == 1 else None


def _fold_weights(model: ModelProto) -> dict[str, Int8Weight]:
    """Replace every int8 initialiser's Cast → Mul(scale) by the float32 product; the
    int8 form of each one scaled per column (a MatMul's weight), by product name."""
    from onnx import numpy_helper

    graph = _Graph(model)
    folded: dict[str, np.ndarray] = {}
    int8: dict[str, Int8Weight] = {}
    dead: set[str] = set()
    for cast in model.graph.node:
        weight = graph.arrays.get(cast.input[0]) if cast.op_type == "Cast" else None
        mul = graph.only_user(cast.output[0], "Mul") if weight is not None else None
        if weight is None or mul is None or weight.dtype != np.int8:
            continue
        scale = graph.constant(mul)
        if scale is None:
            continue
        scales = graph.arrays[scale]
        folded[mul.output[0]] = (weight.astype(np.float32) * scales).astype(np.float32)
        if weight.ndim == 2 and scales.shape == (1, weight.shape[1]):
            int8[mul.output[0]] = Int8Weight(weight, scales)
        dead |= {cast.output[0], mul.output[0]}
    nodes = [n for n in model.graph.node if not dead.intersection(n.output)]
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    model.graph.initializer.extend(numpy_helper.from_array(a, n) for n, a in folded.items())
    return int8


def _projection(graph: _Graph, add: NodeProto | None) -> tuple[str, str, str] | None:
    """(input, weight, bias) of `add` = MatMul(input, weight) + bias, else None."""
    if add is None:
        return None
    bias = graph.constant(add)
    inner = next((n for n in add.input if n != bias), None)
    if not bias or not inner:
        return None
    matmul = graph.made_by(inner, "MatMul")
    if matmul is None or matmul.input[1] not in graph.arrays:
        return None
    return matmul.input[0], matmul.input[1], bias


def _fuse_attention(model: ModelProto, int8: dict[str, Int8Weight]) -> int:
    """One `Attention` per layer in place of its self-attention; the count fused."""
    from onnx import TensorProto, helper, numpy_helper

    graph = _Graph(model)
    by_bias: dict[str, NodeProto] = {}
    for node in model.graph.node:
        constant = graph.constant(node) if node.op_type == "Add" else None
        if constant is not None:
            by_bias[constant] = node
    replaced: dict[str, NodeProto] = {}  # output name -> the Attention that now makes it
    for bias_name, out_add in by_bias.items():
        if not bias_name.endswith("attention.output.dense.bias"):
            continue
        prefix = bias_name.removesuffix("output.dense.bias")
        found = [_projection(graph, by_bias.get(f"{prefix}self.{p}.bias")) for p in _QKV]
        parts = [p for p in found if p is not None]
        out = _projection(graph, out_add)
        if out is None or len(parts) != len(_QKV) or len({p[0] for p in parts}) != 1:
            continue
        weight = np.concatenate([graph.arrays[p[1]] for p in parts], axis=1)
        bias = np.concatenate([graph.arrays[p[2]] for p in parts])
        name = f"{prefix}qkv"
        if all(p[1] in int8 for p in parts):
            int8[f"{name}.weight"] = Int8Weight.joined([int8[p[1]] for p in parts])
        model.graph.initializer.extend(
            [
                numpy_helper.from_array(weight, f"{name}.weight"),
                numpy_helper.from_array(bias, f"{name}.bias"),
            ]
        )
        replaced[out[0]] = helper.make_node(
            "Attention",
            [parts[0][0], f"{name}.weight", f"{name}.bias", MASK],
            [out[0]],
            name=f"{name}.attention",
            domain="com.microsoft",
            num_heads=NUM_HEADS,
        )
    if not replaced:
        return 0
    cast = helper.make_node("Cast", ["attention_mask"], [MASK], to=TensorProto.INT32)
    _put_in_place(model, replaced, first=[cast])
    _use_microsoft_domain(model)
    return len(replaced)


_QKV = ("query", "key", "value")


def _fuse_bias_gelu(model: ModelProto) -> int:
    """`BiasGelu(x, bias)` in place of x+bias → Div(√2) → Erf → Add(1) → Mul(½) → Mul; the
    count fused."""
    from onnx import helper

    graph = _Graph(model)
    replaced: dict[str, NodeProto] = {}
    for erf in model.graph.node:
        if erf.op_type != "Erf":
            continue
        div = graph.made_by(erf.input[0], "Div")
        add = graph.made_by(div.input[0], "Add") if div is not None else None
        one = graph.only_user(erf.output[0], "Add")
        half = graph.only_user(one.output[0], "Mul") if one is not None else None
        gelu = graph.only_user(half.output[0], "Mul") if half is not None else None
        bias = graph.constant(add) if add is not None else None
        if gelu is None or add is None or bias is None or add.output[0] not in gelu.input:
            continue
        inner = next(n for n in add.input if n != bias)
        replaced[gelu.output[0]] = helper.make_node(
            "BiasGelu", [inner, bias], list(gelu.output), domain="com.microsoft"
        )
    _put_in_place(model, replaced)
    return len(replaced)


def _put_in_place(
    model: ModelProto, replaced: dict[str, NodeProto], first: Sequence[NodeProto] = ()
) -> None:
    """The graph's nodes with each node making an output of `replaced` swapped for the new
    node that makes it now, after `first`; the nodes the new ones bypass stay for
    _drop_dead_nodes."""
    nodes = list(first)
    for node in model.graph.node:
        made = [replaced[o] for o in node.output if o in replaced]
        nodes.extend(made or [node])
    del model.graph.node[:]
    model.graph.node.extend(nodes)


def _drop_dead_nodes(model: ModelProto) -> None:
    """Keep only the nodes (and initialisers) the graph's outputs depend on."""
    needed = {o.name for o in model.graph.output}
    kept = []
    for node in reversed(model.graph.node):
        if needed.intersection(node.output):
            kept.append(node)
            needed.update(name for name in node.input if name)
    del model.graph.node[:]
    model.graph.node.extend(reversed(kept))
    initializers = [i for i in model.graph.initializer if i.name in needed]
    del model.graph.initializer[:]
    model.graph.initializer.extend(initializers)


def _use_microsoft_domain(model: ModelProto) -> None:
    from onnx import helper

    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))


def _quantized(model: ModelProto, int8: dict[str, Int8Weight], kind: str) -> None:
    """Every MatMul and Attention whose weight the package stores in int8 multiplies in
    int8 with exactly those values and scales. Attention's input is quantised per call; a
    MatMul's per row (`kind` "int8") or per call too ("int8-per-call", "uint8")."""
    from onnx import numpy_helper

    graph = _Graph(model)
    added: dict[str, np.ndarray] = {}
    nodes: list[NodeProto] = []
    dead: set[int] = set()
    for node in model.graph.node:
        weight = int8.get(node.input[1]) if node.op_type in ("MatMul", "Attention") else None
        if weight is None:
            nodes.append(node)
            continue
        name = node.input[1]
        values, zero = weight.stored(unsigned=kind == "uint8")
        added |= {
            f"{name}_int8": values,
            f"{name}_int8_scale": weight.scale,
            f"{name}_int8_zero": zero,
        }
        q_inputs = [f"{name}_int8", f"{name}_int8_scale", f"{name}_int8_zero"]
        if node.op_type == "Attention":
            nodes.extend(_int8_attention(node, q_inputs))
        elif kind == "int8":
            nodes.extend(_row_quantized_matmul(node, q_inputs, added))
        else:
            nodes.append(_int8_matmul(graph, node, q_inputs, dead))
    nodes = [n for n in nodes if id(n) not in dead]
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    model.graph.initializer.extend(numpy_helper.from_array(a, n) for n, a in added.items())


def _int8_attention(attention: NodeProto, q_inputs: list[str]) -> list[NodeProto]:
    """A QAttention in place of `attention`, its input quantised per call."""
    from onnx import helper

    x = attention.input[0]
    weight, scale, zero = q_inputs
    quantized = [f"{x}_q", f"{x}_scale", f"{x}_zero"]
    return [
        helper.make_node("DynamicQuantizeLinear", [x], quantized),
        helper.make_node(
            "QAttention",
            [quantized[0], weight, attention.input[2], quantized[1], scale]
            + [attention.input[3], quantized[2], zero],
            list(attention.output),
            domain="com.microsoft",
            num_heads=NUM_HEADS,
        ),
    ]


ROW_LEVELS = 127.0  # a row's largest magnitude maps to ±127, around the zero point 128
ROW_CONSTANTS: dict[str, np.ndarray] = {
    "row_levels": np.array(ROW_LEVELS, np.float32),
    "row_one": np.array(1.0, np.float32),
    "row_zero": np.array(128, np.uint8),
    "row_tiny": np.array(1e-12, np.float32),  # an all-zero row divides by this, not by 0
}


def _row_quantized_matmul(
    matmul: NodeProto, q_inputs: list[str], added: dict[str, np.ndarray]
) -> list[NodeProto]:
    """`matmul` with its input quantised per row, symmetric (scale = the row's largest
    magnitude / 127): each token's own scale, where one per call lets the few tokens with
    outlying values coarsen every other's. MatMulIntegerToFloat multiplies in int8 and scales
    by the weight's columns; the row's scale is multiplied in after. The bias Add stays."""
    from onnx import helper

    x, p = matmul.input[0], f"{matmul.output[0]}_rows"
    added |= ROW_CONSTANTS
    weight, scale, zero = q_inputs
    return [
        helper.make_node("Abs", [x], [f"{p}_abs"]),
        helper.make_node("ReduceMax", [f"{p}_abs"], [f"{p}_max"], axes=[-1], keepdims=1),
        helper.make_node("Max", [f"{p}_max", "row_tiny"], [f"{p}_top"]),
        helper.make_node("Div", [f"{p}_top", "row_levels"], [f"{p}_scale"]),
        helper.make_node("Div", [x, f"{p}_scale"], [f"{p}_scaled"]),
        helper.make_node("QuantizeLinear", [f"{p}_scaled", "row_one", "row_zero"], [f"{p}_q"]),
        helper.make_node(
            "MatMulIntegerToFloat",
            [f"{p}_q", weight, "row_one", scale, "row_zero", zero],
            [f"{p}_products"],
            domain="com.microsoft",
        ),
        helper.make_node("Mul", [f"{p}_products", f"{p}_scale"], list(matmul.output)),
    ]


def _int8_matmul(
    graph: _Graph, matmul: NodeProto, q_inputs: list[str], dead: set[int]
) -> NodeProto:
    """A DynamicQuantizeMatMul in place of `matmul`, taking in the bias Add after it."""
    from onnx import helper

    add = graph.only_user(matmul.output[0], "Add")
    bias = graph.constant(add) if add is not None else None
    taken = add if bias else None  # the bias Add it takes in
    if taken is not None:
        dead.add(id(taken))
    return helper.make_node(
        "DynamicQuantizeMatMul",
        [matmul.input[0], *q_inputs, *([bias] if bias else [])],
        list(taken.output if taken is not None else matmul.output),
        domain="com.microsoft",
    )


if __name__ == "__main__":
    import sys

    from .sessions import write_cached

    model_file, graph_file, *kind = sys.argv[1:]  # MODEL FILE [float32|int8|uint8]
    rewrite = functools.partial(passage_graph, kind=kind[0] if kind else "float32")
    sys.exit(write_cached([model_file, graph_file], rewrite))
