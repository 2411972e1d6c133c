"""Fingerprints of a module summary's facts: what an importer can see, without syntax trees.

The findings cache records, for every project module a file's analysis read, a short fingerprint
per exported name. When that module's text changes, its summary is computed again and compared name
by name: an edit that leaves every name the importers saw with the same facts (a comment, a new
helper, a changed function body whose results are the same) does not re-analyse the importers.
"""

from __future__ import annotations

import hashlib

import libcst as cst

from torchlint.static.facts.values import Value

_SCALARS = ("kind", "op", "lo", "hi", "zero", "prob", "half", "unbounded", "shifted", "tracked", "const",
            "eps", "qual", "grad_off", "workers", "checked")
MAX_DEPTH = 4
LOADERS_KEY = "<DataLoader>"  # the DataLoaders it builds: over which dataset classes, with how many workers
CALLS_KEY = "<calls>"  # the calls it makes to other project modules' functions, and their argument facts
FP16_KEY = "<float16>"  # it runs models in float16 (mixed_precision.fp16_evidence)
TRAINS_KEY = "<trains>"  # its text differentiates (grad_mode.TRAINS): its importers' programs train
SAVES_KEY = "<torch.save>"  # not a Python name: the module's checkpoint saves, as importers see them


def name_fingerprints(env: dict[str, Value]) -> dict[str, str]:
    """Exported name -> 12 hex digits of its facts."""
    return {name: _digest(_render(value, MAX_DEPTH, set())) for name, value in env.items()}


def saves_fingerprint(saves) -> str:
    """The module's saves of refused objects (checkpoints.Saved), as TL702 reads them elsewhere."""
    return _digest(";".join(
        f"{s.path}:{s.literal}:{s.whole}:{sorted(s.all_keys or ())}:"
        f"{[(r.desc, r.type) for r in s.refused]}:{sorted((k, r.type) for k, r in s.keys.items())}"
        for s in saves))


def loaders_fingerprint(uses) -> str:
    """The DataLoaders a module builds (loaders.LoaderUse), as TL504 reads them from the dataset's file."""
    return _digest(";".join(
        f"{[getattr(c, 'name', '') for c in u.datasets]}:{u.workers}:{u.seeded}:{u.persistent}" for u in uses))


def calls_fingerprint(calls_out: dict) -> str:
    """What a module passes to other modules' functions (callsites.Record per qualified name)."""
    return _digest(";".join(
        f"{module}:{qualname}:" + "|".join(
            f"{bound}{star}{modes}:{','.join(_render(a, 2, set()) for a in args)}:"
            f"{','.join(f'{k}={_render(v, 2, set())}' for k, v in sorted(kwargs.items()))}"
            for bound, args, kwargs, star, *modes in records)
        for module, functions in sorted(calls_out.items()) for qualname, records in sorted(functions.items())))


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


def _render(value: Value | None, depth: int, seen: set[int]) -> str:
    if value is None:
        return "-"
    parts = [repr(getattr(value, field)) for field in _SCALARS]
    if depth <= 0:
        return "(" + ",".join(parts) + ")"
    parts.append(_render(value.returns, depth - 1, seen) if value.returns is not None else "")
    parts.extend(_render(item, depth - 1, seen) for item in value.items)
    cls = value.cls
    if cls is not None and id(cls) not in seen:
        seen.add(id(cls))
        parts.append(f"class {getattr(cls, 'name', '')}{getattr(cls, 'bases', '')}")
        for name in sorted(getattr(cls, "attrs", {})):
            parts.append(f"a:{name}={_render(cls.attrs[name], depth - 1, seen)}")
        for name in sorted(getattr(cls, "methods", {})):
            parts.append(f"m:{name}={_render(cls.methods[name], depth - 1, seen)}")
    if value.body is not None:
        parts.append(_body(value.body, depth - 1))
    return "(" + ",".join(parts) + ")"


def _body(body, depth: int) -> str:
    """What a function does, as the rules read it: its calls (with literal keyword values), marks and loops."""
    scope = body.scope
    out = [f"{body.kind}:{scope.no_grad}:{scope.init}:{scope.debug}:{len(body.entries)}"]
    for entry in body.entries:
        kind = type(entry).__name__
        if kind == "Body":
            out.append(_body(entry, depth - 1) if depth > 0 else "loop")
        elif kind == "Mark":
            out.append(f"mark:{entry.kind}:{entry.name}:{_expression(getattr(entry.node, 'target', None))}:"
                       f"{_expression(entry.value)}")
        else:  # CallInfo
            kwargs = ",".join(f"{k}={_expression(v)}" for k, v in sorted(entry.kwargs.items()))
            out.append(f"call:{entry.qual}:{entry.form}:{len(entry.args)}:{kwargs}:"
                       f"{_expression(entry.receiver)}:{','.join(_expression(a) for a in entry.args)}")
    return "[" + ";".join(out) + "]"


def _expression(node) -> str:
    """Names, attributes, subscripts and literals spelled out; anything else by its type (cheap: no codegen)."""
    if node is None:
        return ""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString)):
        return node.value
    if isinstance(node, cst.Attribute):
        return _expression(node.value) + "." + node.attr.value
    if isinstance(node, cst.Subscript):
        return _expression(node.value) + "[]"
    if isinstance(node, cst.Call):
        return _expression(node.func) + "()"
    if isinstance(node, cst.BinaryOperation):
        return f"({_expression(node.left)}{type(node.operator).__name__}{_expression(node.right)})"
    if isinstance(node, cst.UnaryOperation):
        return type(node.operator).__name__ + _expression(node.expression)
    return type(node).__name__
