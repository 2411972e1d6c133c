"""What each layer costs, as formulas in the symbolic dims: FLOPs, and the bytes autograd saves for backward.

Both are measured on the fake run itself, not modelled per layer type: torch's ``FlopCounterMode``
counts each node's matmuls, convolutions and attention with the symbolic sizes, and a
``saved_tensors_hooks`` pack hook sees every tensor autograd keeps for the backward pass. A saved
tensor counts once however many ops save it (by storage), and parameters (leaves that require grad,
and views of them) are not activations. The totals follow from these and the parameters:
training memory is weights + gradients + optimizer state + saved activations + the output and
its gradient (both alive when backward starts), with activation
checkpointing of the repeated blocks (``layers.0``, ``layers.1``, ...) it is the blocks' inputs plus
one block's saved activations; inference memory is weights + the KV cache per token.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass, field

import sympy
import torch
from torch.utils.flop_counter import FlopCounterMode

# optimizer state per parameter element, in elements of the parameter's dtype
OPTIMIZER_STATE = {"adamw": 2, "adam": 2, "sgd": 0, "momentum": 1, "rmsprop": 1, "adagrad": 1, "none": 0}
_BLOCK = re.compile(r"^(?P<list>.+)\.(?P<index>\d+)$")


def expr(value) -> sympy.Expr:
    """A SymInt, int or sympy value as a sympy expression."""
    node = getattr(value, "node", None)
    if node is not None:
        return sympy.sympify(node.expr)
    if isinstance(value, sympy.Basic):
        return value
    return sympy.Integer(int(value))


def nbytes(tensor: torch.Tensor) -> sympy.Expr:
    return expr(tensor.numel()) * tensor.element_size()


@dataclass
class NodeCost:
    flops: sympy.Expr = sympy.Integer(0)
    saved: sympy.Expr = sympy.Integer(0)  # bytes first saved for backward by this node
    saved_keys: list[int] = field(default_factory=list)  # storages this node saves (peak.py)


class CostMeter:
    """Counts FLOPs per node and the tensors autograd saves while the fake graph runs."""

    def __init__(self) -> None:
        self._pending: list[torch.Tensor] = []
        self._excluded: set[int] = set()
        self._seen: set[int] = set()
        self.sizes: dict[int, sympy.Expr] = {}  # storage key -> bytes
        self._kept: list[torch.Tensor] = []  # keeps the storages (and so their keys) alive
        self.output = None

    def exclude(self, mode, tensors) -> None:
        """Buffers and frozen weights are not activations: their fake storages are never counted. Their
        sizes are static: a symbolic one would be a fresh symbol (s93) in every formula that uses it."""
        for tensor in tensors:
            try:
                fake = mode.from_tensor(tensor, static_shapes=True)  # kept: the mode's memo hands it out again
                self._excluded.add(fake.untyped_storage()._cdata)
                # autograd may save the real tensor itself (a buffer passed straight to an op)
                self._excluded.add(tensor.untyped_storage()._cdata)
                self._kept += [fake, tensor]
            except Exception:  # noqa: BLE001 - a tensor the fake mode cannot take is simply not excluded
                continue

    @contextmanager
    def saving(self):
        with torch.autograd.graph.saved_tensors_hooks(self._pack, _unpack):
            yield

    def _pack(self, tensor):
        self._pending.append(tensor)
        return tensor, tensor._version  # hooks switch autograd's own version check off: _unpack does it

    @contextmanager
    def node(self, cost: NodeCost, attention: list | None = None, translate: dict | None = None):
        """Measure the node run inside: ``cost`` is filled in when the block ends. For an attention
        call (``attention``: its query, key and value), what a fused kernel saves is counted: on the
        meta device the math kernel runs and saves the [B, H, T, T] weights, which flash and
        memory-efficient attention never hold; they keep q, k, v, the output and a float32
        log-sum-exp per row. ``translate``: storage keys of input objects -> the storages those
        inputs stand for (reuse.py hands one block's objects to the next)."""
        self._pending.clear()
        self.output = None
        with FlopCounterMode(display=False) as counter:
            yield
            cost.flops = expr(counter.get_total_flops())
        output = self.output
        tensors = self._pending
        if attention is not None and isinstance(output, torch.Tensor) and output.dim() >= 2:
            tensors = [*attention, output]
            rows = expr(output.numel()) / expr(output.shape[-1])
            self.count_saved(cost, self.new_key(rows * 4), None)  # the log-sum-exp: a storage of its own
        for tensor in tensors:
            key = self.key(tensor)
            self.count_saved(cost, translate.get(key, key) if translate else key, tensor)
        self._pending = []

    def new_key(self, size: sympy.Expr) -> int:
        """A storage no tensor stands for (the fused attention's log-sum-exp), of ``size`` bytes."""
        key = -len(self.sizes) - 1
        self.sizes[key] = size
        return key

    def count_saved(self, cost: NodeCost, key: int | None, tensor) -> None:
        """The node saves storage ``key``: its bytes count at the first node that saves it."""
        if key is None or key in cost.saved_keys:
            return
        cost.saved_keys.append(key)
        if key not in self._seen:
            self._seen.add(key)
            if tensor is not None:
                self._kept.append(tensor)
            cost.saved += self.sizes[key]

    def key(self, tensor) -> int | None:
        """The storage an activation lives in (a view's is its base's); None for parameters,
        buffers and anything else that is not an activation."""
        if not isinstance(tensor, torch.Tensor):
            return None
        base = tensor._base if tensor._base is not None else tensor
        if base.is_leaf and base.requires_grad:  # a parameter, or a view of one
            return None
        try:
            storage = tensor.untyped_storage()
            key, size = storage._cdata, expr(storage.nbytes())
        except (RuntimeError, NotImplementedError):
            key, size = id(base), nbytes(base)
        if key in self._excluded:
            return None
        if key not in self.sizes:
            self.sizes[key] = size
            self._kept.append(tensor)
        return key

    def leaf_keys(self, tensors: list, translate: dict | None = None) -> list[int | None]:
        """The activation storage of each tensor (None: not an activation), translated."""
        keys = [self.key(tensor) for tensor in tensors]
        return [translate.get(k, k) for k in keys] if translate else keys


def _unpack(packed):
    tensor, version = packed
    if tensor._version != version:
        raise RuntimeError(f"one of the variables needed for gradient computation has been modified by an "
                           f"inplace operation: [{tensor.dtype}{list(tensor.shape)}] is at version "
                           f"{tensor._version}; expected version {version} instead.")
    return tensor


@dataclass
class CostSummary:
    """The totals (sympy expressions in the user's dim names; bytes unless named flops)."""

    weights: sympy.Expr
    trainable: sympy.Expr
    forward_flops: sympy.Expr
    saved: sympy.Expr
    optimizer: str
    output: sympy.Expr = sympy.Integer(0)  # the model's output, alive with its gradient when backward starts
    checkpointed: sympy.Expr | None = None
    blocks: str = ""
    block_count: int = 0
    kv_per_token: sympy.Expr | None = None
    kv_source: str = ""
    peak: float | None = None  # bytes at the training step's highest point, replayed at --dims (peak.py)
    notes: list[str] = field(default_factory=list)

    @property
    def optimizer_state(self) -> sympy.Expr:
        return self.trainable * OPTIMIZER_STATE[self.optimizer]

    @property
    def training(self) -> sympy.Expr:
        return self.weights + self.trainable + self.optimizer_state + self.saved + 2 * self.output

    @property
    def training_checkpointed(self) -> sympy.Expr | None:
        if self.checkpointed is None:
            return None
        return self.weights + self.trainable + self.optimizer_state + self.checkpointed + 2 * self.output

    @property
    def training_flops(self) -> sympy.Expr:
        """Forward and backward: two matmuls per forward matmul (the input's and the weight's gradient)."""
        return 3 * self.forward_flops


def weight_bytes(model: torch.nn.Module) -> tuple[int, int]:
    """Bytes of all parameters and buffers, and of the parameters that train (tied weights once)."""
    seen: set[int] = set()
    total = trainable = 0
    for tensor in [*model.parameters(), *model.buffers()]:
        if id(tensor) in seen:
            continue
        seen.add(id(tensor))
        size = tensor.numel() * tensor.element_size()
        total += size
        if isinstance(tensor, torch.nn.Parameter) and tensor.requires_grad:
            trainable += size
    return total, trainable


def blocks_of(model: torch.nn.Module) -> tuple[str, list[str]]:
    """The longest run of repeated blocks (children ``0..n-1`` of one ModuleList of one class)."""
    modules = dict(model.named_modules())
    best: tuple[str, list[str]] = ("", [])
    for name, layer in modules.items():
        if not isinstance(layer, (torch.nn.ModuleList, torch.nn.Sequential)) or len(layer) < 2:
            continue
        children = [f"{name}.{i}" if name else str(i) for i in range(len(layer))]
        if len({type(modules[c]) for c in children}) == 1 and len(children) > len(best[1]):
            best = (name, children)
    return best


def block_of(module_path: str, blocks: list[str]) -> str | None:
    for block in blocks:
        if module_path == block or module_path.startswith(block + "."):
            return block
    return None


def kv_from_config(model: torch.nn.Module) -> sympy.Expr | None:
    """Bytes of keys and values cached per token of one sequence, from a Hugging Face style config."""
    config = getattr(model, "config", None)
    layers = getattr(config, "num_hidden_layers", None)
    heads = getattr(config, "num_attention_heads", None)
    hidden = getattr(config, "hidden_size", None)
    if not all(isinstance(v, int) and v > 0 for v in (layers, heads, hidden)):
        return None
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or hidden // heads
    element = next((p.element_size() for p in model.parameters()), 4)
    return sympy.Integer(2 * layers * kv_heads * head_dim * element)


def is_attention(node: torch.fx.Node) -> bool:
    target = node.target
    if target is torch.nn.functional.scaled_dot_product_attention:
        return True
    return isinstance(target, torch._ops.OpOverload) and "scaled_dot_product" in target.overloadpacket.__name__


def kv_from_attention(keys_values: list[tuple[torch.Tensor, torch.Tensor]]) -> sympy.Expr | None:
    """Bytes per token of one sequence of the keys and values the attention calls read
    ([B, heads, T, head_dim] each)."""
    total = sympy.Integer(0)
    for key, value in keys_values:
        for tensor in (key, value):
            if tensor.dim() < 3:
                return None
            total += nbytes(tensor) / (expr(tensor.shape[0]) * expr(tensor.shape[-2]))
    return sympy.simplify(total) if keys_values else None


def summarise(rows, gm: torch.fx.GraphModule, model: torch.nn.Module, optimizer: str) -> CostSummary:
    """The totals of a propagated trace (``rows`` in execution order, with flops/saved/output_bytes)."""
    weights, trainable = weight_bytes(model)
    forward = sum((row.flops for row in rows), sympy.Integer(0))
    saved = sum((row.saved for row in rows), sympy.Integer(0))
    summary = CostSummary(sympy.Integer(weights), sympy.Integer(trainable), sympy.expand(forward),
                          sympy.expand(saved), optimizer)
    outputs = [row for row in rows if row.op == "output"]
    if outputs:
        summary.output = outputs[-1].output_bytes or sympy.Integer(0)
    name, blocks = blocks_of(model)
    if blocks:
        inside: dict[str, sympy.Expr] = {block: sympy.Integer(0) for block in blocks}
        last_output: dict[str, sympy.Expr] = {}
        outside = sympy.Integer(0)
        for row in rows:
            block = block_of(row.module, blocks)
            if block is None:
                outside += row.saved
            else:
                inside[block] += row.saved
                last_output[block] = row.output_bytes
        if len(last_output) == len(blocks):  # every block ran
            heaviest = max(inside.values(), key=_size_at_hints)
            boundaries = sum(last_output.values(), sympy.Integer(0))
            summary.checkpointed = sympy.expand(outside + boundaries + heaviest)
            summary.blocks, summary.block_count = name, len(blocks)
    generates = getattr(model, "can_generate", None)  # a Hugging Face model says whether it generates
    if callable(generates) and not generates():
        return summary  # an encoder keeps no KV cache
    summary.kv_per_token = kv_from_config(model)
    if summary.kv_per_token is not None:
        summary.kv_source = "the model's config"
    else:
        pairs = [(node.args[1].meta["fake"], node.args[2].meta["fake"]) for node in gm.graph.nodes
                 if node.op == "call_function" and is_attention(node) and len(node.args) >= 3
                 and all(isinstance(a, torch.fx.Node) and isinstance(a.meta.get("fake"), torch.Tensor)
                         for a in node.args[1:3])]
        summary.kv_per_token = kv_from_attention(pairs)
        if summary.kv_per_token is not None:
            summary.kv_source = f"the keys and values of {len(pairs)} attention call(s)"
    return summary


def _size_at_hints(value: sympy.Expr) -> float:
    """Order expressions by their value at a large size of every symbol (blocks are compared this way)."""
    return float(value.subs({symbol: 4096 for symbol in value.free_symbols}))
