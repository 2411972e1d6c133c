"""The shapes of call results, subscripts and sizes, from the values the walker computed.

Each function returns the result's shape (see ``facts.shapes``) or None. Sizes a tensor is built
with become symbols by what they are: a size value that names a dim (`x.size(0)`), a literal int,
or the code of the name (`n`, `args.batch_size`), so tensors built from the same size share it.
"""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from torchlint.static.facts import shapes
from torchlint.static.facts.values import NOTHING, Value
from torchlint.static.interpret import batches
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.frames import dotted_code
from torchlint.static.interpret.loaders import DATALOADERS

# methods and functions whose result has their operand's shape
SAME_SHAPE = frozenset({
    "float", "double", "half", "bfloat16", "long", "int", "to", "cpu", "cuda", "detach", "clone",
    "contiguous", "requires_grad_", "type_as", "type", "sigmoid", "exp", "log", "log2", "log10", "log1p", "expm1",
    "sqrt", "rsqrt", "abs", "relu", "tanh", "neg", "clamp", "clamp_min", "clip", "softmax", "log_softmax",
    "cumsum", "cumprod", "logcumsumexp", "flip", "roll", "argsort", "masked_fill", "sign", "round", "floor",
    "ceil", "trunc", "nan_to_num", "square", "pow", "normalize", "dropout", "gelu", "silu", "elu", "leaky_relu",
    "softplus", "erf", "sin", "cos", "reciprocal", "identity", "copy", "astype", "numpy", "zeros_like",
    "ones_like", "randn_like", "rand_like", "empty_like", "full_like", "randn", "rand",
})
REDUCTIONS = frozenset({"sum", "mean", "std", "var", "prod", "amax", "amin", "logsumexp", "any", "all",
                        "count_nonzero", "argmax", "argmin", "nansum", "nanmean", "norm"})
# factories whose positional arguments (or one tuple) are the sizes
SIZED_FACTORIES = frozenset({"torch.randn", "torch.rand", "torch.zeros", "torch.ones", "torch.empty",
                             "numpy.random.randn", "numpy.random.rand"})
SIZE_KEYWORD_FACTORIES = frozenset({"numpy.zeros", "numpy.ones", "numpy.empty", "numpy.random.random",
                                    "numpy.random.normal", "numpy.random.uniform", "numpy.random.randint"})
RNG_DRAWS = frozenset({"normal", "uniform", "integers", "random", "standard_normal", "exponential", "choice",
                       "randn", "rand", "randint", "binomial", "poisson"})
ARRAY_CONVERSIONS = frozenset({"torch.from_numpy", "torch.tensor", "torch.as_tensor", "numpy.array",
                               "numpy.asarray", "torch.Tensor", "torch.FloatTensor", "torch.LongTensor"})
# nn modules whose output has their input's shape
SHAPE_KEEPING_MODULES = frozenset({
    "torch.nn.ReLU", "torch.nn.GELU", "torch.nn.SiLU", "torch.nn.Tanh", "torch.nn.Sigmoid", "torch.nn.ELU",
    "torch.nn.SELU", "torch.nn.LeakyReLU", "torch.nn.Softplus", "torch.nn.Dropout", "torch.nn.AlphaDropout",
    "torch.nn.Identity", "torch.nn.LayerNorm", "torch.nn.BatchNorm1d", "torch.nn.Softmax", "torch.nn.LogSoftmax",
    "torch.nn.Mish", "torch.nn.PReLU", "torch.nn.Hardtanh", "torch.nn.ReLU6",
})


def size_dim(ctx: FileContext, node: cst.BaseExpression | None) -> shapes.Dim:
    """What a size argument stands for: a named dim, a literal, or the code of a name."""
    if node is None:
        return None
    value = ctx.value(node)
    if value.dim is not None:
        return value.dim
    if isinstance(node, cst.Integer):
        try:
            return int(node.value, 0)
        except ValueError:
            return None
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) and \
            isinstance(node.expression, cst.Integer) and node.expression.value == "1":
        return "-1"
    if isinstance(node, cst.Subscript) and isinstance(node.value, (cst.Name, cst.Attribute)) and \
            len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index) and \
            isinstance(node.slice[0].slice.value, cst.SimpleString):
        return ctx.code(node, 80)  # cfg["batch_size"]
    return dotted_code(node)


def _sizes(ctx: FileContext, args: list[cst.BaseExpression]) -> shapes.Shape | None:
    """`(n, 3)` / `n, 3` / `[n, 3]` as a shape."""
    if len(args) == 1 and isinstance(args[0], (cst.Tuple, cst.List)):
        args = [element.value for element in args[0].elements]
    elif len(args) == 1 and ctx.value(args[0]).kind == "list":
        return tuple(item.dim for item in ctx.value(args[0]).items) or None
    if any(isinstance(arg, cst.StarredElement) for arg in args):
        return None
    return tuple(size_dim(ctx, arg) for arg in args)


COUNTERS = "range counters"  # memo key: ids of the values a `for i in range(...)` binds (ints)
_SIZE_THIRD = frozenset({"normal", "uniform", "integers", "randint", "binomial"})
_NUMBER_CALLS = frozenset({"float", "int", "bool", "len"})


def _literal_shape(node) -> shapes.Shape | None:
    """The shape of a (nested) list literal of numbers: `[x, y]` is (2,), `[[a, b], [c, d]]` (2, 2)."""
    if not isinstance(node, (cst.List, cst.Tuple)) or not node.elements:
        return None
    inner = [element.value for element in node.elements]
    if any(isinstance(element, cst.StarredElement) for element in node.elements):
        return None
    if all(_number_like(item) for item in inner):
        return (len(inner),)
    rows = [_literal_shape(item) for item in inner]
    if rows[0] is not None and all(row == rows[0] for row in rows):
        return (len(inner), *rows[0])
    return None


def _number_like(node) -> bool:
    """A number literal, `float(...)`/`int(...)`/`len(...)`, or `t.item()`."""
    if isinstance(node, (cst.Integer, cst.Float)) or _int(node) is not None:
        return True
    if isinstance(node, cst.UnaryOperation) and isinstance(node.expression, (cst.Integer, cst.Float)):
        return True
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Name):
            return func.value in _NUMBER_CALLS
        return isinstance(func, cst.Attribute) and func.attr.value == "item" and not node.args
    return False


def _int(node) -> int | None:
    if isinstance(node, cst.Integer):
        return int(node.value, 0)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) and \
            isinstance(node.expression, cst.Integer):
        return -int(node.expression.value, 0)
    return None


def _dims(node) -> tuple[int, ...] | None:
    if isinstance(node, (cst.Tuple, cst.List)):
        found = tuple(_int(element.value) for element in node.elements)
        return None if None in found else found
    single = _int(node)
    return None if single is None else (single,)


def _keepdim(info: CallInfo, position: int) -> bool | None:
    node = info.param(position, "keepdim") or info.kwargs.get("keepdims")
    if node is None:
        return False
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value == "True"
    return None


def _batch_dim(node) -> shapes.Dim:
    """A DataLoader's batch dim: 1 by default or when given 1, none with `batch_size=None` (samples
    as they are), else the batch symbol."""
    if node is None or (isinstance(node, cst.Integer) and _int(node) == 1):
        return 1
    if isinstance(node, cst.Name) and node.value == "None":
        return shapes.UNBATCHED
    return shapes.BATCH


def _flattened(operand: shapes.Shape | None, start, info: CallInfo) -> shapes.Shape | None:
    """`x.flatten()` is one dim; `x.flatten(1)` keeps the first."""
    if info.param(2, "end_dim") is not None or operand is None:
        return None
    begin = 0 if start is None else _int(start)
    if begin is None or not 0 <= begin < max(len(operand), 1):
        return None
    return operand if len(operand) == 1 and begin == 0 else operand[:begin] + (None,)


def _reduced(info: CallInfo, operand: shapes.Shape | None, name: str) -> shapes.Shape | None:
    """sum/mean/...: over `dim` (kept as size 1 with keepdim=True) or over everything."""
    if name in ("max", "min"):
        return ()
    if set(info.kwargs) - {"dim", "axis", "keepdim", "keepdims", "dtype"}:
        return None
    dims = info.param(1, "dim") if name != "norm" else info.param(2, "dim")
    dims = dims if dims is not None else info.kwargs.get("axis")
    keep = _keepdim(info, 2 if name != "norm" else 3)
    if keep is None:
        return None
    if dims is None:
        return () if not keep else shapes.reduce(operand, None, True)
    return shapes.reduce(operand, _dims(dims), keep)


def call_shape(ctx: FileContext, info: CallInfo, receiver: Value, values: list[Value]) -> shapes.Shape | None:
    """The shape of a call's result; None when not modelled."""
    if any(arg.star for arg in info.node.args):
        return None  # `torch.randn(n, *rest)`: sizes not all known
    name = info.name
    if info.form == "method":
        operand = receiver.shape
        args = info.args
        if name in SAME_SHAPE and name not in ("randn", "rand"):
            if name in ("pow", "clamp", "masked_fill") and values and values[0].shape is not None:
                return shapes.broadcast(operand, values[0].shape)
            return operand
        if name in REDUCTIONS or (name in ("max", "min") and not args and not info.kwargs):
            return _reduced(info, operand, name)
        if name in ("view", "reshape"):
            if len(args) == 1 and ctx.value(args[0]).shape is not None and not isinstance(args[0], (cst.Tuple, cst.List)):
                return None  # x.view(torch.Size...) / x.view(dtype)
            sizes = _sizes(ctx, args)
            return None if sizes is None else shapes.reshape(operand, list(sizes))
        if name == "expand" and operand is not None:
            sizes = _sizes(ctx, args)
            if sizes is None or len(sizes) < len(operand):
                return None
            lead = len(sizes) - len(operand)
            return tuple(operand[index - lead] if size == "-1" and index >= lead else None if size == "-1" else size
                         for index, size in enumerate(sizes))
        if name in ("view_as", "reshape_as", "expand_as") and values:
            return values[0].shape
        if name == "flatten":
            return _flattened(operand, info.param(1, "start_dim"), info)
        if name == "squeeze":
            return shapes.squeeze(operand, _int(args[0]) if args else None) if len(args) <= 1 else None
        if name == "unsqueeze":
            return shapes.unsqueeze(operand, _int(args[0]) if args else None)
        if name == "transpose" and len(args) == 2:
            return shapes.transpose(operand, _int(args[0]), _int(args[1]))
        if name == "t":
            return operand[::-1] if operand is not None and len(operand) <= 2 else None
        if name == "permute":
            order = [element.value for element in args[0].elements] if len(args) == 1 and \
                isinstance(args[0], (cst.Tuple, cst.List)) else args
            return shapes.permute(operand, [_int(arg) for arg in order])
        if name in ("add", "sub", "mul", "div", "true_divide") and values:
            return shapes.broadcast(operand, values[0].shape)
        if name in ("matmul", "mm", "bmm") and values:
            return shapes.matmul(operand, values[0].shape)
        if receiver.kind == "rng" and name == "permutation" and len(args) == 1 and values[0].shape is None:
            return (size_dim(ctx, args[0]),)
        if receiver.kind == "rng" and name in ("randn", "rand", "standard_normal", "random_sample") and args \
                and "size" not in info.kwargs:
            return _sizes(ctx, list(args)) if name in ("randn", "rand") else _sizes(ctx, [args[0]])
        if receiver.kind == "rng" and name in RNG_DRAWS:
            size = info.kwargs.get("size")
            if size is None and name in _SIZE_THIRD and len(args) >= 3:
                size = args[2]  # normal(loc, scale, size), uniform(low, high, size), randint(low, high, size)
            if size is not None:
                return _sizes(ctx, [size])
            # `rng.exponential(scales)`: one draw per element of its array parameters
            arrays = [value.shape for value in values if value.shape]
            return arrays[0] if arrays and all(shape == arrays[0] for shape in arrays) and \
                len(info.args) <= 2 else None
        return None
    qual = info.qual or ""
    if info.form == "function":
        first = _operand_shape(values[0]) if values else None
        if qual in SIZED_FACTORIES or qual in ("torch.randint",):
            args = info.args
            if qual == "torch.randint":
                size = info.kwargs.get("size") or (args[-1] if len(args) >= 2 else None)
                return _sizes(ctx, [size]) if size is not None else None
            if "size" in info.kwargs:
                return _sizes(ctx, [info.kwargs["size"]])
            return _sizes(ctx, list(args)) if args else None
        if qual in SIZE_KEYWORD_FACTORIES:
            size = info.kwargs.get("size") or (info.args[0] if qual in ("numpy.zeros", "numpy.ones", "numpy.empty",
                                                                      "numpy.random.random") and info.args else None)
            if size is None and qual.rsplit(".", 1)[-1] in _SIZE_THIRD and len(info.args) >= 3:
                size = info.args[2]
            return _sizes(ctx, [size]) if size is not None else None
        if qual == "torch.full" and info.args:
            return _sizes(ctx, [info.args[0]])
        if qual in ("torch.arange", "numpy.arange", "torch.randperm", "numpy.random.permutation") and \
                len(info.args) == 1 and (qual != "numpy.random.permutation" or values[0].shape is None):
            return (size_dim(ctx, info.args[0]),)
        if qual in ("torch.linspace", "numpy.linspace") and len(info.args) >= 3:
            return (size_dim(ctx, info.args[2]),)
        if qual in ARRAY_CONVERSIONS:
            if values and values[0].kind == "list" and info.args and qual.startswith("torch."):
                return _literal_shape(info.args[0])  # `torch.tensor([float(same)])`: (1,)
            return first if values and values[0].kind is None else None
        if qual in ("torch.nn.functional.pairwise_distance", "torch.pairwise_distance") and len(values) >= 2:
            both = shapes.broadcast(values[0].shape, values[1].shape)
            keep = _keepdim(info, 4)
            return None if both is None or not both or keep is None else both if keep else both[:-1]
        if qual in ("torch.nn.functional.cosine_similarity", "torch.cosine_similarity") and len(values) >= 2:
            dim = info.param(2, "dim")
            return shapes.reduce(shapes.broadcast(values[0].shape, values[1].shape),
                                 (1,) if dim is None else _dims(dim), False)
        if qual.startswith(("torch.", "numpy.")):
            last = qual.rsplit(".", 1)[-1]
            if last in ("cat", "concat", "concatenate") and values and values[0].kind == "list":
                dim = info.param(1, "dim") or info.kwargs.get("axis")
                return shapes.concatenate([item.shape for item in values[0].items], 0 if dim is None else _int(dim))
            if last == "column_stack" and values and values[0].kind == "list" and values[0].items:
                rows = {item.shape[0] if item.shape else None for item in values[0].items}
                return (rows.pop(), None) if len(rows) == 1 and None not in rows else None
            if last == "stack" and values and values[0].kind == "list":
                dim = info.param(1, "dim") or info.kwargs.get("axis")
                return shapes.stack([item.shape for item in values[0].items], 0 if dim is None else _int(dim))
            if last in ("matmul", "mm", "bmm") and len(values) == 2:
                return shapes.matmul(values[0].shape, values[1].shape)
            if last == "where" and len(values) == 3:
                return shapes.broadcast(shapes.broadcast(values[0].shape, values[1].shape), values[2].shape)
            if last in ("maximum", "minimum", "add", "sub", "mul", "div") and len(values) == 2:
                return shapes.broadcast(values[0].shape, values[1].shape)
            if last in SAME_SHAPE and values and last not in ("randn", "rand"):
                return first
            if last == "flatten" and qual.startswith("torch.") and values:
                return _flattened(first, info.param(1, "start_dim"), info)
            if last in REDUCTIONS and qual.startswith("torch.") and values:
                return _reduced(info, first, last)
    return None


def module_shape(module: Value, argument: Value) -> shapes.Shape | None:
    """The shape a torch.nn layer returns for an input of known shape."""
    qual = module.qual or ""
    shape = argument.shape
    if shape is None:
        return None
    if qual in SHAPE_KEEPING_MODULES:
        return shape
    if qual == "torch.nn.Linear" and shape and len(module.items) >= 2:
        return shape[:-1] + (_size(module.items[1]),)
    if qual == "torch.nn.Embedding" and len(module.items) >= 2:
        return shape + (_size(module.items[1]),)
    spatial = _CONVOLUTIONS.get(qual)
    if spatial is not None and len(shape) == spatial + 2 and len(module.items) >= 2:
        return (shape[0], _size(module.items[1])) + (None,) * spatial
    spatial = _POOLS.get(qual)
    if spatial is not None and len(shape) == spatial + 2:
        return shape[:2] + (None,) * spatial
    if qual in _CHANNEL_NORMS and len(shape) >= 2:
        return shape
    if qual == "torch.nn.Flatten" and not module.items and len(shape) >= 2:
        return (shape[0], None)
    return None


_CONVOLUTIONS = {"torch.nn.Conv1d": 1, "torch.nn.Conv2d": 2, "torch.nn.Conv3d": 3, "torch.nn.ConvTranspose1d": 1,
                 "torch.nn.ConvTranspose2d": 2, "torch.nn.ConvTranspose3d": 3}
_POOLS = {"torch.nn.MaxPool1d": 1, "torch.nn.MaxPool2d": 2, "torch.nn.AvgPool1d": 1, "torch.nn.AvgPool2d": 2,
          "torch.nn.AdaptiveAvgPool1d": 1, "torch.nn.AdaptiveAvgPool2d": 2, "torch.nn.AdaptiveMaxPool2d": 2,
          "torch.nn.MaxPool3d": 3, "torch.nn.AvgPool3d": 3, "torch.nn.AdaptiveAvgPool3d": 3}
_CHANNEL_NORMS = frozenset({"torch.nn.BatchNorm2d", "torch.nn.BatchNorm3d", "torch.nn.InstanceNorm1d",
                            "torch.nn.InstanceNorm2d", "torch.nn.GroupNorm", "torch.nn.Dropout2d",
                            "torch.nn.Dropout1d", "torch.nn.Dropout3d"})


def _size(value: Value) -> shapes.Dim:
    """A layer's size argument as a dim: a literal int, or the size a value names."""
    if value.op == "const" and value.const is not None and float(value.const).is_integer():
        return int(value.const)
    return value.dim


def subscript_shape(ctx: FileContext, node: cst.Subscript, base: Value) -> shapes.Shape | None:
    """`x[i]`, `x[:, None]`, `x[idx]`, `x[a:b]`, `x[..., 0]`."""
    if base.shape is None:
        return None
    elements: list[tuple[str, shapes.Shape | None]] = []
    for element in node.slice:
        part = element.slice
        if isinstance(part, cst.Slice):
            whole = part.lower is None and part.upper is None and part.step is None
            elements.append(("slice", None) if whole else ("part", _bounds(ctx, part)))
            continue
        value = part.value
        if isinstance(value, cst.Name) and value.value == "None":
            elements.append(("none", None))
        elif isinstance(value, cst.Ellipsis):
            elements.append(("ellipsis", None))
        elif isinstance(value, cst.Integer) or _int(value) is not None:
            elements.append(("int", None))
        else:
            picked = ctx.value(value)
            if picked.op == "mask" and len(node.slice) == 1 and picked.shape is not None and \
                    base.shape[:len(picked.shape)] == picked.shape:
                return (None, *base.shape[len(picked.shape):])  # `x[mask]`: the selected rows, how many unknown
            if picked.shape is not None and picked.op not in ("mask", "zeros", "ones", "full"):  # maybe boolean
                elements.append(("int", None) if picked.shape == () else ("tensor", picked.shape))
            elif picked.op == "const" or picked.dim is not None or _item_index(ctx, value) or \
                    id(picked) in ctx.memo.get(COUNTERS, ()):
                elements.append(("int", None))
            else:
                return None
    return shapes.index(base.shape, elements)


def _bounds(ctx: FileContext, part: cst.Slice):
    """How a slice's size is named: ("size", k) for `[:k]`, ("text", "[a:b]") for another one."""
    if part.step is not None:
        return None
    upper = part.upper
    if part.lower is None and upper is not None and (_int(upper) is None or _int(upper) >= 0):
        size = size_dim(ctx, upper)
        if size is not None:
            return ("size", size)
    lower = "" if part.lower is None else ctx.code(part.lower, 40)
    return ("text", f"[{lower}:{'' if upper is None else ctx.code(upper, 40)}]")


def size_of(ctx: FileContext, info: CallInfo, receiver: Value) -> Value | None:
    """`x.size(0)` / `x.size()`: a size that names a dim, or the list of them."""
    if info.form != "method" or info.name != "size" or receiver.shape is None or receiver.kind:
        return None
    if not info.args:
        return dims_list(receiver.shape, info.node)
    axis = _int(info.args[0])
    if axis is None or not -len(receiver.shape) <= axis < len(receiver.shape):
        return None
    return Value(tracked=False, dim=receiver.shape[axis], node=info.node)


def dims_list(shape: shapes.Shape, node) -> Value:
    """`x.shape`: a tuple of sizes, each naming its dim."""
    return Value(kind="list", qual="shape", node=node, items=tuple(
        Value(tracked=False, dim=dim if dim != shapes.NEW else 1, node=node) for dim in shape))


def list_item(node: cst.Subscript, base: Value) -> Value:
    """An item of a tuple by a literal index: a size of `x.shape` (or a slice of them), or, of
    another tuple (a batch), the item's shape alone."""
    if len(node.slice) != 1:
        return NOTHING
    part = node.slice[0].slice
    if isinstance(part, cst.Slice) and base.qual == "shape" and part.step is None:
        low = 0 if part.lower is None else _int(part.lower)
        high = len(base.items) if part.upper is None else _int(part.upper)
        if low is None or high is None:
            return NOTHING
        return base.but(items=base.items[low:high], node=node)
    position = _int(part.value) if isinstance(part, cst.Index) else None
    if position is None or not -len(base.items) <= position < len(base.items):
        return NOTHING
    item = base.items[position]
    if base.qual == "shape":
        return item
    return Value(shape=item.shape, node=node) if item.shape is not None and not item.kind else NOTHING


def _operand_shape(value: Value) -> shapes.Shape | None:
    """A tensor's shape; () for a number (a literal, a size, a Python float)."""
    if value.shape is not None:
        return value.shape
    if value.op == "const" or value.dim is not None:
        return ()
    return None


def binop_shape(ctx: FileContext, node: cst.BinaryOperation, left: Value, right: Value) -> shapes.Shape | None:
    if isinstance(node.operator, cst.MatrixMultiply):
        return shapes.matmul(left.shape, right.shape)
    if isinstance(node.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.Power, cst.FloorDivide,
                                  cst.Modulo)):
        return elementwise(ctx, node, left, right)
    return None


def elementwise(ctx: FileContext, node, left: Value, right: Value) -> shapes.Shape | None:
    """The broadcast shape of an elementwise op; an op that pairs a shared dim with another one is
    recorded in ``ctx.misaligned``."""
    if left.kind or right.kind:
        return None
    a, b = _operand_shape(left), _operand_shape(right)
    symbol = shapes.misaligned(a, b)
    if symbol is not None:
        ctx.misaligned.append((node, a, b, symbol))
    return shapes.broadcast(a, b)


# losses that compare input and target element by element, broadcasting them (with a warning)
ELEMENTWISE_LOSSES = frozenset({"mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"})
ELEMENTWISE_LOSS_MODULES = frozenset({"torch.nn.MSELoss", "torch.nn.L1Loss", "torch.nn.SmoothL1Loss",
                                      "torch.nn.HuberLoss"})


def is_elementwise_loss(info: CallInfo) -> bool:
    """`F.mse_loss(pred, y)`, `nn.MSELoss()(pred, y)`, `torch.eq(a, b)`."""
    if info.form == "function":
        qual = info.qual or ""
        return (qual.startswith("torch.nn.functional.") and info.name in ELEMENTWISE_LOSSES) or \
            qual in ("torch.eq", "torch.ne")
    return info.form == "local" and info.callee.kind == "module" and info.callee.qual in ELEMENTWISE_LOSS_MODULES


def _item_index(ctx: FileContext, node) -> bool:
    """In the `__getitem__` being walked, its index parameter, or a name of unknown value (`i, j, y =
    self.pairs[k]`): one sample's index."""
    if not isinstance(node, cst.Name) or not ctx.enclosing:
        return False
    function = ctx.enclosing[-1]
    params = function.params.params
    if function.name.value != "__getitem__" or len(params) != 2:
        return False
    value = ctx.value(node)
    return params[1].name.value == node.value or (not value.kind and value.shape is None and value.op is None)


# methods whose result's shape can be known without their receiver's: sizes given literally
_SHAPE_MAKING_METHODS = frozenset({"view", "reshape", "expand"})


def shaped(ctx: FileContext, info: CallInfo, receiver: Value, values: list[Value], result: Value) -> Value:
    """The result with its shape (or a size with the dim it names); a shape carried over from an
    operand returned as it is (`x.view(...)` gives `x`'s value) is replaced."""
    if info.form == "method" and receiver.shape is None and receiver.kind != "rng" and \
            info.name not in _SHAPE_MAKING_METHODS and result.shape is None:
        return result  # nothing known of the tensor: nothing to derive (most method calls)
    if info.form == "function" and not (info.qual or "").startswith(("torch.", "numpy.")) and result.shape is None:
        return result  # not a tensor function: a plain helper, a logger
    size = size_of(ctx, info, receiver)
    if size is not None:
        return size
    if info.form == "function" and info.qual == "torch.utils.data.TensorDataset":
        return Value(kind="dataset", items=tuple(values), node=info.node)
    if result.kind and not (info.qual in DATALOADERS and values):
        return result
    if info.qual in DATALOADERS:  # what its batches are made of, and their batch dim
        if "batch_sampler" in info.kwargs:
            return result  # batches of the program's own sizes
        dim = Value(dim=_batch_dim(info.param(1, "batch_size")))
        if "collate_fn" in info.kwargs:  # batches made by the program's own code: what it returns
            collate = ctx.value(info.kwargs["collate_fn"])
            return result if batches.collated(collate) is NOTHING else result.but(items=(values[0], dim, collate))
        return result.but(items=(values[0], dim))
    shape = call_shape(ctx, info, receiver, values)
    if shape == result.shape:
        return result
    if result is NOTHING:
        return result if shape is None else Value(shape=shape, node=info.node)
    return replace(result, shape=shape)
