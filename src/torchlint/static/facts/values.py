"""Abstract values: what the static checker knows about an expression's result.

Numbers carry a sound range (see ``ranges``) and separate *evidence* that exactly 0 is reached,
graded by how it happens: ``ROUTINE`` (a ReLU output, a count, ``x - x.min()``: every batch),
``SATURATION`` (``1 - sigmoid(x)`` rounds to 0 above x ~ 16.6 in float32: confident models get
there), ``DEGENERATE`` (a difference, a norm or a variance: 0 on equal or constant inputs),
``UNDERFLOW`` (a sigmoid, softmax or exp that underflows only for inputs below ~ -88 in float32;
in float16 the same happens below ~ -17, which is SATURATION). A range alone is never
evidence: an unknown value is (-inf, inf) with no evidence, and it is never reported. ``tracked``
says whether the value carries autograd history (True from parameters and module outputs, False
for numpy, ``.item()``, ``.detach()`` and anything computed under ``no_grad``, None unknown).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from torchlint.static.facts.ranges import INF

NONE, UNDERFLOW, DEGENERATE, SATURATION, ROUTINE = 0, 1, 2, 3, 4


@dataclass(frozen=True, eq=False, slots=True)
class RngOrigin:
    """Where a random generator object (np.random.default_rng, RandomState, random.Random,
    torch.Generator) is created: the call and the innermost function around it (None: module level)."""

    node: Any
    function: Any = None
    path: str = ""  # the file

    def __repr__(self) -> str:
        return f"RngOrigin({self.path}, {type(self.node).__name__})"


@dataclass(frozen=True, slots=True)
class Value:
    op: str | None = None  # canonical op that produced the value ("sigmoid", "sum", ...)
    lo: float = -INF  # sound bounds in the value's dtype
    hi: float = INF
    zero: int = NONE  # evidence that exactly 0 is reached: NONE < UNDERFLOW < DEGENERATE < SATURATION < ROUTINE
    desc: str = ""  # "a sigmoid output": used in messages
    prob: bool = False  # a probability in [0, 1]
    half: bool = False  # float16
    f64: bool = False  # float64 (a softmax or sigmoid underflows to 0 only past a logit gap of ~745)
    # float32 or wider, shown: an op a float16 autocast runs in float32 (`exp`, `**`), `.float()`, or
    # arithmetic with such a tensor, which promotes a float16 operand
    f32: bool = False
    unbounded: bool = False  # a linear/matmul output: evidence of no upper bound
    shifted: bool = False  # max-subtracted before exp
    tracked: bool | None = None  # carries autograd history
    const: float | None = None
    eps: float | None = None  # size of the additive guard where the guarded part is routinely 0
    of: Value | None = None  # the input of a reduction (sum of what?)
    node: Any = None  # the expression that produced the value
    kind: str | None = None  # "module" | "instance" | "class" | "function" | "param" | "list" | ...
    qual: str | None = None  # qualified class name for modules
    returns: Value | None = None  # what calling it yields
    cls: Any = None  # ClassInfo for user classes/instances
    items: tuple[Value, ...] = ()
    keys: tuple[str | None, ...] = ()  # for a dict: the string key of each item (None: not a literal)
    body: Any = None  # scopes.Body of a function: what calling it does
    workers: int | None = None  # DataLoader num_workers (0 when not given)
    checks: tuple[str, ...] = ()  # for a boolean mask: the names its comparison tests (`d > 0`)
    checked: bool = False  # the code compared this value (`if d > 0`): it handles the zero case
    grad_off: bool = False  # a function returning torch.no_grad()/inference_mode() or wrapping with it
    squared_distance: bool = False  # a square, or sum of squares, of differences of two values: 0 where they coincide
    rng: RngOrigin | None = None  # the random generator it is (kind "rng") or was built around (an object, a list)
    origin: str = ""  # the project file whose syntax tree `node` belongs to, when not the checked file
    half_params: bool = False  # a model some of whose parameters were converted to float16 (`.data = .half()`)
    alts: tuple[tuple[Any, Value], ...] = ()  # (class, result) per model class a call may run (see `either`)
    shape: tuple | None = None  # the tensor's dims, when known (see `shapes`)
    dim: Any = None  # for a size (`x.size(0)`, `len(x)`), the dim it is: a symbol or an int

    def __post_init__(self) -> None:
        if self.zero and not self.lo <= 0 <= self.hi:
            object.__setattr__(self, "zero", NONE)

    def but(self, **changes: Any) -> Value:
        """A copy with changes; a shape or size survives only when given again (most changes are
        made by ops that change them)."""
        if self.shape is not None and "shape" not in changes:
            changes["shape"] = None
        if self.dim is not None and "dim" not in changes:
            changes["dim"] = None
        return replace(self, **changes)

    @property
    def span(self) -> tuple[float, float]:
        return self.lo, self.hi

    @property
    def positive(self) -> bool:
        """Proven > 0 (a clamp at eps, `+ eps`, exp of a bounded input...)."""
        return self.lo > 0

    def reaches_zero(self, level: int = DEGENERATE) -> bool:
        """Evidence, at least at `level`, that the value is exactly 0 somewhere."""
        return self.zero >= level


NOTHING = Value()

# `scores.masked_fill(mask, float("inf"))`: entries set to +inf on the masked positions. Kept through a
# join (`if causal: scores.masked_fill_(...)`): the path that filled reaches what follows.
FILLED_WITH_INF = "filled with +inf where masked"


_FLOAT_MAX = 1.7976931348623157e308


def constant(number: float, node: Any = None) -> Value:
    """A literal or folded number; its range is in floats (an int beyond float's range, 10**400, is inf)."""
    if isinstance(number, int):
        number = float(number) if abs(number) <= _FLOAT_MAX else (INF if number > 0 else -INF)
    return Value(op="const", lo=number, hi=number, zero=ROUTINE if number == 0 else NONE, const=number,
                 tracked=False, node=node)


def literal_number(text: str) -> float | None:
    """The number an Integer or Float literal spells ("0x41", "1_000", "1e-8"); None if it is not one."""
    text = text.replace("_", "")
    try:
        return int(text, 0)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return None


# a constant tensor some elements of which were updated in place (`count[idx] += 1` on `torch.zeros(n)`):
# what one element holds is not known (indexing it gives nothing), the whole keeps the constant's evidence
UPDATED_CONSTANT = "updated constant"


def join(a: Value, b: Value) -> Value:
    """Merge two reaching definitions, keeping only what both agree on (precision first)."""
    if a is b or a == b:
        return a
    if _model(a) and _model(b):
        return either(a, b)
    if a.kind or b.kind:
        if a.kind == "list" == b.kind and a.items != b.items:
            short, long = (a, b) if len(a.items) < len(b.items) else (b, a)
            if all(x is y for x, y in zip(short.items, long.items, strict=False)):
                return long  # a list before and after appends in a loop or a branch: what it may hold
        if a.kind == "dict" == b.kind:
            return Value(kind="dict")  # two different dicts: what each holds is not known
        if a.kind != b.kind or not same_class(a.cls, b.cls) or a.qual != b.qual:
            return NOTHING
        joined = a if a.rng is not None or b.rng is None else a.but(rng=b.rng)
        return _either_precision(joined, b) if a.kind in ("instance", "module") else joined
    return Value(
        op=a.op if a.op == b.op else UPDATED_CONSTANT if {a.op, b.op} == {"const", UPDATED_CONSTANT} else None,
        lo=min(a.lo, b.lo),
        hi=max(a.hi, b.hi),
        zero=min(a.zero, b.zero),
        desc=a.desc if a.desc == b.desc else FILLED_WITH_INF if FILLED_WITH_INF in (a.desc, b.desc) else "",
        node=(a if a.desc == FILLED_WITH_INF else b).node if FILLED_WITH_INF in (a.desc, b.desc) else None,
        prob=a.prob and b.prob,
        half=a.half and b.half,
        f32=a.f32 and b.f32,
        unbounded=a.unbounded and b.unbounded,
        shifted=a.shifted and b.shifted,
        tracked=a.tracked if a.tracked == b.tracked else None,
        eps=min(a.eps, b.eps) if a.eps is not None and b.eps is not None else None,
        squared_distance=a.squared_distance and b.squared_distance,
        shape=a.shape if a.shape == b.shape else None,
        dim=a.dim if a.dim == b.dim else None,
    )


def element_updated(old: Value, element: Value, repeated: bool) -> Value:
    """A constant tensor after `x[i] op= v`: each element is the constant or the updated one; when
    ``repeated`` (in a loop), updated any number of times: unbounded in the direction it moves. The
    elements never written keep the constant, and with it its evidence of 0."""
    joined = join(old, element)
    if repeated:
        joined = joined.but(hi=INF if element.hi > old.hi else joined.hi,
                            lo=-INF if element.lo < old.lo else joined.lo)
    if old.zero > joined.zero:  # the elements never written keep their 0 (`count[idx] += 1` on zeros)
        joined = joined.but(zero=old.zero, desc=old.desc)
    return joined.but(op=UPDATED_CONSTANT)


MAX_ALTERNATIVES = 4


def same_class(a, b) -> bool:
    """The same class definition: the same ClassInfo, or the ones two walks of a file made of it
    (a call's argument learned in the previous walk meets this walk's instance)."""
    return a is b or (a is not None and b is not None and a.name == b.name and a.module == b.module
                      and a.bases == b.bases)


def _either_precision(model: Value, other: Value) -> Value:
    """The same model seen on two paths: made float16 on one (`if args.fp16: model.half()`), it runs
    in float16 when that configuration is chosen, which is what the precision rules check."""
    if model.half == other.half and model.half_params == other.half_params:
        return model
    return model.but(half=model.half or other.half, half_params=model.half_params or other.half_params)


def _model(value: Value) -> bool:
    """A model (or loss) the configuration may choose: a project module class, or a torch.nn module
    (`criterion = nn.BCEWithLogitsLoss() if ... else nn.MSELoss()`)."""
    return value.kind == "either" or (value.kind == "instance" and value.cls is not None and value.cls.is_module) \
        or (value.kind == "module" and value.qual is not None)


def either(a: Value, b: Value) -> Value:
    """One of several project model classes, chosen by configuration: `model = MLP() if args.mlp else
    CNN()`. Calling it yields the result every class agrees on, plus each class's own result (`alts`)
    for rules about a configuration the user can pick; more than MAX_ALTERNATIVES classes is unknown."""
    alternatives: list[Value] = []
    for value in (*(a.items if a.kind == "either" else (a,)), *(b.items if b.kind == "either" else (b,))):
        same = [index for index, seen in enumerate(alternatives)
                if same_class(seen.cls, value.cls) and seen.qual == value.qual]
        if not same:
            alternatives.append(value)
        else:
            alternatives[same[0]] = _either_precision(alternatives[same[0]], value)
    if len(alternatives) > MAX_ALTERNATIVES:
        return NOTHING
    return alternatives[0] if len(alternatives) == 1 else Value(kind="either", items=tuple(alternatives))


_PARAMETER = Value(tracked=True)
_GRADIENT = Value(tracked=False)


def numeric(value: Value) -> Value:
    """A parameter or gradient used as an operand: a tensor about whose values nothing is known."""
    if value.kind == "param":
        return _PARAMETER if value.tracked is not False else _GRADIENT  # `.data`, or a frozen one: no history
    if value.kind == "grad":
        return _GRADIENT
    return value


def tracked_of(*values: Value) -> bool | None:
    """Autograd history of an op's result: any tracked input makes it tracked."""
    states = [v.tracked for v in values]
    if True in states:
        return True
    if states and all(state is False for state in states):
        return False
    return None


# Constructors of random generator objects whose state is copied with the object (into forked workers).
GENERATOR_CLASSES = frozenset({
    "numpy.random.default_rng", "numpy.random.RandomState", "numpy.random.Generator",
    "numpy.random.mtrand.RandomState", "random.Random", "torch.Generator",
})


def held_rng(values, depth: int = 2) -> RngOrigin | None:
    """The generator one of ``values`` is, was built around, or keeps in an attribute of its class."""
    for value in values:
        if value.rng is not None:
            return value.rng
        if depth and value.kind == "instance" and value.cls is not None:
            for info in value.cls.lineage():
                found = held_rng(list(info.attrs.values()), depth - 1)
                if found is not None:
                    return found
    return None
