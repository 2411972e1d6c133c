"""Checkpoints: which file a `torch.save` writes and what it holds; what a `torch.load` reads back.

A saved object is described by the objects in it that PyTorch's weights-only unpickler (the
`torch.load` default since 2.6) refuses: anything but tensors, primitives and plain containers,
such as an `argparse.Namespace`, a whole `nn.Module`, an optimizer object or an instance of a
project class. Only what the interpreter knows counts: an unknown value is not one of them.
A file is named by its path expression; `f` of `with open(path, "wb") as f` names `path`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import libcst as cst

from torchlint.static.facts.values import Value
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.expressions import string_key
from torchlint.static.interpret.frames import params_of

SAVES = frozenset({"torch.save", "torch.serialization.save"})
LOADS = frozenset({"torch.load", "torch.serialization.load"})
# objects the interpreter knows by kind -> what has a state_dict() to save instead ("": nothing)
_OBJECT_KINDS = {"optimizer": "optimizer", "scheduler": "scheduler", "scaler": "GradScaler", "dataloader": ""}


@dataclass(frozen=True)
class Refused:
    """An object the weights-only unpickler refuses: how to name it, and its class."""

    desc: str  # "an argparse.Namespace"
    type: str  # "argparse.Namespace", "Net": what add_safe_globals would need
    stateful: str = ""  # "model", "optimizer"...: an object whose state_dict() is what to save instead


@dataclass
class Saved:
    """One `torch.save(obj, f)` call."""

    path: str  # the file's key (see file_key)
    literal: bool  # the path is a string literal: comparable across modules
    refused: tuple[Refused, ...]  # the objects in it the weights-only unpickler refuses
    keys: dict[str, Refused]  # a saved dict: key -> the refused object under it
    all_keys: frozenset[str] | None  # every key of a saved dict literal; None: not a dict, or unknown keys
    whole: bool  # the object saved is not a dict literal (a model, a list...)
    call: CallInfo | None = None  # in this file
    where: str = ""  # "utils.py:12": a save in another module of the project


def file_key(ctx: FileContext, node: cst.CSTNode | None) -> str:
    """The path expression a file argument names, without whitespace (`f` from `open(path) as f` is `path`)."""
    value = ctx.value(node)
    if value.kind == "file" and isinstance(value.node, cst.Call) and value.node.args:
        return ctx.shape(value.node.args[0].value)
    return ctx.shape(node)


_TAIL_SPLIT = re.compile(r"[*}/\\]")


def name_tails(ctx: FileContext, call: CallInfo, node: cst.CSTNode | None) -> set[str]:
    """The fixed ends of the file names a path expression can spell (`"--checkpoint_kg.pt"` for
    `args.dir + "/{m}--{t}--checkpoint_kg.pt"` or `glob("*--checkpoint_kg.pt")`), also through the
    assignments of a name in the same function. Only distinctive ends count (8+ characters with
    an extension), so `.pt` alone never ties two files together."""
    if node is None:
        return set()
    expressions = [node]
    names = _names_in(node)
    if names:  # `found[-1]` of `found = glob(...)`, `path.format(step=s)` of `path = d + "..."`
        function = enclosing_function(ctx, call)
        finder = _Assignments(names)
        (function or ctx.module).visit(finder)
        expressions.extend(finder.values)
        if function is not None:  # `os.path.join(path, model_filename)`: what the parameter is given
            assigned = {name for value in finder.values for name in _names_in(value)}
            expressions.extend(_arguments_for(ctx, function, names | assigned))
    tails = set()
    for expression in expressions:
        finder = _Strings()
        expression.visit(finder)
        for text in finder.texts:
            tail = _TAIL_SPLIT.split(text)[-1]
            if len(tail) >= 8 and "." in tail:
                tails.add(tail)
    return tails


def _names_in(node: cst.CSTNode) -> set[str]:
    names = _Names()
    node.visit(names)
    return names.found


def _arguments_for(ctx: FileContext, function: cst.FunctionDef, names: set[str]) -> list[cst.BaseExpression]:
    """For the parameters of ``function`` among ``names``: their defaults, and the arguments this
    file's calls of the function pass them (`trainer.save(d, model_filename="model.pt")`)."""
    params = params_of(function.params)
    wanted = {p.name.value: (index, p) for index, p in enumerate(params) if p.name.value in names}
    if not wanted:
        return []
    found = [p.default for _, p in wanted.values() if p.default is not None]
    for other in ctx.calls.values():
        if getattr(getattr(other.callee, "body", None), "node", None) is function:
            found.extend(a for a in (other.param(index, name) for name, (index, _) in wanted.items()) if a is not None)
    return found


class _Names(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.found.add(node.value)


class _Assignments(cst.CSTVisitor):
    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.values: list[cst.BaseExpression] = []

    def visit_Assign(self, node: cst.Assign) -> None:
        if any(isinstance(t.target, cst.Name) and t.target.value in self.names for t in node.targets):
            self.values.append(node.value)


class _Strings(cst.CSTVisitor):
    def __init__(self) -> None:
        self.texts: list[str] = []

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        self.texts.append(node.raw_value)

    def visit_FormattedString(self, node: cst.FormattedString) -> bool:
        if node.parts and isinstance(node.parts[-1], cst.FormattedStringText):
            self.texts.append(node.parts[-1].value)  # only the text after the last placeholder is an end
        return False


def refused(value: Value, depth: int = 0) -> list[Refused]:
    """The objects in a value that the weights-only unpickler refuses (containers are searched)."""
    kind = value.kind
    if kind == "namespace":
        return [Refused("an argparse.Namespace", "argparse.Namespace")]
    if kind == "module":
        return [Refused(f"a whole {value.qual} module", value.qual or "torch.nn.Module", "model")]
    if kind == "instance" and value.cls is not None:
        name = value.cls.name
        if value.cls.is_module:
            return [Refused(f"a whole `{name}` model (an nn.Module object)", name, "model")]
        return [Refused(f"a `{name}` object", name)]
    if kind in _OBJECT_KINDS and value.qual:
        return [Refused(f"a {value.qual} object", value.qual, _OBJECT_KINDS[kind])]
    if not kind and value.qual == "numpy":
        return [Refused("numpy values (a numpy array or scalar such as np.mean(...))", "numpy.core.multiarray.scalar")]
    if kind in ("dict", "list") and depth < 4:
        return [found for item in value.items for found in refused(item, depth + 1)]
    return []


def enclosing_function(ctx: FileContext, call: CallInfo) -> cst.FunctionDef | None:
    """The first function (in file order) whose log holds the call; the map is built once per walk."""
    owners = ctx.memo.get("enclosing-function")
    if owners is None:
        owners = ctx.memo["enclosing-function"] = {}
        for body in ctx.functions:
            for entry in body.walk(expand=False):
                owners.setdefault(id(entry), body.node)
    return owners.get(id(call))


def _passed(ctx: FileContext, node: cst.CSTNode, function: cst.FunctionDef | None) -> list[Value]:
    """What an expression holds: its value, or for a parameter the values the file's calls pass it."""
    value = ctx.value(node)
    if value.kind or function is None or ctx.call_sites is None or not isinstance(node, cst.Name):
        return [value]
    if node.value not in {p.name.value for p in params_of(function.params)}:
        return [value]
    return ctx.call_sites.passed(function, node.value) or [value]


def _describe(ctx: FileContext, call: CallInfo) -> Saved | None:
    obj, target = call.param(0, "obj"), call.param(1, "f")
    if obj is None or target is None:
        return None
    function = enclosing_function(ctx, call) if ctx.call_sites is not None else None
    found: list[Refused] = []
    keys: dict[str, Refused] = {}
    all_keys: set[str] | None = set()
    whole = False
    for value in _passed(ctx, obj, function):
        if value.kind != "dict":
            found.extend(refused(value))
            whole, all_keys = True, None
            continue
        if value.node is None or None in value.keys:  # dicts joined from branches, `**other`: keys unknown
            all_keys = None
        elif all_keys is not None:
            all_keys.update(value.keys)
        # a parameter of this function named in the literal holds what the file's calls pass it
        elements = value.node.elements if isinstance(value.node, cst.Dict) and value is ctx.value(obj) else ()
        for index, (key, item) in enumerate(zip(value.keys, value.items, strict=True)):
            held = _passed(ctx, elements[index].value, function) if index < len(elements) and not item.kind \
                else [item]
            for one in (r for v in held for r in refused(v)):
                found.append(one)
                if key is not None:
                    keys.setdefault(key, one)
    return Saved(file_key(ctx, target), isinstance(target, cst.SimpleString), tuple(dict.fromkeys(found)), keys,
                 frozenset(all_keys) if all_keys is not None and not whole else None, whole, call)


def saves(ctx: FileContext) -> list[Saved]:
    """Every `torch.save(obj, f)` of the file, computed once."""
    found = ctx.memo.get("saves")
    if found is None:
        found = [s for s in (_describe(ctx, c) for c in ctx.calls.values() if c.qual in SAVES) if s is not None]
        ctx.memo["saves"] = found
    return found


def project_saves(ctx: FileContext) -> list[Saved]:
    """Saves of refused objects in the project modules this file imports (from their summaries)."""
    if ctx.project is None or ctx.file is None:
        return []
    own = str(Path(ctx.file).resolve())
    found = []
    for path in ctx.deps:
        if path == own or not _mentions_save(path):
            continue  # a module that never writes "save" has no torch.save: no need to summarise it
        summary = ctx.project.summary(Path(path))
        if summary is not None:
            found.extend(summary.checkpoints)
    return found


def _mentions_save(path: str) -> bool:
    """Whether the file's text contains "save" (as `summarise` asks before looking for saves)."""
    try:
        stat = os.stat(path)
    except OSError:
        return True  # let the summary say what it can
    return _text_mentions_save(path, stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=4096)
def _text_mentions_save(path: str, mtime_ns: int, size: int) -> bool:
    try:
        return b"save" in Path(path).read_bytes()
    except OSError:
        return True


def summarise(ctx: FileContext, module: cst.Module, path: Path) -> tuple[Saved, ...]:
    """The saves of refused objects of a module being summarised, each with its position."""
    from torchlint.static.locate import locate  # positions: only for modules with such a save

    found = [s for s in saves(ctx) if s.refused]
    if not found:
        return ()
    spans = locate(module, [s.call.node for s in found])
    name = os.path.basename(path)
    for saved in found:
        span = spans.get(id(saved.call.node))
        saved.where = f"{name}:{span[0]}" if span else name
        saved.call = None  # the summary keeps no syntax tree alive
    return tuple(found)


@dataclass
class Reads:
    """How the code uses what a `torch.load` returns, and what the load runs inside."""

    keys: set[str]  # `state["args"]`, `state.get("args")`
    state_dict: bool  # handed straight to `load_state_dict`: the file holds a state dict
    state_dict_keys: set[str]  # `model.load_state_dict(state["model"])`: those keys hold state dicts
    enclosing: list[cst.CSTNode]  # the statements and blocks around the load, innermost first


def reads(ctx: FileContext, load: CallInfo) -> Reads:
    """The string keys read from the load's result, directly or through a name it is assigned to,
    in the function the load is in."""
    scope = enclosing_function(ctx, load) or ctx.module
    node = load.node
    names: set[str] = set()
    parents: dict[int, cst.CSTNode] = {}
    subscripts: list[tuple[cst.Subscript, str]] = []
    calls: list[cst.Call] = []
    stack: list[cst.CSTNode] = [scope]
    while stack:
        item = stack.pop()
        if isinstance(item, (cst.Assign, cst.AnnAssign)) and item.value is node:
            targets = [t.target for t in item.targets] if isinstance(item, cst.Assign) else [item.target]
            names.update(t.value for t in targets if isinstance(t, cst.Name))
        elif isinstance(item, cst.Subscript) and len(item.slice) == 1 and isinstance(item.slice[0].slice, cst.Index):
            key = string_key(item.slice[0].slice.value)
            if key is not None:
                subscripts.append((item, key))
        elif isinstance(item, cst.Call) and isinstance(item.func, cst.Attribute):
            calls.append(item)
        for child in item.children:
            parents[id(child)] = item
            stack.append(child)

    def is_result(expression) -> bool:
        return expression is node or (isinstance(expression, cst.Name) and expression.value in names)

    keyed = {id(sub): key for sub, key in subscripts if is_result(sub.value)}
    use = Reads(set(keyed.values()), False, set(), [])
    for call in calls:
        attr = call.func.attr.value
        if attr in ("get", "pop") and is_result(call.func.value) and call.args:
            key = string_key(call.args[0].value)
            if key is not None:
                use.keys.add(key)
        elif attr == "load_state_dict" and call.args:
            given = call.args[0].value
            use.state_dict = use.state_dict or is_result(given)
            if id(given) in keyed:
                use.state_dict_keys.add(keyed[id(given)])
    parent = parents.get(id(node))
    while parent is not None:
        use.enclosing.append(parent)
        parent = parents.get(id(parent))
    return use


def allow_listed(ctx: FileContext) -> set[str] | None:
    """Class names the file allow-lists with `torch.serialization.add_safe_globals([...])`; None when
    a list is not written out (it may hold anything)."""
    names: set[str] = set()
    for call in ctx.calls.values():
        if call.qual != "torch.serialization.add_safe_globals":
            continue
        listed = call.param(0, "safe_globals")
        if not isinstance(listed, (cst.List, cst.Tuple, cst.Set)):
            return None
        for element in listed.elements:
            entry = element.value
            if isinstance(entry, cst.Tuple) and entry.elements:  # (cls, "module.Name")
                entry = entry.elements[0].value
            if not isinstance(entry, (cst.Name, cst.Attribute)):
                return None
            names.add(ctx.shape(entry).rsplit(".", 1)[-1])
    return names
