"""Static tensor shapes: what the checker knows about an expression's dims.

A shape is a tuple of dims, outermost first, or None when not even the rank is known. A dim is an
int (a literal size), a str (a symbol: the size a name stands for, `"n"` for `torch.randn(n, 3)`,
`"B"` for the batch dim of a DataLoader's batches), ``NEW`` (a size-1 dim the code inserted on
purpose with `unsqueeze`, `[:, None]` or a literal 1 in `view`: broadcasting over it is meant) or
None (a size not known). Only what is certain is kept: every op not modelled here gives None.
"""

from __future__ import annotations

from typing import Any

Dim = Any  # int | str | None
Shape = tuple
NEW = "+1"  # a size-1 dim made for broadcasting
BATCH = "B"  # the batch dim of a DataLoader's batches
UNBATCHED = "-"  # a DataLoader with batch_size=None: its items are the samples


def is_symbol(dim: Dim) -> bool:
    return isinstance(dim, str) and dim != NEW


def is_one(dim: Dim) -> bool:
    return dim == 1 or dim == NEW


def broadcast(a: Shape | None, b: Shape | None) -> Shape | None:
    """The shape of an elementwise op's result, or None when either rank is unknown."""
    if a is None or b is None:
        return None
    rank = max(len(a), len(b))
    a = (1,) * (rank - len(a)) + tuple(a)
    b = (1,) * (rank - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b, strict=True):
        if is_one(x):
            out.append(1 if is_one(y) else y)
        elif is_one(y) or x == y:
            out.append(x)
        else:
            out.append(x if y is None else y if x is None else None)
    return tuple(out)


def misaligned(a: Shape | None, b: Shape | None) -> str | None:
    """A symbol both operands carry, at different positions counted from the right: broadcasting
    pairs it with another dim (`(B, 1) - (B,)` gives `(B, B)`). None when the shapes line up, when
    either is unknown, or when either has a dim inserted for broadcasting on purpose."""
    if a is None or b is None or NEW in a or NEW in b:
        return None
    right_a = {dim: len(a) - index for index, dim in enumerate(a) if is_symbol(dim)}
    right_b = {dim: len(b) - index for index, dim in enumerate(b) if is_symbol(dim)}
    for dim, position in right_a.items():
        if dim in right_b and right_b[dim] != position and a.count(dim) == 1 and b.count(dim) == 1:
            return dim
    return None


def text(shape: Shape | None) -> str:
    """`(B, 1)` for messages."""
    if shape is None:
        return "(?)"
    dims = ["1" if dim == NEW else "?" if dim is None else str(dim) for dim in shape]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


def _axis(dim: int | None, rank: int) -> int | None:
    if dim is None or rank == 0:
        return None
    dim = dim + rank if dim < 0 else dim
    return dim if 0 <= dim < rank else None


def reduce(shape: Shape | None, dims: tuple[int, ...] | None, keepdim: bool) -> Shape | None:
    """sum/mean/max...: over all dims (dims None) or over the listed ones."""
    if dims is None:
        return () if not keepdim or shape is None else (1,) * len(shape)
    if shape is None:
        return None
    axes = {_axis(dim, len(shape)) for dim in dims}
    if None in axes:
        return None
    return tuple(1 if index in axes else dim for index, dim in enumerate(shape) if keepdim or index not in axes)


def squeeze(shape: Shape | None, dim: int | None) -> Shape | None:
    if shape is None:
        return None
    if dim is None:  # every size-1 dim: which ones are 1 at run time is not known for unknown sizes
        return tuple(d for d in shape if not is_one(d)) if None not in shape else None
    axis = _axis(dim, len(shape))
    if axis is None:
        return None
    if is_one(shape[axis]):
        return shape[:axis] + shape[axis + 1:]
    return shape if isinstance(shape[axis], int) else None  # a symbol or unknown size may be 1


def unsqueeze(shape: Shape | None, dim: int | None) -> Shape | None:
    if shape is None or dim is None:
        return None
    axis = _axis(dim, len(shape) + 1)
    return None if axis is None else shape[:axis] + (NEW,) + shape[axis:]


def transpose(shape: Shape | None, first: int | None, second: int | None) -> Shape | None:
    if shape is None:
        return None
    a, b = _axis(first, len(shape)), _axis(second, len(shape))
    if a is None or b is None:
        return None
    dims = list(shape)
    dims[a], dims[b] = dims[b], dims[a]
    return tuple(dims)


def permute(shape: Shape | None, order: list[int | None]) -> Shape | None:
    if shape is None or len(order) != len(shape):
        return None
    axes = [_axis(dim, len(shape)) for dim in order]
    if None in axes or len(set(axes)) != len(axes):
        return None
    return tuple(shape[axis] for axis in axes)


def reshape(shape: Shape | None, sizes: list[Dim | str]) -> Shape | None:
    """view/reshape to `sizes` (a `-1` is "-1"): a literal 1 is a dim made on purpose; a -1 is
    known only when every other size equals a dim of the input and the rest is one dim."""
    out: list[Dim] = []
    infer = None
    for index, size in enumerate(sizes):
        if size == "-1":
            if infer is not None:
                return None
            infer = index
            out.append(None)
        else:
            out.append(NEW if size == 1 else size)
    if infer is not None and shape is not None and None not in shape:
        rest = [d for d in shape if not is_one(d)]
        for position, size in enumerate(out):
            if position == infer:
                continue
            if size in rest:
                rest.remove(size)
            elif not is_one(size):
                return tuple(out)
        if len(rest) == 1:
            out[infer] = rest[0]
    return tuple(out)


def index(shape: Shape | None, elements: list[tuple[str, Shape | None]]) -> Shape | None:
    """`x[...]`: elements are ("int", None) for a number, ("slice", None) for `:`, ("part", bounds) for
    `a:b` (see `_part`), ("none", None) for None, ("tensor", shape) for an index tensor, ("ellipsis", None)."""
    if shape is None:
        return None
    kinds = [kind for kind, _ in elements]
    if kinds.count("ellipsis") > 1 or kinds.count("tensor") > 1:
        return None
    used = sum(kind in ("int", "slice", "part", "tensor") for kind in kinds)
    if used > len(shape):
        return None
    out: list[Dim] = []
    position = 0
    for kind, picked in elements:
        if kind == "none":
            out.append(NEW)
        elif kind == "int":
            position += 1
        elif kind == "slice":
            out.append(shape[position])
            position += 1
        elif kind == "part":
            out.append(_part(shape[position], picked))
            position += 1
        elif kind == "tensor":
            if picked is None:
                return None
            out.extend(picked)
            position += 1
        elif kind == "ellipsis":
            skip = len(shape) - used
            out.extend(shape[position:position + skip])
            position += skip
        else:
            return None
    return tuple(out) + tuple(shape[position:])


def _part(dim: Dim, bounds) -> Dim:
    """The size of a slice of a dim: `[:k]` is `k`; another slice is named by the dim and its bounds
    (`n[k:]`), so tensors sliced alike share it; None when not known."""
    if bounds is None:
        return None
    kind, what = bounds
    if kind == "size":
        return what
    return f"{dim}{what}" if dim is not None and dim != NEW else None


def concatenate(shapes: list[Shape | None], dim: int | None) -> Shape | None:
    """torch.cat: the same rank, the joined dim's size not known."""
    if not shapes or any(shape is None for shape in shapes) or dim is None:
        return None
    rank = len(shapes[0])
    axis = _axis(dim, rank)
    if axis is None or any(len(shape) != rank for shape in shapes):
        return None
    out = []
    for index in range(rank):
        sizes = {shape[index] for shape in shapes}
        out.append(None if index == axis or len(sizes) != 1 else shapes[0][index])
    return tuple(out)


def stack(shapes: list[Shape | None], dim: int | None) -> Shape | None:
    if not shapes or any(shape is None for shape in shapes) or dim is None or len(set(shapes)) != 1:
        return None
    axis = _axis(dim, len(shapes[0]) + 1)
    return None if axis is None else shapes[0][:axis] + (len(shapes),) + shapes[0][axis:]


def matmul(a: Shape | None, b: Shape | None) -> Shape | None:
    if a is None or b is None or not a or not b:
        return None
    if len(a) == 1 and len(b) == 1:
        return ()
    if len(b) == 1:
        return a[:-1]
    if len(a) == 1:
        return b[:-2] + b[-1:]
    batch = broadcast(a[:-2], b[:-2])
    return None if batch is None else batch + (a[-2], b[-1])
