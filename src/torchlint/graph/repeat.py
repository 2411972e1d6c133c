"""Export a model whose repeated blocks are all alike with two of them, then repeat the second block's graph.

`torch.export` spends most of a Hugging Face model's trace re-tracing blocks that are alike: 32
decoder layers, 4 to 9 s of symbolic dispatch for a 7B LLaMA. When every block of the longest run
(children of one ModuleList) has the same structure (classes, configurations, parameter shapes)
and the same plain attributes apart from its own index (``layer_idx``), the model is exported with
the first two blocks only, and the second block's nodes are copied for blocks 2..n-1: each copy
reads the previous copy's outputs where block 1 read block 0's, its own parameters where block 1
read its own, and the shared values (rotary tables, masks) block 1 read. The graph after the
blocks reads the last copy. Anything unexpected (blocks that differ, a graph that does not split
into two alike runs of nodes, a later node reading block 0) gives None: the caller exports the
whole model instead.
"""

from __future__ import annotations

import operator
import warnings

import torch

from torchlint.graph.costs import blocks_of

MIN_BLOCKS = 3
_PLAIN = (int, float, str, bool, type(None))


def export_repeated(model: torch.nn.Module, export) -> tuple[torch.fx.GraphModule, str] | None:
    """``export()`` of the model cut to two blocks, with the rest repeated; None when not alike.
    Returns the graph and a note for the report."""
    name, blocks = blocks_of(model)
    if len(blocks) < MIN_BLOCKS or not name or not _alike(model, blocks):
        return None
    container = model.get_submodule(name)
    parent_name, _, attribute = name.rpartition(".")
    parent = model.get_submodule(parent_name)
    short = type(container)(list(container.children())[:2])
    setattr(parent, attribute, short)
    try:
        gm = export()
    except Exception:  # noqa: BLE001 - a forward that needs every block: the whole model is exported
        return None
    finally:
        setattr(parent, attribute, container)
    try:
        if not _repeat(gm, model, name, len(blocks)):
            return None
    except _NotAlike:
        return None
    return gm, (f"the {len(blocks)} blocks of {name} are alike: traced blocks 0 and 1, and repeated block 1's graph "
                f"for blocks 2-{len(blocks) - 1}")


def _alike(model: torch.nn.Module, blocks: list[str]) -> bool:
    """Blocks with the same classes, configurations and parameter shapes, and the same plain attributes
    apart from those that hold each block's own index (``layer_idx``)."""
    shapes, plains = zip(*(_shape_of(model.get_submodule(block)) for block in blocks), strict=True)
    if any(shape != shapes[0] for shape in shapes):
        return False
    index_keys = {key for key in plains[0] if all(plain.get(key) == i for i, plain in enumerate(plains))}
    rest = [{k: v for k, v in plain.items() if k not in index_keys} for plain in plains]
    return all(plain == rest[0] for plain in rest)


def _shape_of(block: torch.nn.Module) -> tuple[list, dict]:
    """A block's classes, configurations and what they hold; and its modules' plain attributes."""
    shape, plain = [], {}
    for path, module in block.named_modules():
        held = [(n, tuple(t.shape), t.dtype, t.requires_grad)
                for n, t in (*module.named_parameters(recurse=False), *module.named_buffers(recurse=False))]
        shape.append((path, type(module), module.extra_repr(), module.training, held))
        for key, value in vars(module).items():
            if not key.startswith("_") and isinstance(value, _PLAIN):
                plain[(path, key)] = value
    return shape, plain


def _block_index(node: torch.fx.Node, prefix: str) -> int | None:
    for path, _kind in (node.meta.get("nn_module_stack") or {}).values():
        path = str(path)
        if path.startswith(prefix):
            head = path[len(prefix):].split(".", 1)[0]
            if head.isdigit():
                return int(head)
    return None


def _repeat(gm: torch.fx.GraphModule, model: torch.nn.Module, name: str, count: int) -> bool:
    """Copy block 1's nodes for blocks 2..count-1 in ``gm``; False if the graph is not two alike runs."""
    graph = gm.graph
    nodes = list(graph.nodes)
    prefix = f"{name}."
    where = {node: _block_index(node, prefix) for node in nodes}
    first = [n for n in nodes if where[n] == 0]
    second = [n for n in nodes if where[n] == 1]
    if not first or not second or len(first) < len(second):
        return False
    position = {node: i for i, node in enumerate(nodes)}
    start, end = position[second[0]], position[second[-1]]
    if end - start + 1 != len(second) or position[first[-1]] > start:
        return False  # block 1 is not one run of nodes after block 0
    # block 0 may start with values made at their first use and shared by every block after (the export's
    # sizes of the input, a mask): block 1 matches block 0's last nodes, and reads those first ones as shared
    tail = first[len(first) - len(second):]
    if any((a.op, a.target) != (b.op, b.target) for a, b in zip(tail, second, strict=True)):
        return False
    in_first = {node: i for i, node in enumerate(tail)}
    in_second = set(second)
    later = nodes[end + 1:]
    if any(source in in_first for node in later for source in node.all_input_nodes):
        return False  # something after the blocks reads block 0 (all hidden states): not a chain
    own = f"{name}.1."
    # block 1's parameters read before the block (as export places them): each block's in the same order after
    attributes = [n for n in nodes if n.op == "get_attr" and str(n.target).startswith(own) and n not in in_second]
    anchors = {_is_constant(n): n for n in attributes}  # the last of each kind: held tensors, lifted constants
    made = {node: node for node in second}  # block 1's node -> the same node of the latest block
    anchor = second[-1]
    for block in range(2, count):
        renamed = f"{name}.{block}."
        copies: dict = {}
        for source in attributes:
            with graph.inserting_after(anchors[_is_constant(source)]):
                copies[source] = anchors[_is_constant(source)] = _own_attribute(gm, model, source, own, renamed)

        def remap(source, copies=copies, made=made):
            if source in copies:
                return copies[source]
            if source in in_first:  # read from block 0: the same node of the block before
                return made[second[in_first[source]]]
            return source  # shared: rotary tables, masks

        for node in second:
            with graph.inserting_after(anchor):
                if node.op == "get_attr" and str(node.target).startswith(own):
                    copy = _own_attribute(gm, model, node, own, renamed)
                else:
                    copy = graph.node_copy(node, remap)
                    copy.meta = dict(node.meta)
            copy.meta["nn_module_stack"] = _renamed_stack(node.meta.get("nn_module_stack"), own, renamed)
            copies[node] = anchor = copy
        made = {node: copies[node] for node in second}
    for node in later:
        for source in list(node.all_input_nodes):
            if source in in_second:
                node.replace_input_with(source, made[source])
    graph.lint()
    gm.recompile()
    return True


def _own_attribute(gm, model, source: torch.fx.Node, own: str, renamed: str) -> torch.fx.Node:
    """A get_attr of block k's own parameter (at the insertion point), registered on ``gm`` under the
    model's name for it. A constant the export lifted out of block 1's forward (``lifted_tensor_2``),
    which the model does not hold, is copied: each block made its own."""
    target = renamed + str(source.target)[len(own):]
    tensor = _model_tensor(model, target)
    constant = tensor is None and "lifted_tensor" in str(source.target) and \
        _model_tensor(model, str(source.target)) is None
    if constant:
        tensor = _gm_tensor(gm, str(source.target))
        tensor = tensor.clone() if tensor is not None else None
    if tensor is None:
        raise _NotAlike(target)
    _assign(gm, target, tensor, constant)
    with warnings.catch_warnings():  # fx warns of a plain tensor attribute: the export holds its constants so
        warnings.simplefilter("ignore", UserWarning)
        node = gm.graph.get_attr(target)
    node.meta = dict(source.meta)
    return node


class _NotAlike(Exception):
    pass


def _model_tensor(model: torch.nn.Module, target: str):
    try:
        return model.get_parameter(target)
    except AttributeError:
        try:
            return model.get_buffer(target)
        except AttributeError:
            return None


def _is_constant(node: torch.fx.Node) -> bool:
    return "lifted_tensor" in str(node.target)


def _gm_tensor(gm: torch.nn.Module, target: str):
    try:
        found = operator.attrgetter(target)(gm)
    except AttributeError:
        return None
    return found if isinstance(found, torch.Tensor) else None


def _assign(gm: torch.nn.Module, target: str, tensor: torch.Tensor, constant: bool) -> None:
    """``tensor`` at ``target`` of ``gm``: a parameter, a buffer, or (``constant``) a plain attribute,
    as the export holds a lifted constant (not a buffer: the meter would take it for one)."""
    *path, leaf = target.split(".")
    owner = gm
    for part in path:
        if not hasattr(owner, part):
            owner.add_module(part, torch.nn.Module())
        owner = getattr(owner, part)
    if isinstance(tensor, torch.nn.Parameter):
        owner.register_parameter(leaf, tensor)
    elif constant:
        setattr(owner, leaf, tensor)
    else:
        owner.register_buffer(leaf, tensor)


def _renamed_stack(stack, own: str, new: str):
    if not stack:
        return stack
    old = own.rstrip(".")
    replacement = new.rstrip(".")
    renamed = {}
    for key, (path, kind) in stack.items():
        path = str(path)
        if path == old or path.startswith(own):
            path = replacement + path[len(old):]
        renamed[f"{key}@{replacement}" if path != str(stack[key][0]) else key] = (path, kind)
    return renamed
