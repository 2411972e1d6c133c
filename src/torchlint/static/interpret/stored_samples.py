"""Which names in a dataset's ``__getitem__`` share memory with the data the dataset stores, and
where they are modified in place.

``self.images[idx]`` of an array or tensor is a view of it (basic indexing); so is an element of a
stored list of arrays, ``torch.from_numpy`` / ``torch.as_tensor`` / ``np.asarray`` of a view, and
``.view()`` / ``.reshape()`` / ``.permute()`` / ``.numpy()`` of one. An in-place write through such
a name (``x.sub_(mean)``, ``x /= 255``, ``x[mask] = 0``) changes the stored sample itself: the next
epoch reads the modified one. A copy (``.clone()``, ``.copy()``, ``.astype()``, ``torch.tensor()``,
arithmetic) ends the sharing; an index by a list, array or mask copies too.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from torchlint.static.traverse import inner_statements, nodes_of, statements_of

# methods that return a view of (or share memory with) their receiver
VIEW_METHODS = frozenset({"view", "view_as", "reshape", "permute", "transpose", "squeeze", "unsqueeze", "numpy",
                          "swapaxes", "expand", "narrow", "select", "unflatten", "movedim", "ravel"})
SHARING_CALLS = frozenset({"torch.from_numpy", "torch.as_tensor", "numpy.asarray", "numpy.asanyarray"})
# tensor methods that write into their receiver's storage (`t_`/`squeeze_`/... change only the view)
WRITING_METHODS = frozenset({
    "add_", "sub_", "mul_", "div_", "clamp_", "clip_", "fill_", "zero_", "copy_", "normal_", "uniform_",
    "masked_fill_", "index_fill_", "index_add_", "index_copy_", "scatter_", "scatter_add_", "pow_", "sqrt_",
    "exp_", "log_", "abs_", "neg_", "true_divide_", "floor_divide_", "addcmul_", "addcdiv_", "lerp_",
    "clamp_min_", "clamp_max_", "sigmoid_", "tanh_", "relu_", "round_", "floor_", "ceil_", "bernoulli_",
    "random_", "exponential_", "masked_scatter_", "put_", "fmod_", "remainder_", "reciprocal_", "rsqrt_",
})
_ARRAY_MAKERS = ("numpy.", "torch.")  # a stored value built by one of these is an array or tensor
_NOT_ARRAYS = frozenset({"tolist", "item", "split", "keys", "values", "items"})
MAX_HELPERS = 2  # helper methods and module functions followed from __getitem__ (a helper's helper)
_SIZE_ARGS = frozenset({"randn", "rand", "randint", "zeros", "ones", "empty", "full", "normal", "uniform"})


@dataclass
class Write:
    """An in-place write through a name that shares memory with ``self.<attr>``."""

    node: cst.CSTNode  # the writing statement or call
    name: str
    attr: str
    made: cst.CSTNode  # where the name was bound to the shared memory


def dataset_writes(module: cst.Module, qualify) -> list[Write]:
    """The in-place writes to stored data in the ``__getitem__`` of every class of the module.
    ``qualify``: the file's import resolver (``F.log`` -> ``torch.nn.functional.log``)."""
    found: list[Write] = []
    functions = {s.name.value: s for s in module.body if isinstance(s, cst.FunctionDef)}
    for cls in statements_of(module, (cst.ClassDef,)):
        if not isinstance(cls.body, cst.IndentedBlock):
            continue
        methods = {s.name.value: s for s in cls.body.body if isinstance(s, cst.FunctionDef)}
        getitem = methods.get("__getitem__")
        if getitem is None or not getitem.params.params:
            continue
        self_name = getitem.params.params[0].name.value
        stored = _stored_arrays(methods.values(), qualify)
        indices = {p.name.value for p in getitem.params.params[1:]}
        found.extend(_Reader(self_name, stored, qualify, indices, methods, functions=functions).writes(getitem))
    return found


def _stored_arrays(methods, qualify) -> dict[str, str]:
    """Attributes of the class assigned an array or tensor it builds (``np.load``, ``torch.randn(n, d)``,
    a list of such): attr -> "tensor" | "array" | "arrays" (a list of arrays: its elements are them)
    | "matrix" (an array of known rank >= 2)."""
    kinds: dict[str, str] = {}
    for method in methods:
        if not method.params.params:
            continue
        owner = method.params.params[0].name.value
        for node in nodes_of(method, (cst.Assign,)):
            for target in node.targets:
                target = target.target
                if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and \
                        target.value.value == owner:
                    kind = _array_kind(node.value, qualify)
                    if kind is not None:
                        kinds[target.attr.value] = kind
    return kinds


def _array_kind(value, qualify) -> str | None:
    if isinstance(value, (cst.ListComp, cst.List)):
        element = value.elt if isinstance(value, cst.ListComp) else (
            value.elements[0].value if value.elements else None)
        return "arrays" if element is not None and _array_kind(element, qualify) is not None else None
    if not isinstance(value, cst.Call):
        return None
    func = value.func
    if isinstance(func, cst.Attribute) and func.attr.value in ("astype", "float", "to", "copy", "clone", "contiguous"):
        return _array_kind(func.value, qualify)
    if isinstance(func, cst.Attribute) and func.attr.value in _NOT_ARRAYS:
        return None
    qual = qualify(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
    if qual is None or not qual.startswith(_ARRAY_MAKERS):
        return None
    if qual.startswith("torch."):
        return "tensor"
    return "matrix" if _rank_two(value) else "array"


def _rank_two(call: cst.Call) -> bool:
    """`np.random.randn(n, d)`, `np.zeros((n, d))`, `np.random.normal(size=(n, d))`: rank >= 2."""
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
    if name not in _SIZE_ARGS:
        return False
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    sized = [a.value for a in call.args if a.keyword is not None and a.keyword.value in ("size", "shape")]
    if name in ("randn", "rand") and len(positional) >= 2:
        return True
    shape = sized[0] if sized else positional[0] if positional and name in ("zeros", "ones", "empty", "full") else None
    return isinstance(shape, cst.Tuple) and len(shape.elements) >= 2


class _Reader:
    """Reads one ``__getitem__`` in source order, keeping which names share stored memory."""

    def __init__(self, self_name: str, stored: dict[str, str], qualify, indices: set[str],
                 methods: dict[str, cst.FunctionDef], depth: int = 0,
                 functions: dict[str, cst.FunctionDef] | None = None) -> None:
        self.self_name = self_name
        self.functions = functions or {}  # the module's functions: one given a shared name is read too
        self.methods = methods  # the class's methods: a helper given a shared name is read too
        self.depth = depth
        self.indices = set(indices)  # names holding an item index (an int): indexing by one is basic
        self.stored = stored
        self.qualify = qualify
        self.shared: dict[str, tuple[str, cst.CSTNode, bool]] = {}  # name -> (attr, bound at, known array)
        self.found: list[Write] = []

    def writes(self, function: cst.FunctionDef) -> list[Write]:
        self.block(function)
        return self.found

    def block(self, scope) -> None:
        """The statements of a function (or of a compound statement), in source order."""
        for statement in inner_statements(scope):
            self.statement(statement)

    def statement(self, statement) -> None:
        if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            for small in statement.body:
                self.small(small)
            return
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            return
        self.block(statement)

    def small(self, node) -> None:
        if isinstance(node, cst.Assign):
            self._calls(node.value)
            if _index_arithmetic(node.value, self.indices):
                self.indices.update(t.target.value for t in node.targets if isinstance(t.target, cst.Name))
            for target in node.targets:
                self.assign(target.target, node.value, node)
            self._subscript_writes([t.target for t in node.targets], node)
        elif isinstance(node, cst.AugAssign):
            self._calls(node.value)
            target = node.target
            base = target.value if isinstance(target, cst.Subscript) else target
            entry = self._entry(base)
            if entry is not None and (entry[2] or isinstance(target, cst.Subscript) and self._array(entry)):
                self.found.append(Write(node, _root(base), entry[0], entry[1]))
        elif isinstance(node, (cst.Expr, cst.Return)) and node.value is not None:
            self._calls(node.value)

    def assign(self, target, value, node) -> None:
        """Bind a target to what it is assigned; `a, b = x[i], y[i]` pairwise."""
        if isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)) and \
                len(target.elements) == len(value.elements):
            for element, item in zip(target.elements, value.elements, strict=True):
                self.assign(element.value, item.value, node)
            return
        self.bind(target, self.sharing(value), node)

    def bind(self, target, source, node) -> None:
        if isinstance(target, cst.Name):
            if source is None:
                self.shared.pop(target.value, None)
            else:
                self.shared[target.value] = (source[0], node, source[1])
        elif isinstance(target, (cst.Tuple, cst.List)):
            # `image, mask = self.pairs[idx]`: each element of a stored pair is stored data
            for element in target.elements:
                inner = element.value
                if isinstance(inner, cst.Name):
                    kept = source if source is not None and self.stored.get(source[0]) == "arrays" else None
                    self.bind(inner, kept, node)

    def sharing(self, value) -> tuple[str, bool] | None:
        """(stored attribute, known to be an array or tensor) when ``value`` shares its memory."""
        if isinstance(value, cst.Name):
            entry = self.shared.get(value.value)
            return (entry[0], entry[2]) if entry is not None else None
        if isinstance(value, cst.Attribute):
            if isinstance(value.value, cst.Name) and value.value.value == self.self_name:
                kind = self.stored.get(value.attr.value)  # None: built elsewhere (a loader, an argument)
                return value.attr.value, kind in ("tensor", "matrix")
            if value.attr.value == "T":
                return self.sharing(value.value)
            return None
        if isinstance(value, cst.Subscript):
            if not all(_basic(element, self.indices) for element in value.slice):
                return None  # a list, array or mask index copies
            inner = self.sharing(value.value)
            if inner is None:
                return None
            kind = self.stored.get(inner[0])
            # `x[i, ...]`, `x[i, :, :]`: only an array takes a tuple index, and it gives a view
            multi = len(value.slice) > 1 and all(not isinstance(e.slice, cst.Index) or not isinstance(
                e.slice.value, cst.SimpleString) for e in value.slice)
            sliced = any(isinstance(e.slice, cst.Slice) for e in value.slice)
            element_is_array = kind == "arrays" and isinstance(value.value, cst.Attribute)
            return inner[0], inner[1] or element_is_array or multi or (sliced and kind in ("array", "matrix"))
        if isinstance(value, cst.Call):
            func = value.func
            if isinstance(func, cst.Attribute) and func.attr.value in VIEW_METHODS:
                inner = self.sharing(func.value)
                return (inner[0], True) if inner is not None else None
            qual = self.qualify(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
            if qual in SHARING_CALLS and value.args and not any(
                    a.keyword is not None and a.keyword.value in ("dtype", "device") for a in value.args):
                inner = self.sharing(value.args[0].value)
                return (inner[0], True) if inner is not None else None
        return None

    def _helper(self, method: cst.FunctionDef, call: cst.Call, bound: bool = True) -> None:
        """`self._prepare(im)` or `color_norm(im, ...)` with `im` shared: the helper's writes into
        its parameter count (``bound``: a method, whose first parameter is the object)."""
        params = [p.name.value for p in method.params.params[1 if bound else 0:]]
        passed: dict[str, tuple[str, cst.CSTNode, bool]] = {}
        for index, arg in enumerate(call.args):
            if arg.star:
                continue
            if isinstance(arg.value, cst.Name) and arg.value.value in self.shared:
                entry = self.shared[arg.value.value]
            else:  # `self.prepare(self.inputs[idx, ...])`: the view itself
                sharing = self.sharing(arg.value)
                if sharing is None:
                    continue
                entry = (sharing[0], arg.value, sharing[1])
            name = arg.keyword.value if arg.keyword is not None else params[index] if index < len(params) else None
            if name is not None:
                passed[name] = entry
        if not passed or (bound and not method.params.params):
            return
        owner = method.params.params[0].name.value if bound else self.self_name
        inner = _Reader(owner, self.stored, self.qualify, set(), self.methods, self.depth + 1, self.functions)
        inner.shared = dict(passed)
        self.found.extend(inner.writes(method))

    def _entry(self, node) -> tuple[str, cst.CSTNode, bool] | None:
        if isinstance(node, cst.Name):
            return self.shared.get(node.value)
        return None

    def _array(self, entry) -> bool:
        return entry[2] or self.stored.get(entry[0]) in ("tensor", "matrix", "arrays")

    def _subscript_writes(self, targets, node) -> None:
        for target in targets:
            if isinstance(target, cst.Subscript):
                entry = self._entry(target.value)
                if entry is not None and self._array(entry):
                    self.found.append(Write(node, _root(target.value), entry[0], entry[1]))

    def _calls(self, expression) -> None:
        """`x.sub_(mean)` on a shared name (also inside a bigger expression); `torch.from_numpy(x)`
        proves `x` an array."""
        for call in nodes_of(expression, (cst.Call,)):
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value in WRITING_METHODS:
                receiver = func.value
                shared = self.sharing(receiver)
                if shared is not None:
                    made = self._entry(receiver)
                    self.found.append(Write(call, _root(receiver), shared[0], made[1] if made else call))
            if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and \
                    func.value.value == self.self_name and func.attr.value in self.methods and self.depth < MAX_HELPERS:
                self._helper(self.methods[func.attr.value], call)
            elif isinstance(func, cst.Name) and func.value in self.functions and self.depth < MAX_HELPERS:
                self._helper(self.functions[func.value], call, bound=False)
            qual = self.qualify(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
            if qual in SHARING_CALLS and call.args and isinstance(call.args[0].value, cst.Name):
                entry = self.shared.get(call.args[0].value.value)
                if entry is not None:
                    self.shared[call.args[0].value.value] = (entry[0], entry[1], True)


def _basic(element: cst.SubscriptElement, indices: set[str]) -> bool:
    """An index that selects a view: an integer, the item index, a slice, `...`, a dict key."""
    index = element.slice
    if isinstance(index, cst.Slice):
        return True
    value = index.value
    if isinstance(value, (cst.Integer, cst.Ellipsis)):
        return True
    if isinstance(value, cst.Name):
        return value.value in indices or value.value == "None"
    if isinstance(value, cst.UnaryOperation) and isinstance(value.expression, cst.Integer):
        return True
    if isinstance(value, cst.SimpleString):
        return True  # a dict's entry: `sample["image"]`
    return False


def _index_arithmetic(value, indices: set[str]) -> bool:
    """`idx % len(self.x)`, `int(idx)`, `idx - offset`: still an item index."""
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "int":
        value = value.args[0].value if value.args else None
    if isinstance(value, cst.BinaryOperation) and isinstance(
            value.operator, (cst.Modulo, cst.FloorDivide, cst.Add, cst.Subtract)):
        return isinstance(value.left, cst.Name) and value.left.value in indices
    return isinstance(value, cst.Name) and value.value in indices


def _root(node) -> str:
    while isinstance(node, (cst.Subscript, cst.Attribute)):
        node = node.value
    return node.value if isinstance(node, cst.Name) else ""
