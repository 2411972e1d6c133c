"""Repeated blocks run once: a node whose op and inputs look exactly like an earlier node's reuses its result.

On fake tensors a node's outcome (output sizes, strides and dtypes, FLOPs, what autograd saves) is a
function of its op, its layer's configuration and its inputs' metadata: there are no values. The
32 blocks of a LLaMA make the same ~50 calls on inputs of the same symbolic shapes, so the first
block's results stand for the others: a later node gets the earlier node's result objects (only
their metadata is ever read) and no op is dispatched.

Identity is kept by node, not by object: every node records the storages its tensors live in
(``keys``, one per tensor in its result). A reused node gets fresh storages of the recorded sizes,
or its input's storage for a view, and counts the recorded FLOPs and saved tensors against its own
inputs and outputs, so each block's activations are its own in the totals and in the peak replay,
and a tensor saved twice still counts once. A node that runs on objects a reused node handed out
has their storages translated to its inputs' recorded ones.

Only what is safe to repeat is reused: results made of tensors and plain values in tuples, no two
new tensors sharing a storage, and no symbol the inputs do not have (a data-dependent size is a
fresh symbol each time). A graph with in-place calls is never reused: the backward check needs
its real autograd graph.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

from torchlint.graph.costs import CostMeter, NodeCost

_PLAIN = (int, float, bool, str, type(None), torch.dtype, torch.device, torch.memory_format, torch.layout,
          type(Ellipsis))
_SYMBOLIC = (torch.SymInt, torch.SymFloat, torch.SymBool)


class _Unkeyable(Exception):
    pass


@dataclass
class _Entry:
    result: object  # the first node's result, handed out again
    outputs: list  # per tensor in the result: ("in", input index) | ("new", bytes) | None (not an activation)
    flops: object
    saved: list  # per storage saved: ("in", input index) | ("out", output index) | ("own", bytes)


class NodeMemo:
    """Results of nodes seen so far, by (op, layer configuration, input metadata)."""

    def __init__(self, meter: CostMeter) -> None:
        self.meter = meter
        self.entries: dict = {}
        self.hits = 0

    def key(self, node: torch.fx.Node, layer, args, kwargs):
        """The node's key, or None when it cannot be reused (inputs the key cannot describe)."""
        if node.op == "call_module":
            what = _layer_key(layer)
        elif node.op in ("call_function", "call_method"):
            what = (node.op, node.target)
        else:
            return None
        try:
            key = (what, _signature((args, kwargs)))
            hash(key)
        except (_Unkeyable, TypeError):
            return None
        return key

    def replay(self, key, in_keys: list, cost: NodeCost) -> tuple[object, list]:
        """The earlier node's result and this node's storages; ``cost`` filled in for this node."""
        entry = self.entries[key]
        out_keys = [None if rule is None else in_keys[rule[1]] if rule[0] == "in" else self.meter.new_key(rule[1])
                    for rule in entry.outputs]
        cost.flops = entry.flops
        for source, where in entry.saved:
            saved = self.meter.new_key(where) if source == "own" else \
                in_keys[where] if source == "in" else out_keys[where]
            self.meter.count_saved(cost, saved, None)
        self.hits += 1
        return entry.result, out_keys

    def remember(self, key, args, kwargs, in_keys: list, result, out_keys: list, cost: NodeCost) -> None:
        """Record a node that ran, if its outcome can stand for later nodes with the same key."""
        if not _tuples_only(result) or not _symbols(result) <= _symbols((args, kwargs)):
            return
        position = {k: i for i, k in reversed(list(enumerate(in_keys))) if k is not None}
        outputs: list = []
        new: set = set()
        for k in out_keys:
            if k is None:
                outputs.append(None)
            elif k in position:
                outputs.append(("in", position[k]))
            elif k in new:
                return  # two new tensors sharing a storage
            else:
                new.add(k)
                outputs.append(("new", self.meter.sizes[k]))
        out_position = {k: i for i, k in reversed(list(enumerate(out_keys))) if k is not None}
        saved = [("in", position[k]) if k in position else ("out", out_position[k]) if k in out_position
                 else ("own", self.meter.sizes[k]) for k in cost.saved_keys]
        self.entries[key] = _Entry(result, outputs, cost.flops, saved)

    def distinct(self, args, kwargs, in_keys: list) -> tuple[object, object, dict]:
        """Inputs for a node that runs, and their object storages -> the storages they stand for. One
        object handed out for two different storages (the keys' and the queries' rotary products)
        is copied, so autograd's saves of each can be told apart. Call inside the fake mode."""
        leaves, spec = tree_flatten((args, kwargs))
        translate: dict = {}
        tensors = iter(in_keys)
        changed = False
        for index, leaf in enumerate(leaves):
            if not isinstance(leaf, torch.Tensor):
                continue
            wanted = next(tensors, None)
            have = self.meter.key(leaf)
            if wanted is None or have is None:
                continue
            if translate.get(have, wanted) != wanted:
                leaf = leaves[index] = _copy(leaf)
                have, changed = self.meter.key(leaf), True
            translate[have] = wanted
        if changed:
            args, kwargs = tree_unflatten(leaves, spec)
        return args, kwargs, translate


class _Fresh(torch.autograd.Function):
    """A new tensor with autograd history (a leaf that requires grad would be taken for a parameter)."""

    @staticmethod
    def forward(ctx, seed, size, stride, dtype):  # noqa: ARG004 - the signature autograd calls
        return seed.new_empty_strided(size, stride, dtype=dtype)

    @staticmethod
    def backward(ctx, grad):  # noqa: ARG004
        return None, None, None, None


def _copy(tensor: torch.Tensor) -> torch.Tensor:
    """A tensor like ``tensor`` in a storage of its own (inside the fake mode)."""
    if not tensor.requires_grad:
        return torch.empty_strided(tensor.shape, tensor.stride(), dtype=tensor.dtype, device=tensor.device)
    seed = torch.empty((), dtype=tensor.dtype, device=tensor.device, requires_grad=True)
    return _Fresh.apply(seed, tensor.shape, tensor.stride(), tensor.dtype)


def input_keys(node: torch.fx.Node) -> list:
    """The storages of the tensors a node reads, in the order ``tree_flatten`` gives its fetched inputs."""
    keys: list = []

    def visit(argument) -> None:
        if isinstance(argument, torch.fx.Node):
            keys.extend(argument.meta.get("keys", ()))
        elif isinstance(argument, (tuple, list)):
            for item in argument:
                visit(item)
        elif isinstance(argument, dict):
            for item in argument.values():
                visit(item)

    visit(node.args)
    visit(node.kwargs)
    return keys


def tensor_leaves(value) -> list[torch.Tensor]:
    return [leaf for leaf in tree_flatten(value)[0] if isinstance(leaf, torch.Tensor)]


def _layer_key(layer) -> tuple:
    """A leaf layer by its class, configuration and the shapes of what it holds."""
    if not isinstance(layer, torch.nn.Module):
        raise _Unkeyable
    held = tuple((name, tuple(t.shape), t.dtype, t.requires_grad)
                 for name, t in (*layer.named_parameters(), *layer.named_buffers()))
    return type(layer), layer.extra_repr(), layer.training, held


def _signature(value):
    """Inputs as hashable metadata: tensors by sizes, strides, dtype, and whether they are parameters."""
    if isinstance(value, torch.Tensor):
        base = value._base if value._base is not None else value
        return ("tensor", _sizes(value.shape), _sizes(value.stride()), _size(value.storage_offset()), value.dtype,
                value.device.type, value.requires_grad, base.is_leaf)
    if isinstance(value, _SYMBOLIC):
        return ("sym", value.node.expr)
    if isinstance(value, (tuple, list, torch.Size)):
        return (type(value).__name__, *(_signature(v) for v in value))
    if isinstance(value, dict):
        return ("dict", *((k, _signature(v)) for k, v in value.items()))
    if isinstance(value, slice):
        return ("slice", _signature(value.start), _signature(value.stop), _signature(value.step))
    if isinstance(value, _PLAIN):
        return value
    raise _Unkeyable


def _size(value):
    return value.node.expr if isinstance(value, torch.SymInt) else value


def _sizes(values) -> tuple:
    return tuple(_size(v) for v in values)


def _tuples_only(value) -> bool:
    """Tensors and plain values, in tuples only (a list or another object could be changed later)."""
    if isinstance(value, (torch.Tensor, *_PLAIN, *_SYMBOLIC)):
        return True
    if isinstance(value, (tuple, torch.Size)) and type(value) in (tuple, torch.Size):
        return all(_tuples_only(item) for item in value)
    return False


def _symbols(value) -> set:
    """The free symbols of every size, stride, offset and symbolic number in ``value``."""
    found: set = set()
    for leaf in tree_flatten(value)[0]:
        if isinstance(leaf, torch.Tensor):
            numbers = (*leaf.shape, *leaf.stride(), leaf.storage_offset())
        elif isinstance(leaf, slice):
            numbers = (leaf.start, leaf.stop, leaf.step)
        else:
            numbers = (leaf,)
        for number in numbers:
            if isinstance(number, _SYMBOLIC):
                found |= number.node.expr.free_symbols
    return found
