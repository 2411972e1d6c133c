"""TL203 inplace-on-saved-tensor: in-place op on a tensor autograd saved for backward."""

from __future__ import annotations

from pathlib import Path

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.facts.ops import MODULE_OPS
from torchlint.static.interpret.later_backward import later_backward_reaches
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.grad_mode import eval_branch
from torchlint.static.interpret.input_writes import WRITING_OPERATORS, bound_names, input_writes
from torchlint.static.rules.base import Rule
from torchlint.static.traverse import nodes_of, simple_statements
from torchlint.static.rules.tl202_inplace_on_leaf import is_inplace_method

# Ops whose backward reads their own output.
SAVES_OUTPUT = frozenset({"sigmoid", "tanh", "exp", "softmax", "log_softmax", "relu", "sqrt", "rsqrt", "prod",
                          "cumprod"})


def _recorded(ctx: FileContext, node, value) -> bool:
    """Evidence that autograd records the op: a forward method, a function that runs backward, or an
    input that is an activation (a linear/matmul output or a parameter). Optimizer-state math is not."""
    if value.of is not None and (value.of.unbounded or value.of.kind == "param"):
        return True
    if value.tracked is True:
        return True
    call = ctx.call(node)
    scope = call.scope if call is not None else ctx.scope_of(node)
    if scope.function is None or scope.function == "forward":
        return True
    return any(body.scope.function == scope.function and
               any(getattr(e, "name", "") == "backward" for e in body.walk()) for body in ctx.functions)


# nn layers that can overwrite their input: the position of `inplace` in their constructor
INPLACE_LAYERS = {"ReLU": 0, "ReLU6": 0, "SELU": 0, "SiLU": 0, "Mish": 0, "Hardswish": 0, "Hardsigmoid": 0,
                  "LeakyReLU": 1, "ELU": 1, "CELU": 1, "Dropout": 1, "Dropout1d": 1, "Dropout2d": 1,
                  "Dropout3d": 1, "AlphaDropout": 1, "Hardtanh": 2, "Threshold": 2}
INPLACE_FUNCTIONS = frozenset({"relu", "relu6", "leaky_relu", "elu", "selu", "celu", "silu", "mish", "hardtanh",
                               "hardswish", "hardsigmoid", "dropout", "dropout1d", "dropout2d", "dropout3d",
                               "alpha_dropout", "threshold"})


def _true(node) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


def _inplace_layer(ctx: FileContext, call: CallInfo) -> bool:
    """`nn.ReLU(inplace=True)(x)`, `self.drop(x)` with `self.drop = nn.Dropout(p, True)`, `F.relu(x, inplace=True)`."""
    if call.form == "function":
        module, _, name = (call.qual or "").rpartition(".")
        return module == "torch.nn.functional" and name in INPLACE_FUNCTIONS and _true(call.kwargs.get("inplace"))
    return _inplace_module(call.callee)


def _inplace_module(callee) -> bool:
    """A layer value built with `inplace=True` (by keyword or position)."""
    if callee is None or callee.kind != "module" or not isinstance(callee.node, cst.Call):
        return False
    layer = (callee.qual or "").rsplit(".", 1)[-1]
    position = INPLACE_LAYERS.get(layer)
    if position is None:
        return False
    built = callee.node
    for index, arg in enumerate(built.args):
        if (arg.keyword is not None and arg.keyword.value == "inplace") or (arg.keyword is None and index == position):
            return _true(arg.value)
    return False


class InplaceOnSavedTensor(Rule):
    info = RuleInfo(
        "TL203", "inplace-on-saved-tensor", "error",
        "In-place op on a tensor that autograd saved for backward: 'modified by an inplace operation'.",
        tags=("autograd",),
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        if call.scope.no_grad or eval_branch(call.scope):
            return
        if call.form == "function" and (call.qual or "").startswith("torch.nn.") and call.name == "Sequential":
            self._sequential(ctx, call)
        elif is_inplace_method(call):
            self._check(ctx, call.node, call.receiver, f"`.{call.name}()`")
        elif call.args and _inplace_layer(ctx, call):
            self._check(ctx, call.node, call.args[0], f"`{ctx.code(call.node.func, 30)}` (in place)")

    def on_end(self, ctx: FileContext) -> None:
        """Layers switched to in-place after construction (`m.inplace = True`): known once every loop is;
        modules whose forward writes into the tensor a caller already gave a layer."""
        if "forward" in ctx.source:
            _caller_tensors_written(self.info, ctx)
            _layer_inputs_written(self.info, ctx)
        written: set[int] = set()
        for target, scope in ctx.item_writes:  # `att = self.relu(att); att[:, 0] = 0`: the first write to each
            value = ctx.value(target.value)
            if id(value) not in written and (value.tracked is True or scope.function == "forward") and \
                    not eval_branch(scope):
                written.add(id(value))
                self._check(ctx, target, target.value, "the item assignment",
                            f"Write into a copy (`{ctx.code(target.value, 20)}.clone()`) or build it out of place")
        flipped = _flipped(ctx)
        if not flipped:
            return
        for call in list(ctx.calls.values()):
            callee = call.callee
            if call.args and not call.scope.no_grad and not eval_branch(call.scope) and \
                    callee is not None and callee.kind == "module" and \
                    (callee.qual or "").rsplit(".", 1)[-1] in flipped and not _inplace_layer(ctx, call):
                self._check(ctx, call.node, call.args[0], f"`{ctx.code(call.node.func, 30)}` (in place)")

    def _sequential(self, ctx: FileContext, call: CallInfo) -> None:
        """`nn.Sequential(..., nn.ReLU(), nn.Dropout(p, inplace=True), ...)`: the in-place layer gets
        the previous layer's output, which that layer's backward reads."""
        layers = [(arg, ctx.value(arg)) for arg in call.args]
        for (_, before), (node, layer) in zip(layers, layers[1:]):
            op = MODULE_OPS.get(before.qual or "") if before.kind == "module" else None
            if op in SAVES_OUTPUT and _inplace_module(layer) and not ctx.is_claimed(node):
                name = (layer.qual or "").rsplit(".", 1)[-1]
                ctx.report(
                    self.info, node,
                    f"`{ctx.code(node, 40)}` overwrites its input in place, and in this Sequential its input is "
                    f"the output of `{ctx.code(before.node, 30)}`, which {op}'s backward reads: the first "
                    f"backward in training fails with \"modified by an inplace operation\". Build the {name} "
                    "without inplace=True",
                )

    def on_augassign(self, ctx: FileContext, node: cst.AugAssign) -> None:
        scope = ctx.scope_of(node)
        if not scope.no_grad and not eval_branch(scope):
            self._check(ctx, node, node.target, f"`{ctx.code(node.operator).strip()}`")

    def _check(self, ctx: FileContext, node, target, op: str, advice: str = "Use the out-of-place form") -> None:
        value = ctx.value(target)
        producer = ctx.call(value.node)
        # an nn.Sequential's output is its last layer's (`Sequential(conv, ReLU(inplace=True))`)
        last_layer = producer is not None and producer.op == "sequential" and value.op in SAVES_OUTPUT
        if producer is None or (producer.op not in SAVES_OUTPUT and not last_layer) or value.kind is not None or \
                ctx.is_claimed(node):
            return  # only the op's own output (or a view of it), not a copy such as gather()
        if not _recorded(ctx, node, value) or not later_backward_reaches(ctx, node, target):
            return
        ctx.report(
            self.info, node,
            f"`{ctx.code(node)}`: {op} overwrites `{ctx.code(target, 30)}`, the output of {value.op}, which "
            f"{value.op}'s backward reads: backward fails with \"modified by an inplace operation\". {advice}",
        )


def _flipped(ctx: FileContext) -> frozenset[str]:
    """Layer types the file switches to in-place after construction: `m.inplace = True` for the `m` of
    a loop over `.modules()` (all such layers, or those its `isinstance` tests name)."""
    found = ctx.memo.get("tl203.flipped")
    if found is None:
        names: set[str] = set()
        for loop in _module_loops(ctx):
            target = loop.target.value
            if any(_sets_inplace(node, target) for node in _walk(loop.body)):
                tested = {n for node in _walk(loop.body) for n in _isinstance_names(node, target)}
                names |= (tested & INPLACE_LAYERS.keys()) or set(INPLACE_LAYERS)
        found = ctx.memo["tl203.flipped"] = frozenset(names)
    return found


def _walk(node):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.children)


def _module_loops(ctx: FileContext):
    """The file's `for m in <x>.modules():` loops (from the walker's loop log: no tree walk)."""
    if "inplace" not in ctx.source:
        return
    for loop in ctx.loops:
        node = loop.node
        if isinstance(node, cst.For) and isinstance(node.target, cst.Name) and isinstance(node.iter, cst.Call) \
                and isinstance(node.iter.func, cst.Attribute) and node.iter.func.attr.value == "modules":
            yield node


def _sets_inplace(node, target: str) -> bool:
    return isinstance(node, cst.Assign) and _true(node.value) and any(
        isinstance(t.target, cst.Attribute) and t.target.attr.value == "inplace" and
        isinstance(t.target.value, cst.Name) and t.target.value.value == target for t in node.targets)


def _isinstance_names(node, target: str) -> list[str]:
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "isinstance"
            and len(node.args) == 2 and isinstance(node.args[0].value, cst.Name) and
            node.args[0].value.value == target):
        return []
    kinds = node.args[1].value
    elements = [e.value for e in kinds.elements] if isinstance(kinds, cst.Tuple) else [kinds]
    return [e.attr.value if isinstance(e, cst.Attribute) else getattr(e, "value", "") for e in elements]


def _caller_tensors_written(info: RuleInfo, ctx: FileContext) -> None:
    """`down = self.dense(x); top = self.shuffle(x)` where `Shuffle.forward` does `out = x;
    out[:, :h] = ...`: the layer that took `x` first saved it for backward, and the second module
    overwrites it. Read in statement order: a name bound again holds another tensor from then on
    (`quant = self.post_quant(quant)`, then two decoders that each add to `quant` in place). Reported
    at the writes (or at the call, when the module is in another file)."""
    done: set[int] = ctx.memo.setdefault("tl203.caller_writes", set())
    writers = {id(call) for call in ctx.calls.values() if call.callee.kind == "instance" and
               next(_writing_forwards(ctx, call), None) is not None}
    if not writers:
        return  # no call of a module that writes into its input: most files
    for body in ctx.functions:
        if not any(id(entry) in writers for entry in body.walk(expand=False)):
            continue
        node = body.node
        if not isinstance(node, cst.FunctionDef) or body.scope.no_grad or not isinstance(node.body, cst.IndentedBlock):
            continue
        used: dict[str, CallInfo] = {}  # name -> the first layer call that took the tensor it holds
        for small in simple_statements(list(node.body.body)):
            for call in nodes_of(small, (cst.Call,)):
                entry = ctx.call(call)
                if entry is None or entry.scope.no_grad:
                    continue
                for index, writes, origin, owner in _writing_forwards(ctx, entry):
                    argument = entry.args[index] if index < len(entry.args) else None
                    name = argument.value if isinstance(argument, cst.Name) else None
                    if name in used and used[name] is not entry:
                        _report_write(info, ctx, entry, used[name], name, writes, origin, owner, done)
                if _keeps_input(entry):
                    for argument in entry.args:
                        if isinstance(argument, cst.Name):
                            used.setdefault(argument.value, entry)
            for name in bound_names(small):
                used.pop(name, None)


def _layer_inputs_written(info: RuleInfo, ctx: FileContext) -> None:
    """`c = self.pos_conv(x.transpose(1, 2)); x += c` in a `forward`: the layer saved `x` (or a view of
    it) for its weight's gradient, and the write bumps its version, so the backward fails. Read in
    statement order; a name bound again holds another tensor from then on."""
    done: set[int] = ctx.memo.setdefault("tl203.caller_writes", set())
    for body in ctx.functions:
        node = body.node
        if not isinstance(node, cst.FunctionDef) or node.name.value != "forward" or body.scope.no_grad or \
                not isinstance(node.body, cst.IndentedBlock):
            continue
        used: dict[str, CallInfo] = {}  # name -> the first layer call that took (a view of) its tensor
        for small in simple_statements(list(node.body.body)):
            written = None
            if isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name) and \
                    isinstance(small.operator, WRITING_OPERATORS):
                written = small.target
            for call in nodes_of(small, (cst.Call,)):
                entry = ctx.call(call)
                if entry is None or entry.scope.no_grad:
                    continue
                if written is None and is_inplace_method(entry) and isinstance(entry.receiver, cst.Name):
                    written = entry.receiver
                if entry.callee.kind == "module" and _keeps_input(entry):  # a torch.nn layer (a project
                    for argument in entry.args:                            # module may never save it)
                        name = _viewed_name(argument)
                        if name is not None:
                            used.setdefault(name, entry)
            if written is not None and written.value in used and id(small) not in done and \
                    not ctx.is_claimed(small) and not eval_branch(used[written.value].scope):
                done.add(id(small))
                first = used[written.value]
                ctx.report(
                    info, small,
                    f"`{ctx.code(small, 50)}` writes into `{written.value}` in place after "
                    f"`{ctx.code(first.node, 40)}` took it: the layer saved its input for the weight's "
                    "gradient, so backward fails with \"modified by an inplace operation\". Use the "
                    f"out-of-place form (`{written.value} = {written.value} + ...`)",
                    related=((first.node, f"`{written.value}` is saved here"),),
                )
            for name in bound_names(small):
                used.pop(name, None)


_VIEWS = frozenset({"transpose", "permute", "view", "view_as", "unsqueeze", "squeeze", "t", "expand", "narrow",
                    "unflatten"})


def _viewed_name(node) -> str | None:
    """`x`, or the name a chain of view ops or slices starts from (`x.transpose(1, 2)`, `x[:, 1:]`)."""
    while True:
        if isinstance(node, cst.Name):
            return node.value
        if isinstance(node, cst.Subscript):
            node = node.value
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _VIEWS:
            node = node.func.value
        else:
            return None


def _keeps_input(call: CallInfo) -> bool:
    """A layer that may save its input for backward: a project module, or an nn layer other than an
    activation (whose backward reads its output), dropout or identity."""
    callee = call.callee
    if callee.kind == "instance":
        return True
    if callee.kind != "module":
        return False
    layer = (callee.qual or "").rsplit(".", 1)[-1]
    return MODULE_OPS.get(callee.qual or "") not in SAVES_OUTPUT and layer not in INPLACE_LAYERS and \
        layer not in ("Identity", "Flatten", "Unflatten")


def _writing_forwards(ctx: FileContext, call: CallInfo):
    """(argument index, write statements, file, class name) for a call of a module whose forward
    writes into a tensor it was given."""
    callee = call.callee
    if callee.kind != "instance" or callee.cls is None or any(a.star for a in call.node.args):
        return
    method = callee.cls.find("methods", "forward")
    body = getattr(method, "body", None)
    if body is None or not isinstance(body.node, cst.FunctionDef):
        return
    cache = ctx.memo.setdefault("tl203.input_writes", {})
    writes = cache.get(id(body.node))
    if writes is None:
        writes = cache[id(body.node)] = input_writes(body.node)
    for index, statements in writes.items():
        yield index, statements, body.origin or ctx.path, callee.cls.name


def _report_write(info: RuleInfo, ctx: FileContext, call: CallInfo, first: CallInfo, name: str, writes,
                  origin: str, owner: str, done: set[int]) -> None:
    here = origin == ctx.path
    target = writes[0] if here else call.node
    if id(target) in done or ctx.is_claimed(target):
        return
    done.add(id(target))
    first_code, call_code = ctx.code(first.node, 40), ctx.code(call.node, 40)
    more = f" (and {len(writes) - 1} more writes after it)" if here and len(writes) > 1 else ""
    what = f"`{ctx.code(target, 50)}`{more} writes into" if here else \
        f"`{owner}.forward` ({Path(origin).name}) writes into"
    ctx.report(
        info, target,
        f"{what} the tensor its caller passes as `{name}` (`{call_code}`), which `{first_code}` took "
        "first: a layer saves its input for backward, so backward fails with \"modified by an inplace "
        f"operation\" (and the caller's `{name}` changes under it). Write into a copy ({name}.clone()) "
        "or build the result out of place",
        related=((call.node, f"the caller passes `{name}` here"), (first.node, f"`{name}` was used here first")),
    )
