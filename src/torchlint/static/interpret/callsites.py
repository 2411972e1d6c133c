"""Call-site facts: a function's parameters get what the file's own calls pass them.

The first walk records, for every call that resolves to a function, method or class defined in
the file (``train(loader, model)``, ``self.step(batch)``, ``Net(4)``, ``model(x)`` -> ``forward``),
the values of its arguments and whether the call runs with grad mode off. A parameter's fact is the join over those calls, so it is known only
where every recorded call agrees (a call with ``*args``/``**kwargs`` makes everything unknown); a
function never called in the file keeps unknown parameters. A function whose every call runs
under ``no_grad`` (a helper of an ``@torch.no_grad()`` loader) runs in no-grad scope too. When some parameter gained a fact,
the file is walked again with the facts bound; a second round follows chains one call deeper.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import libcst as cst

from torchlint.static.facts.values import NOTHING, Value, join
from torchlint.static.importers import resolved
from torchlint.static.interpret import batches, shape_params
from torchlint.static.interpret.frames import float_default, is_static, params_of, positional_names
from torchlint.static.interpret.scopes import Body

MAX_WALKS = 5  # the first walk and at most four re-walks with parameter facts (chains four calls deep)
BIG_FILE_LINES = 5_000  # a file longer than this is walked at most BIG_FILE_WALKS times: a re-walk costs
BIG_FILE_WALKS = 2  # as much as a third of its parse, and call chains that deep are rare in such files


def walks_for(source: str) -> int:
    """How many walks a file gets: MAX_WALKS, or BIG_FILE_WALKS past BIG_FILE_LINES lines."""
    return BIG_FILE_WALKS if source.count("\n") > BIG_FILE_LINES else MAX_WALKS


Record = tuple  # (bound, args: tuple[Value, ...], kwargs: dict[str, Value], star, no_grad, fp16)
# `foreign` key of the method calls whose receiver is unknown, by method name (`unit.load_from(w)`):
# records with `bound` None, which tell a method's grad mode and autocast, never its parameters
BY_NAME = "*"


class CallSites:
    """Arguments seen at the calls of the file's own functions, by function node; calls of functions
    other project modules define, by (that module's path, qualified name), in ``foreign``."""

    __slots__ = ("calls", "foreign", "here", "shapes")

    def __init__(self, here: str = "", seeded: dict[int, tuple[cst.FunctionDef, list[Record]]] | None = None,
                 shapes: bool = True) -> None:
        """``here``: this file's path; ``seeded``: calls other files make to this file's functions;
        ``shapes``: whether tensor shapes are facts worth a re-walk (see `shapes_matter`)."""
        self.shapes = shapes
        self.calls: dict[int, tuple[cst.FunctionDef, list[Record]]] = {
            key: (node, list(records)) for key, (node, records) in (seeded or {}).items()}
        self.foreign: dict[str, dict[str, list[Record]]] = {}  # resolved module path -> qualname -> calls
        self.here = here

    def record(self, callee: Value, bound: bool, args: list[Value], kwargs: dict[str, Value],
               star: bool, no_grad: bool = False, fp16: bool = False) -> None:
        target = callee
        if callee.kind == "class" and callee.cls is not None:
            target, bound = callee.cls.find("methods", "__init__") or NOTHING, True  # (a base's, when inherited)
        elif callee.kind == "instance" and callee.cls is not None:
            target = callee.cls.find("methods", "forward") or callee.cls.find("methods", "__call__") or NOTHING
            bound = True
        if target.kind != "function" or not isinstance(target.body, Body):
            return
        node = target.body.node
        if not isinstance(node, cst.FunctionDef):
            return
        if bound and node.decorators and is_static(node):
            bound = False  # `self.pool(h, mask)` of a `@staticmethod`: h is its first parameter
        record = (bound, tuple(args), dict(kwargs), star, no_grad, fp16)
        origin = target.body.origin
        if origin and self.here and origin != self.here:
            if target.body.qualname:
                self.foreign.setdefault(resolved(origin), {}).setdefault(target.body.qualname, []).append(record)
            return
        self.calls.setdefault(id(node), (node, []))[1].append(record)

    def by_name(self, name: str, no_grad: bool, fp16: bool) -> None:
        """A method call whose receiver is unknown: what a project method of that name may be called in."""
        if name and not name.startswith("__"):
            records = self.foreign.setdefault(BY_NAME, {}).setdefault(name, [])
            record = (None, (), {}, True, no_grad, fp16)
            if record not in records:  # at most one per mode: what grad_off() and fp16() ask
                records.append(record)

    def facts(self) -> dict[int, dict[str, Value]]:
        """Per function node, the parameters every recorded call gives an informative value."""
        result: dict[int, dict[str, Value]] = {}
        for key, (node, calls) in self.calls.items():
            params = node.params
            positional = positional_names(params)
            named = {p.name.value for p in params_of(params)}
            defaults = {p.name.value: d for p in params_of(params) if (d := float_default(p)) is not None}
            # `transforms=None` left out by a call: None there, and the body tests it before use, so what
            # it holds when used is what the other calls pass (a train set with transforms, a val set without)
            optional = {p.name.value for p in params_of(params)
                        if isinstance(p.default, cst.Name) and p.default.value == "None"}
            joined: dict[str, Value] = {}
            shapes_passed: dict[str, list] = {}
            differentiated: set[str] = set()
            for bound, args, kwargs, star, *_modes in calls:
                if bound is None:
                    continue  # a call by method name alone (BY_NAME): its arguments are not this method's
                names = positional[1:] if bound else positional
                passed: dict[str, Value] = {}
                if not star:
                    passed.update(zip(names, args, strict=False))
                    passed.update((k, v) for k, v in kwargs.items() if k in named)
                for name in named:
                    if name in optional and name not in passed and not star:
                        continue
                    value = passed.get(name, NOTHING if star else defaults.get(name, NOTHING))
                    joined[name] = join(joined[name], value) if name in joined else value
                    shapes_passed.setdefault(name, []).append(value.shape if not value.kind else None)
                    if value.tracked and not value.kind:
                        differentiated.add(name)
            for name, passed_shapes in shapes_passed.items():
                generic = shape_params.generic_shape(f"{node.name.value}.{name}", passed_shapes)
                if generic is not None and joined[name].shape is None and not joined[name].kind:
                    joined[name] = replace(joined[name], shape=generic)
            for name in differentiated:
                # one call that passes a tensor with history is enough: the body is differentiated there
                if joined[name].tracked is None and not joined[name].kind:
                    joined[name] = joined[name].but(tracked=True)
            # a float parameter is its default (see walker) unless some call gives it another value
            known = {name: value for name, value in joined.items() if informative(value, self.shapes) or (
                name in defaults and value.const != defaults[name].const)}
            if known:
                result[key] = known
        return result


    def passed(self, node: cst.FunctionDef, name: str) -> list[Value]:
        """What each recorded call of the function gives its parameter `name` (unknown ones left out)."""
        entry = self.calls.get(id(node))
        if entry is None:
            return []
        params = node.params
        positional = positional_names(params)
        found = []
        for bound, args, kwargs, star, *_modes in entry[1]:
            names = positional[1:] if bound else positional
            value = kwargs.get(name)
            if value is None and not star and name in names and names.index(name) < len(args):
                value = args[names.index(name)]
            if value is not None and value is not NOTHING:
                found.append(value)
        return found

    def left_out(self, node: cst.FunctionDef, name: str) -> bool:
        """The file calls the function, and none of its calls gives the parameter `name` (by position,
        keyword or `*args`/`**kwargs`): the parameter always has its default."""
        entry = self.calls.get(id(node))
        if entry is None or not entry[1]:
            return False
        positional = positional_names(node.params)
        for bound, args, kwargs, star, *_modes in entry[1]:
            names = positional[1:] if bound else positional
            if star or name in kwargs or (name in names and names.index(name) < len(args)):
                return False
        return True

    def grad_off(self) -> frozenset[int]:
        """Functions every recorded call of which runs with grad mode off (`@torch.no_grad()` callers)."""
        return self._always(4)

    def fp16(self) -> frozenset[int]:
        """Functions every recorded call of which runs under a float16 autocast (a loss module called
        inside the training loop's `with torch.autocast(...)`)."""
        return self._always(5)

    def learned(self) -> tuple[dict[int, dict[str, Value]], frozenset[int], frozenset[int]]:
        """(parameter facts, grad-off functions, float16 functions): what a re-walk binds."""
        return self.facts(), self.grad_off(), self.fp16()

    def _always(self, mode: int) -> frozenset[int]:
        return frozenset(key for key, (_node, calls) in self.calls.items() if all(call[mode] for call in calls))


def shapes_matter(source: str) -> bool:
    """Shapes are followed across calls in training code (a DataLoader, a Dataset, a Lightning step,
    a backward): where TL605's evidence comes from. Elsewhere (library code) they would only add
    re-walks."""
    return any(word in source for word in ("DataLoader", "Dataset", "_step(", "_dataloader(", ".backward("))


def informative(value: Value, shapes: bool = True) -> bool:
    """Something a rule can use: a class instance, a function, a tensor op's result, a probability.

    Plain numbers (``lr=1e-3``, ``eps=1e-8``) are left out: they rarely decide a finding and
    would make most files walk twice."""
    if value.rng is not None:
        return True  # a random generator, or an object built around one
    if value.kind == "either":
        return True  # one of several project model classes
    if value.kind in ("list", "dict"):
        return any(informative(item, shapes) for item in value.items)  # `f((xy, sigma))`: a tuple of tensors
    if value.kind in ("dataloader", "dataset"):
        return bool(value.items)  # what its batches hold
    if value.kind:
        return value.kind in ("instance", "class", "function", "module") and (
            value.cls is not None or value.qual is not None or value.returns is not None)
    if value.op == "const" or value.op is None:
        # plain numbers: not worth a re-walk; a tensor of known rank is (a dataset built from arrays
        # of literal sizes gives batches with the loader's dim)
        return value.tracked is True or value.prob or value.half or value.f32 or (shapes and bool(value.shape))
    return True


def signature(facts: dict[int, dict[str, Value]], grad_off: frozenset[int] = frozenset(),
              fp16: frozenset[int] = frozenset(), shapes: bool = True) -> Any:
    """A cheap comparable form of the facts: did a re-walk learn anything new?

    A class is named by where it is defined, not by its object: each walk builds its classes anew,
    and an identity here would make every file whose calls pass an instance walk the maximum."""
    return sorted(grad_off), sorted(fp16), sorted(
        (key, name, v.kind, v.op, v.prob, v.zero, v.tracked, v.lo, v.hi, v.qual, _class_key(v.cls), v.desc,
         v.rng is not None, v.shape if shapes else None, _shape_key(v) if shapes else None,
         tuple((i.op, i.tracked, i.prob, i.zero, i.shape if shapes else None) for i in v.items)
         if v.kind in ("list", "dict") else ())
        for key, params in facts.items() for name, v in params.items())


def _shape_key(value: Value) -> tuple | None:
    """The shapes a DataLoader's samples have, or a model's forward returns: known only after the
    walk of its dataset or forward with facts, so a change asks for another walk."""
    if value.kind == "instance" and value.cls is not None:
        result = value.cls.call_result()
        return tuple(item.shape for item in result.items) if result.kind == "list" else result.shape
    if value.kind != "dataloader" or not value.items:
        return None
    sample = batches.sample_of(value.items[0])
    return tuple(item.shape for item in sample.items) if sample.kind == "list" else (sample.shape,)


def _class_key(info) -> tuple | None:
    return None if info is None else (info.module, info.name, tuple(info.bases))


def qualified_functions(module: cst.Module) -> dict[str, cst.FunctionDef]:
    """Module-level functions and the methods of module-level classes, by qualified name."""
    found: dict[str, cst.FunctionDef] = {}
    for statement in module.body:
        if isinstance(statement, cst.FunctionDef):
            found[statement.name.value] = statement
        elif isinstance(statement, cst.ClassDef) and isinstance(statement.body, cst.IndentedBlock):
            for member in statement.body.body:
                if isinstance(member, cst.FunctionDef):
                    found[f"{statement.name.value}.{member.name.value}"] = member
    return found
