"""TL504 rng-shared-by-workers: a dataset draws from a generator object created before the workers start.

A DataLoader with worker processes gives each worker a copy of the dataset, and so of every
generator object it holds (``np.random.default_rng``, ``RandomState``, ``random.Random``,
``torch.Generator``) in the state it had in the parent. Unless something reseeds the copies per
worker, all workers draw the same numbers. PyTorch reseeds only the global ``random``, ``torch``
and (since 1.9) ``np.random`` states per worker, so the global-state form is not reported.

The rule follows each dataset class's per-item methods (``__getitem__``, ``__iter__``...) through
the methods, transforms and helpers they call, collects the generators they draw from, and keeps
those created outside that per-item code (in ``__init__``, a factory, at module level). It reports
when a DataLoader over the class (in the file, else in a project file that imports it) may start
workers and has no ``worker_init_fn``, and the per-item code neither creates nor reseeds the
generators it holds nor asks for the worker's seed (``torch.initial_seed()``, ``get_worker_info()``
in a function that names a seed). A generator made per item from the clock in whole seconds is
reported too: workers started in the same second get the same seed.
"""

from __future__ import annotations

import re
from pathlib import Path

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.facts.values import GENERATOR_CLASSES, NOTHING, RngOrigin, Value
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.loaders import DATALOADERS, LoaderUse, loader_uses
from torchlint.static.interpret.scopes import Body
from torchlint.static.interpret.worker_seeding import init_function, shared_reseeds
from torchlint.static.rules.base import Rule
from torchlint.static.torch_support import TorchSupport, of_file

PER_ITEM = ("__getitem__", "__getitems__", "__iter__", "__next__")
CALLED = ("__call__", "forward")
RESEEDS = frozenset({"seed", "manual_seed", "set_state", "setstate", "__setstate__"})
NOT_DRAWS = frozenset({"get_state", "getstate", "initial_seed", "spawn", "bit_generator", "__getstate__",
                       "__deepcopy__", "__copy__"})
WORKER_SEEDS = frozenset({"torch.utils.data.get_worker_info", "torch.utils.data.dataloader.get_worker_info",
                          "torch.initial_seed", "torch.random.initial_seed"})
WORKER_INFO = frozenset({"torch.utils.data.get_worker_info", "torch.utils.data.dataloader.get_worker_info"})
_SEED_WORD = re.compile(r"\bseed\b")
RESEED_ORDER = ("numpy.random.seed", "random.seed", "torch.manual_seed", "torch.random.manual_seed")
NUMPY_NOT_DRAWS = frozenset({"seed", "get_state", "set_state", "default_rng", "get_bit_generator",
                             "set_bit_generator"})
OLD_NUMPY_WORKERS = (1, 9)  # from this PyTorch on, each worker reseeds np.random itself
MAX_CALLS = 3000  # calls one class's per-item code may visit through followed methods


class _ItemCode:
    """What a dataset's per-item methods reach: the generators they draw from, where (a call in this
    file), the functions they run, and whether they seed per item or per worker themselves."""

    def __init__(self, ctx: FileContext, cls) -> None:
        self.ctx = ctx
        self.draws: dict[int, tuple[RngOrigin, CallInfo]] = {}  # by origin: the first draw
        self.functions: set[int] = set()
        self.seeds_itself = False
        self.clock: dict[int, CallInfo] = {}  # generators made per item from the clock in whole seconds
        self.global_numpy: dict[int, CallInfo] = {}  # draws from NumPy's global generator
        self.budget = MAX_CALLS
        todo = []
        for name in PER_ITEM:
            method = cls.find("methods", name)
            if method is not None and isinstance(method.body, Body):
                todo.append((method.body, cls, None))
        seen: set[tuple[int, int]] = set()
        while todo and self.budget > 0 and not self.seeds_itself:
            body, owner, anchor = todo.pop()
            if (id(body), id(owner)) in seen:
                continue
            seen.add((id(body), id(owner)))
            self.functions.add(id(body.node))
            for entry in body.walk(expand=False):
                if isinstance(entry, CallInfo):
                    self.budget -= 1
                    todo.extend(self._call(entry, owner, anchor, body))

    def _call(self, call: CallInfo, owner, anchor: CallInfo | None, body: Body) -> list:
        """Record what the call does; return the bodies it runs, with their `self` class."""
        here = self.ctx.calls.get(id(call.node)) is call
        site = call if here else anchor
        self._draws_through_arguments(call, owner, here, site)
        if call.form == "function":
            if call.qual == "numpy.random.seed" and call.args and not isinstance(
                    call.args[0], (cst.Integer, cst.Float, cst.UnaryOperation)):
                self.seeds_itself = True  # `np.random.seed(index)` per item: each item's own state
                return []
            if _global_numpy_draw(call.qual) and site is not None:
                self.global_numpy.setdefault(id(site.node), site)
            if call.qual in GENERATOR_CLASSES and _clock_seconds(call.param(0, "seed")):
                if site is not None:  # made in every worker, but workers started together get one seed
                    self.clock.setdefault(id(call.node), site)
            elif call.qual in GENERATOR_CLASSES and _bound_to_local(body.node, call.node):
                pass  # a generator of its own for this item (`g = torch.Generator().manual_seed(idx)`)
            elif call.qual in GENERATOR_CLASSES or call.qual in WORKER_SEEDS and (
                    call.qual not in WORKER_INFO or _mentions_seed(body.node)):
                self.seeds_itself = True  # a generator made per item, or seeded from the worker's seed
            return []
        follow = []
        if call.form == "method":
            receiver = self._resolve(call.receiver, owner, here)
            if receiver.kind == "rng":
                if call.name in RESEEDS:
                    if not _fresh(call.receiver, receiver.rng, body):  # not `torch.Generator().manual_seed(i)`
                        self.seeds_itself = True
                elif call.name not in NOT_DRAWS:
                    self._draw(receiver.rng, site)
            elif receiver.kind in ("instance", "class") and receiver.cls is not None:
                method = receiver.cls.find("methods", call.name)  # also inherited, `Base.method(self)`
                target = receiver.cls if receiver.kind == "instance" else owner
                follow.append((method, target))
            elif _is_super(call.receiver) and owner is not None:
                follow.extend((p.find("methods", call.name), owner) for p in owner.parents)
        elif call.form == "local":
            callee = call.callee
            if callee.kind == "instance" and callee.cls is not None:
                if callee.rng is not None:  # an object built around a generator: calling it draws
                    self._draw(callee.rng, site)
                follow.extend((callee.cls.find("methods", name), callee.cls) for name in CALLED)
            elif callee.kind == "class" and callee.cls is not None:
                follow.append((callee.cls.find("methods", "__init__"), callee.cls))  # built per item
            elif callee.kind == "function":
                func = call.node.func
                bound = self._resolve(func.value, owner, here) if isinstance(func, cst.Attribute) else NOTHING
                follow.append((callee, bound.cls if bound.kind == "instance" else owner))
        return [(value.body, cls, site) for value, cls in follow
                if value is not None and isinstance(value.body, Body)]

    def _draws_through_arguments(self, call: CallInfo, owner, here: bool, site) -> None:
        """`torch.randint(..., generator=self.g)`, `augment(img, self.rng)`: the callee draws from it."""
        for argument in (*call.args, *call.kwargs.values()):
            value = self._resolve(argument, owner, here)
            if value.kind == "rng":
                self._draw(value.rng, site)

    def _draw(self, origin: RngOrigin | None, site: CallInfo | None) -> None:
        if origin is not None and site is not None:
            self.draws.setdefault(id(origin), (origin, site))

    def _resolve(self, node, owner, here: bool) -> Value:
        """What an expression holds: the walker's value in this file; `self.x` (also inherited
        attributes and code of other files) through the class's attributes."""
        if node is None:
            return NOTHING
        if isinstance(node, cst.Name) and node.value == "self" and owner is not None:
            return Value(kind="instance", cls=owner)  # the dataset's class, also in methods it inherits
        if here:
            value = self.ctx.value(node)
            if value.kind:
                return value
        if isinstance(node, cst.Attribute):
            holder = self._resolve(node.value, owner, here)
            if holder.kind == "instance" and holder.cls is not None:
                return holder.cls.find("attrs", node.attr.value) or NOTHING
        return NOTHING

    def clock_seeded(self) -> list[CallInfo]:
        """Generators the per-item code makes from `int(time.time())`: the same seed in every worker
        that starts within the same second."""
        return [] if self.seeds_itself else list(self.clock.values())

    def global_draws(self) -> list[CallInfo]:
        """Draws from `np.random`'s global state (reseeded per worker only since PyTorch 1.9)."""
        return [] if self.seeds_itself else list(self.global_numpy.values())

    def shared(self) -> list[tuple[RngOrigin, CallInfo]]:
        """Draws from generators created outside the per-item code: one copy per worker, same state."""
        if self.seeds_itself:
            return []
        return [(origin, site) for origin, site in self.draws.values()
                if origin.function is None or id(origin.function) not in self.functions]


def _fresh(receiver, origin: RngOrigin | None, body: Body) -> bool:
    """The reseeded generator is one this per-item function makes itself (the reseed only sets up
    its own generator, not one the object holds)."""
    if isinstance(receiver, cst.Call):
        return True
    return isinstance(receiver, cst.Name) and origin is not None and origin.function is body.node


def _bound_to_local(function, call) -> bool:
    """The generator made by `call` only goes to local names (`g = torch.Generator().manual_seed(i)`):
    it replaces no generator the object holds."""
    finder = _AssignOf(call)
    function.visit(finder)
    return finder.targets is not None and all(isinstance(t.target, cst.Name) for t in finder.targets)


class _AssignOf(cst.CSTVisitor):
    """The targets of the assignment whose value holds a given node (None: not in an assignment)."""

    def __init__(self, node) -> None:
        self.node, self.targets, self._open = node, None, []

    def visit_Assign(self, node: cst.Assign) -> None:
        self._open.append(node)

    def leave_Assign(self, node: cst.Assign) -> None:
        self._open.pop()

    def on_visit(self, node) -> bool:
        if node is self.node:
            if self._open:
                self.targets = self._open[-1].targets
            return False
        return self.targets is None and super().on_visit(node)


def _global_numpy_draw(qual: str | None) -> bool:
    """`np.random.rand(...)`, `np.random.choice(...)`: a draw from NumPy's global generator."""
    if not qual or not qual.startswith("numpy.random."):
        return False
    name = qual[len("numpy.random."):]
    return "." not in name and name not in NUMPY_NOT_DRAWS and not name[:1].isupper()


def _mentions_seed(function) -> bool:
    """The function that asks for the worker info also names a seed (`info.seed`, `seed = ...`): it
    seeds from it, rather than only splitting the data by worker id."""
    return _SEED_WORD.search(cst.Module([]).code_for_node(function)) is not None


def _clock_seconds(node) -> bool:
    """`int(time.time())`, `round(time.time())`, `math.floor(time.time())`: the clock in whole seconds."""
    if not (isinstance(node, cst.Call) and len(node.args) == 1 and node.args[0].keyword is None):
        return False
    func, inner = node.func, node.args[0].value
    truncates = (isinstance(func, cst.Name) and func.value in ("int", "round")) or (
        isinstance(func, cst.Attribute) and func.attr.value in ("floor", "trunc")
        and isinstance(func.value, cst.Name) and func.value.value == "math")
    return truncates and isinstance(inner, cst.Call) and not inner.args and isinstance(inner.func, cst.Attribute) \
        and inner.func.attr.value == "time" and isinstance(inner.func.value, cst.Name) \
        and inner.func.value.value == "time"


def _is_super(node) -> bool:
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "super"


class RngSharedByWorkers(Rule):
    info = RuleInfo(
        "TL504", "rng-shared-by-workers", "warning",
        "A dataset draws from a generator object created before the DataLoader's workers start: "
        "every worker gets the same copy and draws the same numbers.",
        tags=("correctness", "data-loading"),
    )

    def on_end(self, ctx: FileContext) -> None:
        has_loader = any(c.form == "function" and c.qual in DATALOADERS for c in ctx.calls.values())
        uses = loader_uses(ctx) if has_loader else []  # built once, for both checks
        self._shared_worker_seeds(ctx, uses)
        classes = [v.cls for v in ctx.names.values()
                   if v.kind == "class" and v.cls is not None and v.cls.module == ctx.path]
        if not classes:
            return
        reported: set[int] = set()
        for cls in classes:
            if not any(cls.find("methods", name) is not None for name in PER_ITEM):
                continue
            item = _ItemCode(ctx, cls)
            shared, clock, numpy_draws = item.shared(), item.clock_seeded(), item.global_draws()
            support = of_file(ctx) if numpy_draws else None
            if support is None or not support.installs_before(*OLD_NUMPY_WORKERS):
                numpy_draws = []
            if not shared and not clock and not numpy_draws:
                continue
            loaders = [u for u in uses if any(d is cls for d in u.datasets)]
            if not loaders and ctx.project is not None and ctx.file is not None:
                loaders = ctx.project.loaders_of(Path(ctx.file), cls.name, ctx.deps)
            risky = [u for u in loaders if u.copies_state]
            if shared and risky:
                self._report(ctx, cls, shared, risky[0], reported)
            if numpy_draws and risky:
                self._report_numpy(ctx, cls, numpy_draws[0], risky[0], support, reported)
            parallel = [u for u in loaders if u.workers is None or u.workers > 1]
            if clock and parallel:
                self._report_clock(ctx, cls, clock, parallel[0], reported)

    def _report(self, ctx: FileContext, cls, shared, loader: LoaderUse, reported: set[int]) -> None:
        loader_here = loader.path == ctx.path
        workers = f"num_workers={loader.workers}" if loader.workers is not None else "num_workers that may be > 0"
        where = "" if loader_here else f" in {Path(loader.path).name}"
        for origin, site in shared:
            made_here = origin.path == ctx.path
            node = origin.node if made_here else site.node
            if id(node) in reported:
                continue
            reported.add(id(node))
            related: list[tuple[cst.CSTNode, str]] = []
            if made_here and site.node is not origin.node:
                related.append((site.node, f"`{cls.name}` draws from it here, in every worker"))
            if loader_here:
                related.append((loader.node, "this DataLoader copies it into each worker"))
            if made_here:
                what = f"`{ctx.code(origin.node, 50)}` is created once, before"
            else:
                what = (f"`{ctx.code(site.node, 50)}` draws from a generator created once in "
                        f"{Path(origin.path).name} (`{_short(origin.node)}`), before")
            ctx.report(
                self.info, node,
                f"{what} the DataLoader{where} ({workers}, no worker_init_fn) starts its workers, and "
                f"`{cls.name}` draws from it for every item: {_consequence(loader)}. Seed it per worker "
                "(worker_init_fn reseeding it from get_worker_info().seed) or create it in the worker",
                related=tuple(related),
            )


    def _report_numpy(self, ctx: FileContext, cls, site: CallInfo, loader: LoaderUse, support: TorchSupport,
                      reported: set[int]) -> None:
        if id(site.node) in reported:
            return
        reported.add(id(site.node))
        workers = f"num_workers={loader.workers}" if loader.workers is not None else "num_workers that may be > 0"
        where = "" if loader.path == ctx.path else f" in {Path(loader.path).name}"
        related = ((loader.node, "this DataLoader forks the workers"),) if loader.path == ctx.path else ()
        ctx.report(
            self.info, site.node,
            f"`{ctx.code(site.node, 50)}` draws from NumPy's global generator in `{cls.name}` for every item, "
            f"and the project runs PyTorch {_installed(support)} ({_source_name(support)}): before PyTorch 1.9 "
            f"the DataLoader{where} ({workers}, no worker_init_fn) does not reseed np.random in its workers: "
            f"{_consequence(loader)}. Reseed NumPy per worker (worker_init_fn: "
            "np.random.seed(torch.initial_seed() % 2**32)) or require torch>=1.9",
            related=related,
        )

    def _report_clock(self, ctx: FileContext, cls, clock: list[CallInfo], loader: LoaderUse,
                      reported: set[int]) -> None:
        workers = f"num_workers={loader.workers}" if loader.workers is not None else "num_workers that may be > 1"
        where = "" if loader.path == ctx.path else f" in {Path(loader.path).name}"
        for site in clock:
            if id(site.node) in reported:
                continue
            reported.add(id(site.node))
            related = ((loader.node, "its workers start together"),) if loader.path == ctx.path else ()
            ctx.report(
                self.info, site.node,
                f"`{cls.name}` makes this generator in each worker of the DataLoader{where} ({workers}) from "
                "the clock in whole seconds: workers start within the same second, so they get the same seed "
                "and draw the same numbers (repeated masks/augmentations). Seed it from the worker "
                "(get_worker_info().seed, or torch.initial_seed() in the worker)",
                related=related,
            )


    def _shared_worker_seeds(self, ctx: FileContext, uses: list[LoaderUse]) -> None:
        """`worker_init_fn` reseeding random/NumPy/torch with a seed all workers share."""
        done: set[int] = set()  # one finding per worker_init_fn, however many loaders use it
        for use in uses:
            if use.workers == 0 or not use.seeded:
                continue
            call = ctx.calls.get(id(use.node))
            found = init_function(ctx, call.param(10, "worker_init_fn")) if call is not None else None
            if found is None:
                continue
            reseeds = shared_reseeds(*found)
            if not reseeds:
                continue
            first = min(reseeds, key=lambda c: RESEED_ORDER.index(c.qual) if c.qual in RESEED_ORDER else 9)
            if id(first.node) in done:
                continue
            done.add(id(first.node))
            names = ", ".join(sorted({ctx.code(c.node.func) for c in reseeds}))
            ctx.report(
                self.info, first.node,
                f"worker_init_fn `{found[0].name.value}` reseeds {names} with a seed every DataLoader worker "
                "shares (it depends neither on the worker id nor on torch.initial_seed()), and the same again "
                "every epoch: all workers draw the same augmentations/samples. Seed from "
                "torch.initial_seed() % 2**32 in the worker",
                related=((use.node, "the DataLoader whose workers it seeds"),),
            )


def _consequence(loader: LoaderUse) -> str:
    if loader.workers == 1:
        return ("its worker starts every epoch from a copy in the same state, so each epoch draws the same "
                "numbers again (repeated augmentations/samples)")
    again = "" if loader.persistent else ", again every epoch"
    return ("each worker gets a copy in the same state, so all workers draw the same numbers (repeated "
            f"augmentations/samples{again})")


def _installed(support: TorchSupport) -> str:
    """`1.8` for a setting, `0.4.1` for a pin, `< 1.9` for a cap."""
    if support.source.startswith("[") or support.newest is None:
        return support.shown
    pinned = support.newest[:-1] + (support.newest[-1] - 1,)
    return support.shown if support.oldest[:len(pinned)] == pinned else \
        f"{support.shown} to < {'.'.join(map(str, support.newest))}"


def _source_name(support: TorchSupport) -> str:
    return support.source if support.source.startswith("[") else f"read from {Path(support.source).name}"


def _short(node) -> str:
    func = node.func if isinstance(node, cst.Call) else node
    parts = []
    while isinstance(func, cst.Attribute):
        parts.append(func.attr.value)
        func = func.value
    if isinstance(func, cst.Name):
        parts.append(func.value)
    return ".".join(reversed(parts)) + "(...)"
